// swift-tools-version: 6.1
import PackageDescription

let package = Package(
    name: "syncd",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "syncd", targets: ["syncd"]),
        .library(name: "JSON", targets: ["JSON"]),
        .library(name: "Store", targets: ["Store"]),
        .library(name: "Discovery", targets: ["Discovery"]),
        .library(name: "QRCode", targets: ["QRCode"]),
        .library(name: "SyncAgent", targets: ["SyncAgent"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.34.1"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-async-algorithms.git", from: "1.1.4"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/LebJe/TOMLKit.git", from: "0.6.0"),
    ],
    targets: [
        // C libraries, each wrapped once by the Swift target above it.
        .systemLibrary(name: "CSQLite", path: "Sources/CSQLite"),
        .systemLibrary(name: "CAvahi", path: "Sources/CAvahi"),
        .systemLibrary(name: "CQREncode", path: "Sources/CQREncode"),
        .systemLibrary(name: "CZBar", path: "Sources/CZBar"),
        .systemLibrary(name: "CStb", path: "Sources/CStb"),
        .systemLibrary(name: "CZlib", path: "Sources/CZlib"),
        // glibc's malloc: malloc_trim for the agent.
        .systemLibrary(name: "CMalloc", path: "Sources/CMalloc"),
        .systemLibrary(name: "CPCRE2", path: "Sources/CPCRE2"),
        // Duktape: the JavaScript engine design documents' functions run on, in query server processes.
        .systemLibrary(name: "CDuktape", path: "Sources/CDuktape"),

        // The lock every module's shared state is guarded by (see Locked.swift), and the
        // fan-out of values to AsyncStream subscribers built on it (Broadcast.swift).
        .target(name: "Locking"),

        // The JSON value, parser and serializer: documents and the protocol's bodies, without SQLite.
        .target(name: "JSON"),
        .target(
            name: "Store",
            dependencies: [
                "JSON",
                "CSQLite",
                "CZlib",
                "CPCRE2",
                "Locking",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        .target(
            name: "Discovery",
            dependencies: [
                "CAvahi",
                "Locking",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // Design documents' JavaScript (validate_doc_update, filters, views), run as CouchDB
        // runs it: in query server processes (`syncd query-server`), each bounded in time and memory.
        .target(
            name: "QueryServer",
            dependencies: ["CDuktape", "JSON", "Locking", "Store", .product(name: "Logging", package: "swift-log")],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        // QR codes of invitation URLs, drawn for terminals and image files, and read back from images.
        .target(name: "QRCode", dependencies: ["CQREncode", "CZBar", "CStb"]),
        .target(
            name: "SyncAgent",
            dependencies: [
                "CMalloc",
                "JSON",
                "Locking",
                "Store",
                "Discovery",
                "QRCode",
                "QueryServer",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "AsyncAlgorithms", package: "swift-async-algorithms"),
                .product(name: "TOMLKit", package: "TOMLKit"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        .executableTarget(
            name: "syncd",
            dependencies: [
                "JSON",
                "Locking",
                "QRCode",
                "QueryServer",
                "SyncAgent",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: [.enableUpcomingFeature("MemberImportVisibility")]
        ),
        .executableTarget(
            name: "syncd-bench",
            dependencies: ["JSON", "Store", "SyncAgent", "CSQLite", "Discovery", "TestBed", "Locking",
                           .product(name: "AsyncHTTPClient", package: "async-http-client"),
                           .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOHTTP1", package: "swift-nio")],
            path: "Benchmarks"
        ),

        .executableTarget(name: "store-crash-writer", dependencies: ["JSON", "Store"], path: "Tests/StoreCrashWriter"),
        // ICU's root collator, the oracle CollationICUTests compares Store's collation with (tests only).
        .target(name: "CICU", path: "Tests/CICU", linkerSettings: [.linkedLibrary("icui18n"), .linkedLibrary("icuuc")]),
        .testTarget(name: "JSONTests", dependencies: ["JSON"]),
        .testTarget(name: "LockingTests", dependencies: ["Locking"]),
        .testTarget(name: "QueryServerTests", dependencies: ["JSON", "QueryServer", "Store", "TestBed"]),
        .testTarget(
            name: "StoreTests",
            dependencies: ["JSON", "Store", "CSQLite", "CICU", "Locking", "TestBed", "store-crash-writer", .product(name: "Crypto", package: "swift-crypto")]
        ),
        // Network-namespace hosts with their own avahi-daemons, for discovery tests and benchmarks.
        .target(name: "TestBed", path: "Tests/TestBed"),
        // Also the syncd layer over Discovery: its TXT format, and `syncd browse` and `advertise`.
        .testTarget(name: "DiscoveryTests", dependencies: ["Discovery", "SyncAgent", "TestBed"]),
        .testTarget(name: "QRCodeTests", dependencies: ["QRCode", "TestBed"]),
        .testTarget(
            name: "SyncAgentTests",
            dependencies: [
                "JSON",
                "SyncAgent",
                "Discovery",
                "Locking",
                "QRCode",
                "TestBed",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
