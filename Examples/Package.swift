// swift-tools-version: 6.1

// Small programs to copy from: each executable is one file that uses the library as a dependent package
// would, through its products only. The package depends on the library by path, so it builds and runs
// against the checkout it sits in (scripts/test builds it, runs each program and its tests).
import PackageDescription

let package = Package(
    name: "swift-location-examples",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-location", path: "..")
    ],
    targets: [
        // A delegate that keeps state under Swift 6: a final class whose state is behind a Mutex.
        .target(
            name: "ExampleSupport",
            dependencies: [.product(name: "LocationCore", package: "swift-location")]
        ),
        // Follows the app lifecycle through a replayed GPX file and prints the held batch it gets back.
        .executableTarget(
            name: "Tracker",
            dependencies: [
                "ExampleSupport",
                .product(name: "LocationCore", package: "swift-location"),
                .product(name: "LocationGPX", package: "swift-location"),
            ]
        ),
        // One position from gpsd, or a clear error and a nonzero exit.
        .executableTarget(
            name: "OnePosition",
            dependencies: [
                .product(name: "LocationCore", package: "swift-location"),
                .product(name: "LocationGPSD", package: "swift-location"),
            ]
        ),
        // How to test your own code: a GPX written in the test, replayed through a LocationManager.
        .testTarget(
            name: "ReplayTests",
            dependencies: [
                "ExampleSupport",
                .product(name: "LocationCore", package: "swift-location"),
                .product(name: "LocationGPX", package: "swift-location"),
                .product(name: "LocationTesting", package: "swift-location"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
