import Foundation
import LocationBenchmarks

// What pausesWhenStationary saves while parked. Run in release mode:
//   swift run -c release locationbench motion [--seconds N]

/// `locationbench motion`.
enum MotionCommand {
    static func run(_ arguments: [String]) async throws {
        if arguments.contains("--help") || arguments.contains("-h") {
            print(
                """
                usage: locationbench motion [--seconds N]

                A LocationManager on a real gpsd (gpsfake replaying a parked receiver at 10 Hz, kept running by
                gpspipe), stationary detection on: N seconds (default 120) with the receiver kept running, then
                N seconds with pausesWhenStationary, each measured once the detector has said stationary. Prints
                CPU seconds of this process, gpsd messages read and fixes delivered, per minute. Needs gpsd,
                gpsfake and gpspipe. Build with -c release.
                """)
            exit(0)
        }
        let options = WholeNumberOption(command: "motion", arguments: arguments)
        let seconds = Double(options.value("--seconds", default: 120))
        print("parked at 10 Hz, stationary detection on (per minute, over \(Int(seconds)) s each)")
        let result = try await MotionBenchmark.run(seconds: seconds)
        print("                          CPU s/min   gpsd messages/min   fixes/min")
        for (name, phase) in [("receiver kept running", result.running), ("pausesWhenStationary", result.paused)] {
            print(String(format: "  %-22@ %9.3f   %17.0f   %9.1f", name as NSString, phase.cpuSecondsPerMinute, phase.messagesPerMinute, phase.fixesPerMinute))
        }
        print(String(format: "  stationary after %.0f s of feed", result.secondsToStationary))
    }
}
