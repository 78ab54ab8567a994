import Foundation
import LocationBenchmarks

// Measures an uplink draining a backlog to a mosquitto broker on loopback. Run in release mode:
//   swift run -c release locationbench uplink [--runs N] [--fixes N] [--window N]

/// `locationbench uplink`.
enum UplinkCommand {
    static func run(_ arguments: [String]) async throws {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(
                """
                usage: locationbench uplink [--runs N] [--fixes N] [--window N]

                Queues N fixes (default 100,000) in a locationd uplink's outbox while no broker listens, then
                starts a mosquitto broker on loopback and locationd again, and times the drain from locationd's
                start to the last fix at a QoS 1 subscriber, with locationd's CPU per fix; beside it, the same
                number of lines through mosquitto_pub -l -q 1 (a shell bridge's publisher). Needs mosquitto
                and mosquitto-clients. Build with -c release.
                """)
            exit(0)
        }
        let options = WholeNumberOption(command: "uplink", arguments: arguments)
        let runs = options.value("--runs", default: 3)
        guard
            let result = try await UplinkDrainBenchmark.run(
                runs: runs, fixes: options.value("--fixes", default: 100_000), window: options.value("--window", default: 10))
        else {
            FileHandle.standardError.write(Data("locationbench uplink: needs locationd built beside it, mosquitto and mosquitto-clients\n".utf8))
            exit(69)
        }
        print("uplink drain of a \(result.fixes)-fix backlog to mosquitto on loopback, QoS 1, window \(result.window) (medians of \(runs) runs)")
        print(String(format: "  locationd, start to last arrival      %9.0f fixes/s   %6.1f µs CPU a fix", result.rate, result.cpuPerFix * 1e6))
        print(String(format: "  mosquitto_pub -l -q 1 (no outbox)     %9.0f lines/s   %6.1f µs CPU a line   %d of %d arrived (fewest of the runs)",
                     result.peerRate, result.peerCPUPerFix * 1e6, result.peerArrived, result.fixes))
    }
}
