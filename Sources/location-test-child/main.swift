// location-test-child: what this package's tests run in a child process, built beside the test runner.
//
//   location-test-child --read FILE                stream FILE through GPXReader, print every point and a
//                                                  JSON summary with the read's own peak RSS (GPXReadProbe);
//                                                  the hostile-GPX tests, so a crash or a runaway read
//                                                  cannot take the test run down
//   location-test-child --read-into-memory FILE    the same, with FILE read whole into memory first
//   location-test-child --append-journal-and-wait JOURNAL LOCATIONS.json
//                                                  appends the locations to the journal one by one, prints
//                                                  "appended N" and waits to be killed (LocationJournalTests:
//                                                  a process that dies with its journal open)
//   location-test-child --locationd-app SOCKET APP JOURNAL [--reduced-interval SEC] [--start-suspended]
//                                                  an app whose LocationManager runs through locationd
//                                                  (DaemonLocationSource), holding into JOURNAL: prints each
//                                                  delegate event as a JSON line, takes a lifecycle state per
//                                                  line on stdin ("held" prints the held count, "quit" ends
//                                                  it), and prints "ready" once updating; the multi-app tests
//                                                  kill it with kill -9 while suspended
// Not installed and not a product.
import Foundation
import LocationCore
import LocationControl
import LocationDevSupport

#if canImport(Glibc)
    import Glibc
#endif

func fail(_ message: String, status: Int32 = 64) -> Never {
    FileHandle.standardError.write(Data("location-test-child: \(message)\n".utf8))
    exit(status)
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "--read", "--read-into-memory":
    guard arguments.count == 2 else { fail("usage: location-test-child \(arguments[0]) FILE") }
    exit(GPXReadProbe.read(arguments[1], intoMemory: arguments[0] == "--read-into-memory"))
case "--append-journal-and-wait":
    guard arguments.count == 3 else { fail("usage: location-test-child --append-journal-and-wait JOURNAL LOCATIONS.json") }
    let journal: LocationJournal
    let count: Int
    do {
        let locations = try JSONDecoder().decode([Location].self, from: Data(contentsOf: URL(fileURLWithPath: arguments[2])))
        journal = try LocationJournal.open(path: arguments[1]).journal
        for location in locations { try journal.append(location) }
        count = locations.count
    } catch {
        fail("\(error)", status: 74)
    }
    // Straight to the descriptor, so nothing waits in a buffer when the signal comes.
    FileHandle.standardOutput.write(Data("appended \(count)\n".utf8))
    // No close, no sync, no exit: the journal stays open until the process is killed.
    withExtendedLifetime(journal) {
        while true { pause() }
    }
case "--locationd-app":
    var options = Array(arguments.dropFirst(4))
    let startSuspended = options.last == "--start-suspended"
    if startSuspended { options.removeLast() }
    guard arguments.count >= 4, options.isEmpty || (options.count == 2 && options[0] == "--reduced-interval"),
        let interval = options.isEmpty ? 60 : Double(options[1])
    else {
        fail("usage: location-test-child --locationd-app SOCKET APP JOURNAL [--reduced-interval SEC] [--start-suspended]")
    }
    LocationdApp.run(
        socket: arguments[1], app: arguments[2], journal: arguments[3], reducedInterval: interval, startSuspended: startSuspended)
default:
    fail("usage: location-test-child --read FILE | --read-into-memory FILE | --append-journal-and-wait JOURNAL LOCATIONS.json | --locationd-app SOCKET APP JOURNAL")
}
