import Foundation
import Testing

@testable import Observability

@Suite struct ProgressEstimateTests {
    let start = Date(timeIntervalSince1970: 1_000_000)

    @Test func estimatesTimeLeftFromTheRateSoFar() {
        var progress = ProgressEstimate(total: 400, startedAt: start)
        #expect(progress.secondsLeft(at: start.addingTimeInterval(5)) == nil, "no rate before any work")
        #expect(progress.bar(width: 10, at: start) == "[··········]   0%  ETA …")
        progress.advance(to: 100)
        // 100 of 400 in 20 s: 300 left at 5 a second.
        #expect(progress.secondsLeft(at: start.addingTimeInterval(20)) == 60)
        #expect(progress.bar(width: 10, at: start.addingTimeInterval(20)) == "[##········]  25%  ETA 1m00s")
        #expect(progress.line(at: start.addingTimeInterval(20)) == "25% done, about 1m00s left")
        progress.advance(to: 50)
        #expect(progress.done == 100, "progress never goes back")
        progress.advance(to: 10_000)
        #expect(progress.fraction == 1)
        #expect(progress.bar(width: 4, at: start.addingTimeInterval(80)) == "[####] 100%  done")
        #expect(progress.line(at: start.addingTimeInterval(3_725)) == "100% done in 1h02m")
    }

    @Test func logsEveryIntervalAndAtTheEnd() {
        var progress = ProgressEstimate(total: 100, startedAt: start)
        progress.advance(to: 10)
        let due = [4, 10, 15].map { progress.shouldLog(at: start.addingTimeInterval($0)) }
        #expect(due == [false, true, false])
        progress.advance(to: 100)
        let atEnd = progress.shouldLog(at: start.addingTimeInterval(16))
        #expect(atEnd, "the end is always logged")
        #expect(ProgressEstimate(total: 0, startedAt: start).fraction == 1, "nothing to do is done")
    }
}
