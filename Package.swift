// swift-tools-version: 6.1

import PackageDescription

let package = Package(
    name: "swift-location",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LocationCore", targets: ["LocationCore"]),
        .library(name: "LocationTesting", targets: ["LocationTesting"]),
        .library(name: "LocationGPSD", targets: ["LocationGPSD"]),
        .library(name: "LocationGPX", targets: ["LocationGPX"]),
        .executable(name: "locationctl", targets: ["locationctl"]),
        .executable(name: "locationd", targets: ["locationd"]),
        .library(name: "LocationControl", targets: ["LocationControl"]),
        // Unstable, hence the underscore: only for this repository's Benchmarks/ and Fuzz/ packages, which
        // cannot see `package` symbols across the package boundary. Not part of the library's API; it
        // changes without notice, and apps never import it.
        .library(name: "_LocationDevSupport", targets: ["LocationDevSupport", "GPSDTestSupport"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.1.1"),
        .package(url: "https://github.com/pointfreeco/swift-concurrency-extras", from: "1.4.3"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0", traits: [.defaults, "YAML"]),
        .package(url: "https://github.com/apple/swift-system", from: "1.8.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        // `swift package generate-documentation`: DocC for the library products (a plugin; nothing of it is
        // built into the products).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        .target(
            name: "LocationCore",
            dependencies: [.product(name: "Logging", package: "swift-log")]
        ),
        .target(
            name: "LocationTesting",
            dependencies: ["LocationCore"]
        ),
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"]), .brew(["libxml2"])]
        ),
        .target(
            name: "LocationGPX",
            dependencies: ["LocationCore", "CLibXML2"]
        ),
        .target(
            name: "GPSDTestSupport",
            dependencies: ["LocationCore"]
        ),
        .testTarget(
            name: "GPSDTestSupportTests",
            dependencies: ["GPSDTestSupport", "LocationCore"]
        ),
        .target(
            name: "LocationControl",
            dependencies: ["LocationCore"]
        ),
        .testTarget(
            name: "LocationControlTests",
            dependencies: ["LocationControl", "LocationCore"]
        ),
        .systemLibrary(
            name: "CGPS",
            pkgConfig: "libgps",
            providers: [.apt(["libgps-dev"])]
        ),
        .target(
            name: "LocationGPSD",
            dependencies: ["LocationCore", "CGPS"]
        ),
        .systemLibrary(
            name: "CMosquitto",
            pkgConfig: "libmosquitto",
            providers: [.apt(["libmosquitto-dev"])]
        ),
        .systemLibrary(
            name: "CCurl",
            pkgConfig: "libcurl",
            providers: [.apt(["libcurl4-openssl-dev"])]
        ),
        // locationd's uplinks: each takes the fixes of its own consumer into a journaled outbox and sends them
        // to a receiver (an MQTT broker through libmosquitto, an HTTP server through libcurl), leaving the
        // outbox only when acknowledged.
        .target(
            name: "LocationUplink",
            dependencies: [
                "LocationCore", "LocationControl", "CMosquitto", "CCurl",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // What locationctl and locationd share (configuration, the app session, output, command-line
        // options); internal, not a product. What only one of them uses lives in its own target (the shared
        // receiver and the socket group in locationd; the daemon socket choice, status text, output checks
        // and the replay's lifecycle in locationctl).
        .target(
            name: "LocationService",
            dependencies: [
                "LocationCore", "LocationGPX", "LocationGPSD", "LocationControl",
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Yams", package: "Yams"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        // The fuzz harnesses of every parser and the probes the benchmarks measure (internal; see the
        // _LocationDevSupport product). The fuzz targets and benchmarks themselves are in Fuzz/ and Benchmarks/.
        .target(
            name: "LocationDevSupport",
            dependencies: [
                "LocationCore", "LocationGPX", "LocationGPSD", "LocationControl", "LocationService", "CLibXML2",
                "GPSDTestSupport",
            ]
        ),
        // What the tests run in a child process: a GPX read under watch, a journal left open when killed.
        .executableTarget(
            name: "location-test-child",
            dependencies: ["LocationCore", "LocationControl", "LocationDevSupport"]
        ),
        .target(
            name: "TrackPlot",
            dependencies: ["LocationCore"]
        ),
        .testTarget(
            name: "TrackPlotTests",
            dependencies: ["TrackPlot", "LocationCore"]
        ),
        .executableTarget(
            name: "locationctl",
            dependencies: [
                "LocationCore", "LocationGPX", "LocationGPSD", "LocationService", "LocationControl", "TrackPlot",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .executableTarget(
            name: "locationd",
            dependencies: [
                "LocationCore", "LocationGPX", "LocationGPSD", "LocationService", "LocationControl", "LocationUplink",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "LocationServiceTests",
            dependencies: [
                "LocationService", "LocationCore", "LocationGPX", "LocationTesting", "LocationControl", "locationctl", "LocationUplink",
                "locationd",
                "GPSDTestSupport", "LocationDevSupport",
            ]
        ),
        .executableTarget(
            name: "demo-track",
            dependencies: ["LocationCore", "LocationGPX"]
        ),
        .testTarget(
            name: "LocationGPSDTests",
            dependencies: ["LocationGPSD", "LocationCore", "LocationTesting", "GPSDTestSupport"]
        ),
        .testTarget(
            name: "LocationCoreTests",
            dependencies: [
                "LocationCore",
                "LocationTesting",
                // Built beside the test runner: LocationJournalTests kills it with a journal open.
                "location-test-child",
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "ConcurrencyExtras", package: "swift-concurrency-extras"),
            ]
        ),
        .testTarget(
            name: "LocationGPXTests",
            dependencies: [
                "LocationGPX",
                "CLibXML2",
                "LocationTesting",
                "LocationDevSupport",
                // Built beside the test runner: the hostile-GPX tests read each risky input in it.
                "location-test-child",
                .product(name: "Clocks", package: "swift-clocks"),
                .product(name: "ConcurrencyExtras", package: "swift-concurrency-extras"),
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
