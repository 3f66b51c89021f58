#define _GNU_SOURCE
#include "CSocketBuffers.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

enum { write_capacity = 64 * 1024 };

struct gathered_writes {
    int fd;
    /// libmosquitto's wake-up socket pair, written end: one-byte writes to it are dropped (-1: none).
    int wakeup_fd;
    bool gathering;
    size_t length;
    unsigned char *data;
    unsigned long long flushes;
};

static __thread struct gathered_writes gathered = {.fd = -1, .wakeup_fd = -1};

typedef ssize_t (*write_function)(int, const void *, size_t);
typedef int (*close_function)(int);

/// The C library's write: the next definition of `write` after this one.
static ssize_t library_write(int fd, const void *buffer, size_t count) {
    static write_function next;
    write_function function = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
    if (function == NULL) {
        function = (write_function)dlsym(RTLD_NEXT, "write");
        __atomic_store_n(&next, function, __ATOMIC_RELEASE);
    }
    return function(fd, buffer, count);
}

/// The C library's close.
static int library_close(int fd) {
    static close_function next;
    close_function function = __atomic_load_n(&next, __ATOMIC_ACQUIRE);
    if (function == NULL) {
        function = (close_function)dlsym(RTLD_NEXT, "close");
        __atomic_store_n(&next, function, __ATOMIC_RELEASE);
    }
    return function(fd);
}

ssize_t write(int fd, const void *buffer, size_t count) {
    struct gathered_writes *writes = &gathered;
    if (fd == writes->wakeup_fd && fd >= 0 && count == 1) return 1;
    if (fd != writes->fd || fd < 0 || writes->data == NULL || (!writes->gathering && writes->length == 0)) {
        return library_write(fd, buffer, count);
    }
    if (writes->length + count > write_capacity) {
        if (outletd_socket_writes_flush() < 0) return -1;
        if (writes->length > 0) {
            // The socket refuses what waits: libmosquitto keeps this packet queued and tries again later.
            errno = EAGAIN;
            return -1;
        }
        if (count > write_capacity) return library_write(fd, buffer, count);
    }
    memcpy(writes->data + writes->length, buffer, count);
    writes->length += count;
    return (ssize_t)count;
}

int close(int fd) {
    struct gathered_writes *writes = &gathered;
    if (fd >= 0 && fd == writes->fd) {
        if (writes->length > 0) (void)outletd_socket_writes_flush();
        writes->length = 0;
        writes->fd = -1;
    }
    return library_close(fd);
}

void outletd_socket_writes_track(int fd) {
    struct gathered_writes *writes = &gathered;
    if (writes->data == NULL) {
        writes->data = malloc(write_capacity);
        if (writes->data == NULL) return; // written directly, as without this
    }
    if (writes->fd == fd) return;
    writes->fd = fd;
    writes->length = 0;
    writes->flushes = 0;
}

void outletd_socket_writes_forget(void) {
    struct gathered_writes *writes = &gathered;
    free(writes->data);
    *writes = (struct gathered_writes){.fd = -1, .wakeup_fd = -1};
}

void outletd_socket_writes_gather_begin(void) {
    gathered.gathering = true;
}

void outletd_socket_writes_gather_end(void) {
    gathered.gathering = false;
}

long outletd_socket_writes_flush(void) {
    struct gathered_writes *writes = &gathered;
    size_t written = 0;
    while (written < writes->length) {
        ssize_t sent = library_write(writes->fd, writes->data + written, writes->length - written);
        writes->flushes += 1;
        if (sent > 0) {
            written += (size_t)sent;
        } else if (sent < 0 && errno == EINTR) {
            continue;
        } else if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            break;
        } else {
            int error = sent < 0 ? errno : EIO;
            writes->length = 0;
            errno = error;
            return -1;
        }
    }
    if (written > 0) {
        memmove(writes->data, writes->data + written, writes->length - written);
        writes->length -= written;
    }
    return (long)writes->length;
}

size_t outletd_socket_writes_pending(void) {
    return gathered.length;
}

unsigned long long outletd_socket_writes_flushes(void) {
    return gathered.flushes;
}

void outletd_socket_writes_drop_wakeups(int fd) {
    gathered.wakeup_fd = fd;
}

static bool is_unix_stream_socket(int fd) {
    int domain = 0, type = 0;
    socklen_t length = sizeof(int);
    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &length) != 0) return false;
    length = sizeof(int);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &length) != 0) return false;
    return domain == AF_UNIX && type == SOCK_STREAM;
}

int outletd_mosquitto_wakeup_descriptor(const void *client, int connected_socket) {
    // libmosquitto 2.0's client struct (lib/mosquitto_internal.h) begins `sock, sockpairR, sockpairW`.
    const int *descriptors = client;
    if (client == NULL || connected_socket < 0 || descriptors[0] != connected_socket) return -1;
    int read_end = descriptors[1], write_end = descriptors[2];
    if (read_end == write_end || read_end == connected_socket || write_end == connected_socket) return -1;
    if (!is_unix_stream_socket(read_end) || !is_unix_stream_socket(write_end)) return -1;
    return write_end;
}
