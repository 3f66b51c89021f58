#ifndef OUTLETD_CSOCKETBUFFERS_H
#define OUTLETD_CSOCKETBUFFERS_H
// Buffered reads and gathered writes of one socket per thread, beneath libmosquitto (docs/PERFORMANCE.md,
// "Buffered socket reads beneath libmosquitto", "Gathered socket writes beneath libmosquitto").
//
// libmosquitto has no hook for its socket I/O, but it makes it through the dynamic symbols `read` and
// `write`, which outletd defines (this target), and closes the socket through `close`. On a thread that
// tracks a socket, those calls on that socket go through the functions below; every other call goes
// straight to the C library's. Only the MQTT network thread tracks a socket (`NetworkLoop`), and it forgets
// the socket whenever the connection goes away, before its descriptor can be reused.

#include <stddef.h>

// ---- Reads (socket_reads.c) ----
//
// libmosquitto reads each packet with three or four read(2) calls: the fixed header's first byte, its
// remaining length a byte at a time, then the body. Through a backlog that is four system calls per reading,
// the largest single cost of outletd's receive path. On a thread that tracks a socket, a read of that
// socket is served from a 64 KiB buffer, refilled by one read(2) when empty. Bytes come out in the order
// they arrived and none is held back: a read returns what the buffer has (up to `count`), and the socket's
// EAGAIN, end of file or error only once the buffer is empty. The network thread polls the socket only
// while nothing is buffered.

/// On the calling thread, buffers the reads of `fd` from now on; bytes buffered from another descriptor are
/// dropped. Idempotent for the same descriptor.
void outletd_socket_reads_track(int fd);

/// On the calling thread, stops buffering, drops what is buffered and frees the buffer.
void outletd_socket_reads_forget(void);

/// Bytes the calling thread's buffer holds: read from the socket, not yet handed to a reader.
size_t outletd_socket_reads_buffered(void);

/// How many read(2) calls refilled the calling thread's buffer since it began tracking.
unsigned long long outletd_socket_reads_refills(void);

// ---- Writes (socket_writes.c) ----
//
// libmosquitto writes each queued packet with its own write(2): one system call for every PUBACK, a
// million per million readings. Between `outletd_socket_writes_gather_begin` and `_end`, the calling
// thread's writes to the tracked socket are copied into a 64 KiB buffer and reported written; the network
// thread opens that window around `mosquitto_loop_write` and then sends the burst's PUBACKs with one
// `outletd_socket_writes_flush`. Order is kept: while anything gathered waits (the socket refused it),
// every write to the socket joins the queue behind it, in or out of the window, and the network thread
// polls the socket for writing and flushes again. A write that does not fit while the socket refuses what
// waits fails with EAGAIN, so libmosquitto keeps that packet queued; one larger than the buffer goes to the
// socket directly once nothing waits. Closing the tracked socket first sends what it can of what waits
// (a DISCONNECT is written, then the socket closed, in one libmosquitto call).

/// On the calling thread, gathers writes to `fd` (see above); what waits for another descriptor is dropped.
/// Idempotent for the same descriptor. Without memory for the buffer, writes go to the socket as without it.
void outletd_socket_writes_track(int fd);

/// On the calling thread, stops gathering, drops what waits and frees the buffer.
void outletd_socket_writes_forget(void);

/// Opens and closes the window in which the calling thread's writes to the tracked socket are gathered.
void outletd_socket_writes_gather_begin(void);
void outletd_socket_writes_gather_end(void);

/// Writes what waits to the tracked socket, with as few write(2) calls as it takes, until all is written or
/// the socket refuses more (EAGAIN). Returns the bytes still waiting, or -1 when the socket failed (errno
/// set; what waited is dropped with the connection it belonged to).
long outletd_socket_writes_flush(void);

/// Bytes gathered on the calling thread and not yet written to the socket.
size_t outletd_socket_writes_pending(void);

/// How many write(2) calls were made to send gathered bytes since the calling thread began tracking.
unsigned long long outletd_socket_writes_flushes(void);

// ---- libmosquitto's wake-up writes (socket_writes.c) ----
//
// In threaded mode libmosquitto writes one byte to a socket pair of its own for every packet it queues, to
// wake its own loop (`mosquitto_loop`), a second system call per PUBACK. outletd does not run that loop
// (`NetworkLoop` polls an eventfd of its own), so nothing ever reads the pair: it fills, and every later
// write fails with EAGAIN. The network thread drops those writes instead of making them.

/// On the calling thread, one-byte writes to `fd` are reported written and dropped; -1 stops it.
void outletd_socket_writes_drop_wakeups(int fd);

/// The descriptor libmosquitto writes its wake-up bytes to, for the client `client` (a `struct mosquitto *`)
/// connected on `connected_socket`: the third descriptor of libmosquitto 2.0's client struct, after the
/// socket and the pair's read end. -1 unless the struct looks as expected: its first descriptor is the
/// connected socket, and the other two are distinct stream sockets of the AF_UNIX family.
int outletd_mosquitto_wakeup_descriptor(const void *client, int connected_socket);

#endif
