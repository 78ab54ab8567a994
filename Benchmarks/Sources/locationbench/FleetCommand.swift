import Foundation
import LocationBenchmarks

// Measures a fleet of locationd processes reporting to one broker. Run in release mode:
//   swift run -c release locationbench fleet [--devices N] [--seconds N] [--speed N]

/// `locationbench fleet`.
enum FleetCommand {
    static func run(_ arguments: [String]) async throws {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(
                """
                usage: locationbench fleet [--devices N] [--seconds N] [--speed N]

                Starts N locationd processes (default 100), each replaying a track of its own of --seconds
                (default 60) at --speed times real time (default 10) into one persistent mosquitto on loopback
                through its OwnTracks uplink; the broker is stopped for 3 s halfway. Counts, per device, the
                distinct fix times a QoS 1 subscriber received, and reports the loss after de-duplication,
                the repeats, the arrival rate, and CPU and memory per locationd. Needs mosquitto and
                mosquitto-clients. Build with -c release.
                """)
            exit(0)
        }
        let options = WholeNumberOption(command: "fleet", arguments: arguments, maximum: 100_000)
        let devices = options.value("--devices", default: 100), seconds = options.value("--seconds", default: 60)
        let speed = options.value("--speed", default: 10)
        guard let result = try await FleetBenchmark.run(devices: devices, seconds: seconds, speed: speed) else {
            FileHandle.standardError.write(Data("locationbench fleet: needs locationd built beside it, mosquitto and mosquitto-clients\n".utf8))
            exit(69)
        }
        let mib = 1_048_576.0
        print("fleet: \(result.devices) locationd, \(result.fixesPerDevice) fixes each at \(result.speed)× real time, one mosquitto on loopback, stopped \(Int(result.outage)) s halfway")
        print("  lost after de-duplication by (device, fix time): \(result.lost) of \(result.expected); repeated: \(result.repeated)")
        print(String(format: "  arrivals: %.0f distinct fixes/s over %.1f s, start to last arrival (outage included)", result.arrivalRate, result.seconds))
        print(String(format: "  per locationd: %.2f s CPU over the run (%.1f µs a fix), RSS %.1f MiB, PSS %.1f MiB",
                     result.cpuSecondsPerDevice, result.cpuSecondsPerDevice / Double(result.fixesPerDevice) * 1e6,
                     result.rssPerDevice / mib, result.pssPerDevice / mib))
        print(String(format: "  mosquitto: %.2f s CPU over the run, RSS %.1f MiB at the end", result.brokerCPUSeconds, result.brokerRSS / mib))
    }
}
