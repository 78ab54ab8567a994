// swift-tools-version: 6.0

import PackageDescription

let package = Package(
    name: "swift-location",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "LocationCore", targets: ["LocationCore"]),
        .library(name: "LocationTesting", targets: ["LocationTesting"]),
        .library(name: "LocationGPSD", targets: ["LocationGPSD"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/pointfreeco/swift-clocks", from: "1.1.1"),
        .package(url: "https://github.com/pointfreeco/swift-concurrency-extras", from: "1.4.3"),
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
        .executableTarget(
            name: "location-bench",
            dependencies: ["LocationCore", "LocationTesting"]
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
        .executableTarget(
            name: "gpsd-bench",
            dependencies: ["LocationGPSD", "LocationCore"]
        ),
        .testTarget(
            name: "LocationGPSDTests",
            dependencies: ["LocationGPSD", "LocationCore"]
        ),
        .testTarget(
            name: "LocationCoreTests",
            dependencies: [
                "LocationCore",
                "LocationTesting",
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
