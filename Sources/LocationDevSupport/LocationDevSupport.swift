// LocationDevSupport: internal. What this repository's own Benchmarks/ and Fuzz/ packages (and the tests
// of this package) need from inside the library, exposed as the least public API that does it:
//   - the fuzz harnesses and seeds of every parser (GPXFuzzHarness, FuzzSeeds, ParserFuzzHarness), which
//     check internal parsers of LocationGPSD, LocationCore and the executables' shared LocationService;
//   - a GPX read in a child process, measured (GPXReadProbe), and a journal left open in a process that
//     is then killed (JournalChild), for the tests that start location-test-child;
//   - the held batch and the journal as the benchmarks measure them (HeldBatchProbe, JournalProbe).
// `package` access does not cross packages, hence this module. It is a product only so that those
// packages can depend on it: it is not part of the library's API, has no stability promise, and an app
// should never import it.
