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
            name: "LocationBenchmarks",
            dependencies: ["LocationCore", "LocationGPX", "LocationGPSD", "LocationTesting", "CLibXML2", "GPSDTestSupport"]
        ),
        .executableTarget(
            name: "gpx-bench",
            dependencies: ["LocationBenchmarks"]
        ),
        .executableTarget(
            name: "locationbench",
            dependencies: ["LocationBenchmarks", "LocationCore", "locationctl", "locationd"]
        ),
        .target(
            name: "LocationControl",
            dependencies: ["LocationCore"],
            exclude: ["PROTOCOL.md"]
        ),
        .testTarget(
            name: "LocationControlTests",
            dependencies: ["LocationControl", "LocationCore"]
        ),
        .executableTarget(
            name: "location-bench",
            dependencies: ["LocationBenchmarks"]
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
        // What locationctl and locationd share (configuration, the app session, output, command-line
        // options); internal, not a product.
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
                "LocationCore", "LocationGPX", "LocationGPSD", "LocationService", "LocationControl",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ]
        ),
        .testTarget(
            name: "LocationServiceTests",
            dependencies: [
                "LocationService", "LocationCore", "LocationGPX", "LocationTesting", "LocationControl", "locationctl",
                "locationd",
                "GPSDTestSupport", "parser-fuzz",
            ]
        ),
        .systemLibrary(
            name: "CLibFuzzer",
            path: "Sources/CLibFuzzer"
        ),
        .executableTarget(
            name: "gpx-fuzz",
            dependencies: ["LocationCore", "LocationGPX", "CLibFuzzer"]
        ),
        .executableTarget(
            name: "parser-fuzz",
            dependencies: ["LocationCore", "LocationGPSD", "LocationControl", "LocationService", "CLibFuzzer"]
        ),
        .executableTarget(
            name: "demo-track",
            dependencies: ["LocationCore", "LocationGPX"]
        ),
        .executableTarget(
            name: "gpsd-bench",
            dependencies: ["LocationBenchmarks"]
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
                "parser-fuzz",
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
                "gpx-fuzz",
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
