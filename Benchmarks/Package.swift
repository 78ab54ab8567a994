// swift-tools-version: 6.1

// The benchmarks: one executable, locationbench, with every headline figure next to its peers (the default)
// and the focused measurements as subcommands (batch, gpx, gpsd). A package of its own, beside the library,
// so that the library's users and its own `swift build` never build it. Build it in release mode:
//   cd Benchmarks && swift run -c release locationbench --quick
import PackageDescription

let package = Package(
    name: "swift-location-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-location", path: "..")
    ],
    targets: [
        // The measuring code.
        .target(
            name: "LocationBenchmarks",
            dependencies: [
                .product(name: "LocationCore", package: "swift-location"),
                .product(name: "LocationGPX", package: "swift-location"),
                .product(name: "LocationGPSD", package: "swift-location"),
                .product(name: "LocationTesting", package: "swift-location"),
                .product(name: "LocationControl", package: "swift-location"),
                // Internal to this repository: the held batch and journal probes, the libxml2 floor, and
                // the gpsd/gpsfake process helpers the tests use too.
                .product(name: "_LocationDevSupport", package: "swift-location"),
            ]
        ),
        .executableTarget(
            name: "locationbench",
            dependencies: [
                "LocationBenchmarks",
                .product(name: "LocationCore", package: "swift-location"),
                // Measured as whole processes, looked up next to locationbench in the same build folder.
                .product(name: "locationctl", package: "swift-location"),
                .product(name: "locationd", package: "swift-location"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)

for target in package.targets where target.type != .system {
    target.swiftSettings = (target.swiftSettings ?? []) + [
        .enableUpcomingFeature("ExistentialAny"),
        .enableUpcomingFeature("MemberImportVisibility"),
    ]
}
