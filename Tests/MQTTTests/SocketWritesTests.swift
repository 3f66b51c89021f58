import CMosquitto
import CSocketBuffers
import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The gathered socket writes beneath libmosquitto (CSocketBuffers): what reaches the socket is exactly what
/// was written, in order, in one write(2) per flush where the socket takes it; nothing jumps ahead of bytes
/// that wait; nothing is gathered outside the window unless bytes wait; no other descriptor or thread is
/// affected. Each test is synchronous, so it runs on one thread from its start to its end: the tracking is
/// per thread.
@Suite(.serialized) struct SocketWritesTests {
    /// A connected pair of non-blocking stream sockets; the first end is written (tracked), the second read.
    final class Pair {
        let writing: Int32
        let reading: Int32

        init(sendBuffer: Int32? = nil) throws {
            var ends: [Int32] = [0, 0]
            guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0 else {
                throw POSIXError(.init(rawValue: errno) ?? .EIO)
            }
            writing = ends[0]
            reading = ends[1]
            for end in ends { _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK) }
            if var size = sendBuffer {
                _ = setsockopt(writing, SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
            }
        }

        /// One write(2) through the symbol libmosquitto calls: what it returned, and errno when negative.
        @discardableResult
        func write(_ bytes: [UInt8]) -> (Int, Int32) {
            let result = Glibc.write(writing, bytes, bytes.count)
            return (result, result < 0 ? errno : 0)
        }

        /// Everything the reading end holds now.
        func drain() -> [UInt8] {
            var received: [UInt8] = []
            var buffer = [UInt8](repeating: 0, count: 65_536)
            while case let got = Glibc.read(reading, &buffer, buffer.count), got > 0 {
                received += buffer.prefix(got)
            }
            return received
        }

        deinit {
            close(writing)
            close(reading)
        }
    }

    /// Stands in for libmosquitto writing a burst's queued packets inside the network thread's window.
    func gathered(_ body: () -> Void) {
        outletd_socket_writes_gather_begin()
        body()
        outletd_socket_writes_gather_end()
    }

    @Test func aBurstOfPUBACKsLeavesInOneWriteInOrder() throws {
        let pair = try Pair()
        outletd_socket_writes_track(pair.writing)
        defer { outletd_socket_writes_forget() }
        var sent: [UInt8] = []
        gathered {
            for id in 1...1_000 {
                let puback: [UInt8] = [0x40, 0x02, UInt8(id >> 8), UInt8(id & 0xff)]
                #expect(pair.write(puback) == (4, 0), "reported written")
                sent += puback
            }
        }
        #expect(pair.drain().isEmpty, "nothing reaches the socket before the flush")
        #expect(outletd_socket_writes_pending() == 4_000)
        #expect(outletd_socket_writes_flush() == 0)
        #expect(outletd_socket_writes_flushes() == 1)
        #expect(pair.drain() == sent)
    }

    @Test func outsideTheWindowWritesGoStraightToTheSocket() throws {
        let pair = try Pair()
        outletd_socket_writes_track(pair.writing)
        defer { outletd_socket_writes_forget() }
        pair.write([1, 2, 3])
        #expect(outletd_socket_writes_pending() == 0)
        #expect(pair.drain() == [1, 2, 3])
        #expect(outletd_socket_writes_flushes() == 0)
    }

