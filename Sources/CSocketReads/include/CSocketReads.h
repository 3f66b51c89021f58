#ifndef OUTLETD_CSOCKETREADS_H
#define OUTLETD_CSOCKETREADS_H
// Buffered reads of one socket per thread, beneath libmosquitto (docs/PERFORMANCE.md, "Socket reads").
//
// libmosquitto reads each packet with three or four read(2) calls: the fixed header's first byte, its
// remaining length a byte at a time, then the body. Through a backlog that is four system calls per reading,
// the largest single cost of outletd's receive path. It has no hook for its reads, but it makes them through
// the dynamic symbol `read`, which outletd defines (this target): on a thread that tracks a socket, a read
// of that socket is served from a 64 KiB buffer, refilled by one read(2) when empty; every other read goes
// straight to the C library's. Bytes come out in the order they arrived and none is held back: a read
// returns what the buffer has (up to `count`), and the socket's EAGAIN, end of file or error only once the
// buffer is empty. Only the MQTT network thread tracks a socket (`NetworkLoop`); it polls the socket only
// while nothing is buffered, and forgets the socket whenever the connection goes away, before its
// descriptor can be reused.

#include <stddef.h>

/// On the calling thread, buffers the reads of `fd` from now on; bytes buffered from another descriptor are
/// dropped. Idempotent for the same descriptor.
void outletd_socket_reads_track(int fd);

/// On the calling thread, stops buffering, drops what is buffered and frees the buffer.
void outletd_socket_reads_forget(void);

/// Bytes the calling thread's buffer holds: read from the socket, not yet handed to a reader.
size_t outletd_socket_reads_buffered(void);

/// How many read(2) calls refilled the calling thread's buffer since it began tracking.
unsigned long long outletd_socket_reads_refills(void);

#endif
