import Foundation
import Testing

@testable import LocationGPSD

#if canImport(Glibc)
    import Glibc
#endif

/// libgps writes its WATCH requests with a plain `write`; one to a gpsd that has gone away raises SIGPIPE,
/// which by default kills the whole process: the host app, for a library.
@Suite("gpsd worker: a write to a gpsd that went away never kills the process")
struct BrokenPipeTests {
    @Test("with SIGPIPE at its default, a write from the gpsd worker's kind of thread to a closed socket fails with EPIPE and the process lives")
    func brokenPipeIsAnErrorNotADeath() async throws {
        let previous = signal(SIGPIPE, SIG_DFL)
        defer { signal(SIGPIPE, previous) }
        var pair: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0)
        close(pair[1])
        let writer = pair[0]
        let outcome = await withCheckedContinuation { (continuation: CheckedContinuation<(Bool, Int, Int32), Never>) in
            let thread = Thread {
                GPSDStreamWorker.blockBrokenPipeSignal()
                var byte: UInt8 = 0x0A
                let written = write(writer, &byte, 1)
                continuation.resume(returning: (GPSDStreamWorker.isBrokenPipeSignalBlocked, written, errno))
            }
            thread.start()
        }
        close(writer)
        #expect(outcome.0, "the worker's threads block SIGPIPE")
        #expect(outcome.1 == -1 && outcome.2 == EPIPE)
    }
}