    @Test func whatTheSocketRefusesWaitsAndNothingJumpsAheadOfIt() throws {
        let pair = try Pair(sendBuffer: 4_096)
        outletd_socket_writes_track(pair.writing)
        defer { outletd_socket_writes_forget() }
        let first = (0..<60_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        gathered { #expect(pair.write(first).0 == first.count) }
        let waiting = outletd_socket_writes_flush()
        #expect(waiting > 0, "the socket took only part of it")
        #expect(outletd_socket_writes_pending() == waiting)
        // Outside the window, with bytes waiting: queued behind them, not written ahead.
        #expect(pair.write([0xAA, 0xBB]) == (2, 0))
        // Inside it, a packet that does not fit beside what waits: refused, for libmosquitto to keep queued.
        gathered { #expect(pair.write([UInt8](repeating: 0xCC, count: 20_000)) == (-1, EAGAIN)) }
        var received: [UInt8] = []
        while outletd_socket_writes_pending() > 0 {
            received += pair.drain()
            #expect(outletd_socket_writes_flush() >= 0)
        }
        received += pair.drain()
        #expect(received.count == first.count + 2)
        #expect(received == first + [0xAA, 0xBB], "in order, none lost, none twice")
    }

    @Test func closingTheSocketSendsWhatWaitsFirst() throws {
        var ends: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &ends) == 0)
        defer { close(ends[1]) }
        outletd_socket_writes_track(ends[0])
        defer { outletd_socket_writes_forget() }
        // As libmosquitto writes a DISCONNECT and closes the socket within one call.
        gathered {
            #expect(Glibc.write(ends[0], [UInt8]([0xE0, 0x00]), 2) == 2)
            #expect(close(ends[0]) == 0)
        }
        #expect(outletd_socket_writes_pending() == 0)
        var buffer = [UInt8](repeating: 0, count: 8)
        #expect(Glibc.read(ends[1], &buffer, 8) == 2)
        #expect(Array(buffer.prefix(2)) == [0xE0, 0x00])
        #expect(Glibc.read(ends[1], &buffer, 8) == 0, "then end of file: the socket is closed")
    }

    @Test func otherDescriptorsOtherThreadsAndForgottenSocketsAreNotGathered() throws {
        let tracked = try Pair()
        let other = try Pair()
        outletd_socket_writes_track(tracked.writing)
        defer { outletd_socket_writes_forget() }
        gathered {
            other.write([9])
            tracked.write([1])
            // Another thread writes the tracked socket itself, inside this thread's window.
            let descriptor = tracked.writing
            let done = DispatchSemaphore(value: 0)
            let thread = Thread {
                _ = Glibc.write(descriptor, [UInt8]([7, 7]), 2)
                done.signal()
            }
            thread.start()
            done.wait()
        }
        #expect(other.drain() == [9])
        #expect(tracked.drain() == [7, 7], "the other thread's bytes went straight to the socket")
        #expect(outletd_socket_writes_pending() == 1)
        outletd_socket_writes_forget()
        #expect(outletd_socket_writes_pending() == 0, "forgetting drops what waits")
        #expect(tracked.drain().isEmpty)
    }

    /// The wake-up descriptor is found in a real libmosquitto client, and it is the socket pair libmosquitto
    /// writes a byte to for every packet it queues: those bytes stop once it is dropped, and publishing still
    /// succeeds.
    @Test func libmosquittosWakeUpWritesAreFoundAndDropped() throws {
        let stack = try TestStack.shared()
        mosquitto_lib_init()
        let client = try #require(mosquitto_new("socket-writes-\(getpid())", true, nil))
        defer { mosquitto_destroy(client) }
        try #require(mosquitto_connect(client, "127.0.0.1", Int32(stack.mqttPort), 60) == MOSQ_ERR_SUCCESS.rawValue)
        let socket = mosquitto_socket(client)
        let wakeup = outletd_mosquitto_wakeup_descriptor(UnsafeRawPointer(client), socket)
        #expect(wakeup >= 0)
        #expect(outletd_mosquitto_wakeup_descriptor(UnsafeRawPointer(client), socket + 1) == -1, "not that socket")
        // The pair's read end, the struct's second descriptor: how many wake-up bytes it holds.
        let readEnd = UnsafeRawPointer(client).load(fromByteOffset: 4, as: Int32.self)
        func waiting() -> Int32 {
            var count: Int32 = 0
            _ = ioctl(readEnd, UInt(FIONREAD), &count)
            return count
        }
        func publish() -> Int32 {
            mosquitto_publish(client, nil, "outletd-test/socket-writes", 1, "x", 0, false)
        }
        let before = waiting()
        #expect(publish() == MOSQ_ERR_SUCCESS.rawValue)
        #expect(waiting() == before + 1, "one wake-up byte per packet queued")
        outletd_socket_writes_drop_wakeups(wakeup)
        defer { outletd_socket_writes_drop_wakeups(-1) }
        #expect(publish() == MOSQ_ERR_SUCCESS.rawValue)
        #expect(publish() == MOSQ_ERR_SUCCESS.rawValue)
        #expect(waiting() == before + 1, "dropped")
    }
}
