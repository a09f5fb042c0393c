// syncd-bench: benchmarks that print figures. Build everything in release
// mode first (`swift build -c release`), then run `.build/release/syncd-bench NAME`.
import Foundation

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "store":
    try await runStoreBenchmarks(arguments: Array(arguments.dropFirst()))
case "replication":
    try await runReplicationBenchmarks(arguments: Array(arguments.dropFirst()))
case "pairing":
    try await runPairingBenchmarks(arguments: Array(arguments.dropFirst()))
case "listener-memory":
    try await runListenerMemoryBenchmark(arguments: Array(arguments.dropFirst()))
case "listener-flood":
    try await runListenerFloodBenchmark(arguments: Array(arguments.dropFirst()))
case "conflicts":
    try await runConflictBenchmarks(arguments: Array(arguments.dropFirst()))
case "discovery":
    try await runDiscoveryBenchmark()
case "agent":
    try await runAgentBenchmarks(arguments: Array(arguments.dropFirst()))
case "attachments":
    try await runAttachmentBenchmark(arguments: Array(arguments.dropFirst()))
case "views" where arguments.dropFirst().first == "validation":
    try await runViewBenchmarks(arguments: Array(arguments.dropFirst(2)))
case "views":
    try await runViewIndexBenchmark(arguments: Array(arguments.dropFirst(arguments.dropFirst().first == "index" ? 2 : 1)))
case "query" where arguments.dropFirst().first == "scans":
    try await runScanBenchmarks(arguments: Array(arguments.dropFirst(2)))
case "query":
    try await runQueryBenchmarks(arguments: Array(arguments.dropFirst()))
default:
    print("""
        usage: syncd-bench store [--docs N]     bulk load vs plain SQLite, concurrent writes and read latency, changes feed
               syncd-bench replication throughput [--docs N] [--batch-size N]   one-shot pull between two syncd, and the store's bulk load
               syncd-bench replication latency [--samples N]   write on A until readable through B's HTTP API, continuous replication
               syncd-bench replication rss [--docs 1000000]     peak RSS of listener and replicator processes
               syncd-bench replication attachments-rss [--docs 200] [--size 1048576] [--before OLD-SYNCD]
                                                peak RSS of a pull of documents with large attachments
               syncd-bench replication oneshot [--docs 100000] [--rounds 3] [--before OLD-SYNCD]
                                                syncd replicate URL URL between two syncd serve; an older build alternating
               syncd-bench pairing [--runs N] [--docs N]       pairing time; replication over mutual TLS vs plain HTTP
               syncd-bench listener-memory [--databases 10] [--docs 100000] [--idle 5]   serve's RSS as databases are written, and once idle
               syncd-bench listener-flood [--connections 1000] [--addresses 10] [--seconds 60] [--max-pending N]
                                                strangers' stalled TLS handshakes vs a user's GET / and a peer's replication
               syncd-bench conflicts [--leaves N] [--body BYTES]   many conflicting leaves of one document: writes, reads, open_revs
               syncd-bench discovery            advertise-to-appeared and address-change-to-changed times (root: network namespaces)
               syncd-bench agent [--runs N] [--samples N]   syncd agent in the test bed: pairing to first document, following a
                                                peer that moves, write-to-readable latency, 3 x 1,000 convergence, idle CPU/RSS,
                                                a peer stopped for 60 s and a silent 30 s cut (alone: agent gone)
               syncd-bench agent pairing [--runs 10] [--before OLD-SYNCD]   two agents on loopback: syncd pair URL,
                                                then pairing done -> first document; OLD alternating
               syncd-bench agent mesh [--samples 300] [--rounds 1] [--before OLD-SYNCD]
                                                a hub and 3 spokes: write-to-readable latency, 3 x 1,000 convergence
               syncd-bench query [--docs 1000000] [--samples 1000] [--write-docs 100000] [--rounds 3] [--before OLD-SYNCD]
                                                Mango: index build vs bulk load, an indexed _find through syncd serve vs
                                                the same unindexed, writes with 0, 1 and 3 indexes
               syncd-bench query scans [--docs 300000] [--rounds 2] [--scans CORES] [--before OLD-SYNCD]
                                                a document read every 10 ms, alone and beside unindexed _find scans
               syncd-bench views [index] [--docs 1000000] [--samples 1000]
                                                a view built on the first query through syncd serve (docs/s, peak
                                                memory), then 100-row key-range queries, map and group=true: p50, p99
               syncd-bench views validation [--docs 20000] [--rounds 3]
                                                _bulk_docs through syncd serve with one JavaScript validate_doc_update
                                                against none, alternating rounds
               syncd-bench attachments [--sizes 256,1024] [--rounds 1] [--before OLD-SYNCD]
                                                an N MiB attachment PUT on agent A until on paired B
                                                (loopback): seconds, MB/s, peak RSS above idle; curl's GET to /dev/null
                                                and into a file + fsync for scale;
                                                syncd replicate pulling the same
               syncd-bench agent burst [--docs 20000] [--rounds 3] [--before OLD-SYNCD]
                                                a burst on A until all on paired B, beside a one-shot pull of it
               syncd-bench agent soak [--minutes 30] [--rate 50]   three agents writing, editing and deleting
                                                rate docs/s each: RSS and descriptors every minute, identical at the end
               syncd-bench agent group [--hosts 10] [--docs 1000] [--body 0] [--unplug] [--timeline] [--idle 10] [--hold 0]
                                       [--rounds 1] [--before OLD-SYNCD] [--syncd PATH]
                                                hosts each added by one pairing with a random member: until all list
                                                all, docs on each at once until everywhere, idle CPU/RSS, crossings;
                                                --unplug: one host's link down 30 s while the others write
        """)
    exit(arguments.isEmpty ? 0 : 2)
}
