#define _GNU_SOURCE
#include "CSocketBuffers.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { capacity = 64 * 1024 };

struct tracked_socket {
    int fd;
    size_t start, end;
    unsigned char *data;
    unsigned long long refills;
};

static __thread struct tracked_socket tracked = {.fd = -1};

typedef ssize_t (*read_function)(int, void *, size_t);

/// The C library's read: the next definition of `read` after this one.
static ssize_t library_read(int fd, void *buffer, size_t count) {
    static read_function next;
    read_function function = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
    if (function == NULL) {
        function = (read_function)dlsym(RTLD_NEXT, "read");
        __atomic_store_n(&next, function, __ATOMIC_RELEASE);
    }
    return function(fd, buffer, count);
}

ssize_t read(int fd, void *buffer, size_t count) {
    struct tracked_socket *socket = &tracked;
    if (fd != socket->fd || fd < 0 || socket->data == NULL) return library_read(fd, buffer, count);
    if (socket->start == socket->end) {
        if (count >= capacity) return library_read(fd, buffer, count);
        ssize_t filled = library_read(fd, socket->data, capacity);
        if (filled <= 0) return filled;
        socket->start = 0;
        socket->end = (size_t)filled;
        socket->refills += 1;
    }
    size_t available = socket->end - socket->start;
    size_t taken = count < available ? count : available;
    memcpy(buffer, socket->data + socket->start, taken);
    socket->start += taken;
    return (ssize_t)taken;
}

void outletd_socket_reads_track(int fd) {
    struct tracked_socket *socket = &tracked;
    if (socket->data == NULL) {
        socket->data = malloc(capacity);
        if (socket->data == NULL) return; // unbuffered, as without this
    }
    if (socket->fd == fd) return;
    socket->fd = fd;
    socket->start = socket->end = 0;
    socket->refills = 0;
}

void outletd_socket_reads_forget(void) {
    struct tracked_socket *socket = &tracked;
    free(socket->data);
    *socket = (struct tracked_socket){.fd = -1};
}

size_t outletd_socket_reads_buffered(void) {
    return tracked.end - tracked.start;
}

unsigned long long outletd_socket_reads_refills(void) {
    return tracked.refills;
}
