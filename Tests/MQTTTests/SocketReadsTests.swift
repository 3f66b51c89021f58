import CSocketBuffers
import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The buffered socket reads beneath libmosquitto (CSocketBuffers): what libmosquitto reads is exactly what
/// the socket delivered, in order, nothing held back, and no other descriptor or thread is affected. Each
/// test is synchronous, so it runs on one thread from its start to its end: the tracking is per thread.
@Suite(.serialized) struct SocketReadsTests {
    /// A connected pair of stream sockets; the first end is read, the second written.
    final class Pair {
        let reading: Int32
        let writing: Int32

        init(nonBlocking: Bool = true) throws {
            var ends: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else {
                throw POSIXError(.init(rawValue: errno) ?? .EIO)
            }
            reading = ends[0]
            writing = ends[1]
            if nonBlocking { _ = fcntl(reading, F_SETFL, fcntl(reading, F_GETFL) | O_NONBLOCK) }
        }

        func write(_ bytes: [UInt8]) {
            #expect(Glibc.write(writing, bytes, bytes.count) == bytes.count)
        }

        /// One read(2) through the symbol libmosquitto calls; nil with the errno on failure.
        func read(_ count: Int) -> ([UInt8], Int32)? {
            var buffer = [UInt8](repeating: 0, count: count)
            let got = Glibc.read(reading, &buffer, count)
            if got < 0 { return ([], errno) }
            return (Array(buffer.prefix(got)), 0)
        }

        deinit {
            close(reading)
            close(writing)
        }
    }

    @Test func bytesComeOutInOrderFromOneRefill() throws {
        let pair = try Pair()
        outletd_socket_reads_track(pair.reading)
        defer { outletd_socket_reads_forget() }
        let sent = (0..<3_000).map { UInt8(truncatingIfNeeded: $0 * 7) }
        pair.write(sent)
        var received: [UInt8] = []
        // As libmosquitto reads a packet: one byte, one byte, then the rest.
        while received.count < sent.count {
            for size in [1, 1, 148] {
                received += pair.read(size)?.0 ?? []
            }
        }
        #expect(received == sent)
        #expect(outletd_socket_reads_refills() == 1)
        #expect(outletd_socket_reads_buffered() == 0)
        // Empty buffer, empty socket: the socket's own answer.
        let (bytes, error) = try #require(pair.read(1))
        #expect(bytes.isEmpty && error == EAGAIN)
    }

    @Test func aReadReturnsWhatIsBufferedWithoutWaitingForMore() throws {
        let pair = try Pair(nonBlocking: false)
        outletd_socket_reads_track(pair.reading)
        defer { outletd_socket_reads_forget() }
        pair.write(Array(1...10))
        #expect(pair.read(4)?.0 == [1, 2, 3, 4])
        #expect(outletd_socket_reads_buffered() == 6)
        // A blocking socket would wait here if the read went to it; the buffer answers at once.
        #expect(pair.read(100)?.0 == [5, 6, 7, 8, 9, 10])
        close(pair.writing)
        #expect(pair.read(1)?.0 == [], "end of file, once the buffer is empty")
    }

    @Test func otherDescriptorsAndOtherThreadsReadTheKernelDirectly() throws {
        let tracked = try Pair()
        let other = try Pair()
        outletd_socket_reads_track(tracked.reading)
        defer { outletd_socket_reads_forget() }
        tracked.write([1, 2, 3, 4])
        other.write([9, 8])
        #expect(tracked.read(1)?.0 == [1])
        #expect(other.read(1)?.0 == [9])
        #expect(other.read(5)?.0 == [8])
        // Another thread reads the tracked socket itself: the three bytes this thread buffered are not there.
        tracked.write([5, 6])
        let elsewhere = Mutex<[UInt8]?>(nil)
        let descriptor = tracked.reading
        let thread = Thread {
            var buffer = [UInt8](repeating: 0, count: 10)
            let got = Glibc.read(descriptor, &buffer, 10)
            elsewhere.withLock { $0 = Array(buffer.prefix(max(0, got))) }
        }
        thread.start()
        while elsewhere.withLock({ $0 }) == nil { usleep(1_000) }
        #expect(elsewhere.withLock { $0 } == [5, 6])
        #expect(tracked.read(10)?.0 == [2, 3, 4])
    }

    @Test func forgettingDropsWhatIsBufferedAndTrackingAnotherSocketStartsAfresh() throws {
        let first = try Pair()
        outletd_socket_reads_track(first.reading)
        first.write([1, 2, 3])
        #expect(first.read(1)?.0 == [1])
        outletd_socket_reads_forget()
        #expect(outletd_socket_reads_buffered() == 0)
        #expect(first.read(10)?.1 == EAGAIN, "the dropped bytes are gone; the connection they belonged to is too")

        let second = try Pair()
        outletd_socket_reads_track(first.reading)
        first.write([4])
        #expect(first.read(1)?.0 == [4])
        outletd_socket_reads_track(second.reading)
        second.write([7, 7])
        #expect(second.read(2)?.0 == [7, 7])
        #expect(outletd_socket_reads_refills() == 1)
        outletd_socket_reads_forget()
    }
}
