import Foundation
import LocationBenchmarks

// Measures fix → broker latency at 1 Hz and the loss across a broker restart, beside a shell bridge. Run in
// release mode:  swift run -c release locationbench uplink-live [--seconds N] [--outage N]

/// `locationbench uplink-live`.
enum UplinkLiveCommand {
    static func run(_ arguments: [String]) async throws {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(
                """
                usage: locationbench uplink-live [--seconds N] [--outage N]

                A real gpsd reads a receiver paced like a 9600-baud serial line at 1 Hz; locationd's OwnTracks
                uplink and the shell bridge gpspipe -w | jq | mosquitto_pub -l -q 1 publish its fixes to one
                mosquitto on loopback. Measures the time from each fix's last TPV on gpsd's wire to its message
                at a QoS 1 subscriber for N seconds (default 60), then stops the broker for --outage seconds
                (default 5) and counts the fixes that never arrive. Needs gpsd, gpsd-clients, jq, mosquitto
                and mosquitto-clients. Build with -c release.
                """)
            exit(0)
        }
        let options = WholeNumberOption(command: "uplink-live", arguments: arguments)
        let seconds = options.value("--seconds", default: 60), outage = options.value("--outage", default: 5)
        guard let result = try await UplinkLatencyBenchmark.run(seconds: Double(seconds), outage: Double(outage)) else {
            FileHandle.standardError.write(Data("locationbench uplink-live: needs locationd built beside it, gpsd, mosquitto and mosquitto-clients\n".utf8))
            exit(69)
        }
        print("fix on gpsd's wire → message at a QoS 1 subscriber, 1 Hz, mosquitto on loopback; then the broker stopped \(outage) s")
        func line(_ name: String, _ bridge: UplinkLatencyBenchmark.Result.Bridge) {
            let padded = "  " + name.padding(toLength: 36, withPad: " ", startingAt: 0)
            print(padded + String(format: " p50 %7.2f ms  p99 %7.2f ms (%d fixes)  lost %d of %d  CPU %6.1f µs a fix",
                         bridge.p50 / 1e3, bridge.p99 / 1e3, bridge.measured, bridge.lost, bridge.expected,
                         bridge.cpuPerFix * 1e6))
        }
        line("locationd uplink", result.locationd)
        if let shell = result.shell { line("gpspipe -w | jq | mosquitto_pub -l", shell) } else { print("  the shell bridge: gpspipe, jq or mosquitto_pub is not installed") }
    }
}
