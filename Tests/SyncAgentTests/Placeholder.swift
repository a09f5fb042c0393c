// placeholder
import XCTest
final class PlaceholderSyncAgentTests: XCTestCase { func testNothing() {} }
