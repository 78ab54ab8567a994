// locationbench: every headline figure next to its peers, measured in one run. (Being built.)
import LocationBenchmarks

GPXReadChild.runIfRequested(CommandLine.arguments)
