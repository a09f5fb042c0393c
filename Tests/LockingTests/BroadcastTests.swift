import Locking
import Testing

/// The one fan-out: what each subscriber gets, and how its streams end.
@Suite struct BroadcastTests {
    func collect(_ stream: AsyncStream<Int>) async -> [Int] {
        var elements: [Int] = []
        for await element in stream { elements.append(element) }
        return elements
    }

    @Test func eachSubscriberGetsItsReplayThenWhatFollows() async {
        let broadcast = Broadcast<Int>()
        let first = broadcast.subscribe(replaying: [0])
        broadcast.yield(1)
        let second = broadcast.subscribe()
        broadcast.yield(2)
        broadcast.finish()
        #expect(await collect(first) == [0, 1, 2])
        #expect(await collect(second) == [2])
    }

    @Test func aSlowReaderKeepsWhatThePolicySays() async {
        let broadcast = Broadcast<Int>(bufferingPolicy: .bufferingNewest(1))
        let stream = broadcast.subscribe()
        for element in 1...3 { broadcast.yield(element) }
        broadcast.finish()
        #expect(await collect(stream) == [3])
    }

    @Test func afterFinishLaterSubscribersGetTheirReplayAndEnd() async {
        let broadcast = Broadcast<Int>()
        broadcast.finish()
        let late = broadcast.subscribe(replaying: [7])
        broadcast.yield(8)
        #expect(await collect(late) == [7])
    }

    @Test func finishingTheSubscribersLeavesLaterOnesServed() async {
        let broadcast = Broadcast<Int>()
        let early = broadcast.subscribe()
        broadcast.finishSubscribers()
        let late = broadcast.subscribe()
        broadcast.yield(1)
        broadcast.finish()
        #expect(await collect(early) == [])
        #expect(await collect(late) == [1])
    }
}
