// swift-tools-version: 6.1

// The fuzz targets: gpx-fuzz (the GPX reader) and parser-fuzz (gpsd lines, control requests and replies,
// the journal, the state file, the YAML configuration, lifecycle scripts). Their harnesses and seeds are
// in the root package's internal LocationDevSupport, which this package's targets only drive; scripts/fuzz
// builds them with libFuzzer and AddressSanitizer. A package of its own, beside the library, so that the
// library's users and its own `swift build` never build it.
import PackageDescription

let package = Package(
    name: "swift-location-fuzz",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "swift-location", path: "..")
    ],
    targets: [
        // libFuzzer's driver, declared for the mains (linked by -sanitize=fuzzer).
        .systemLibrary(
            name: "CLibFuzzer",
            path: "Sources/CLibFuzzer"
        ),
        .executableTarget(
            name: "gpx-fuzz",
            dependencies: [
                "CLibFuzzer",
                .product(name: "LocationGPX", package: "swift-location"),
                .product(name: "_LocationDevSupport", package: "swift-location"),
            ]
        ),
        .executableTarget(
            name: "parser-fuzz",
            dependencies: [
                "CLibFuzzer",
                .product(name: "_LocationDevSupport", package: "swift-location"),
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
