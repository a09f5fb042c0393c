import SyncAgent
import Testing

/// The waits between attempts: doubling to a ceiling, and spread so that
/// replications that failed together do not come back together.
@Suite struct RetryPolicyTests {
    @Test func waitsDoubleUpToTheCeiling() {
        let policy = RetryPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(60))
        #expect((1...8).map { policy.delay(afterFailures: $0) } == [1, 2, 4, 8, 16, 32, 60, 60].map { .seconds($0) })
    }

    @Test func jitterKeepsEachWaitBetweenHalfAndAllOfItAndSpreadsThem() {
        let policy = RetryPolicy(initialDelay: .seconds(1), maximumDelay: .seconds(60))
        let waits = (0..<100).map { _ in policy.jitteredDelay(afterFailures: 3) }
        #expect(waits.allSatisfy { $0 >= .seconds(2) && $0 <= .seconds(4) })
        #expect(Set(waits).count > 50)
    }
}
