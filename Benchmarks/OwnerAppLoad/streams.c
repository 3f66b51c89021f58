// Open pages holding the owners' app live stream (GET /api/v1/live, server-sent events), for
// Benchmarks/owner-app-load.sh: one connection per token, opened at OPEN_RATE a second, then read for SECONDS.
// Each `outlets` event's id is the instant (ms since 1970) its values were read; its delay is when it arrived
// less that instant: what an owner's screen lags behind the database, the stream's counterpart of a polled
// request's latency. The event each stream opens with is not counted (it answers the request).
//
//   streams HOST PORT SECONDS OPEN_RATE TOKENS        (TOKENS: one session token a line)
//
// Prints `opened N refused R`, `events N per_s X delay_p50_ms A delay_p99_ms B delay_max_ms C`, `ended N`
// (streams the server ended or closed during the run), `bytes N` and `cpu_s U` (its own user + system CPU).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define BUFFER 65536

typedef struct {
    int fd;
    int state;  // 0 waiting for the head, 1 streaming, 2 refused or ended
    int opened;  // the opening event was seen
    size_t filled;
    char buffer[BUFFER];
} Stream;

static double *delays;
static size_t delayCount, delayCapacity;

static double wallMilliseconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static void recordDelay(double milliseconds) {
    if (delayCount == delayCapacity) {
        delayCapacity = delayCapacity ? delayCapacity * 2 : 65536;
        delays = realloc(delays, delayCapacity * sizeof(double));
        if (!delays) fail("realloc");
    }
    delays[delayCount++] = milliseconds;
}

// Consumes the whole events in the stream's buffer (chunk framing lines are skipped: an event's lines start
// with `id: `, `event: ` or `data: `). Counts the `outlets` events after the first.
static void consumeEvents(Stream *s, double measuring, size_t *events) {
    s->buffer[s->filled] = 0;
    char *start = s->buffer;
    for (;;) {
        char *end = strstr(start, "\n\n");
        if (!end) break;
        *end = 0;
        char *id = strstr(start, "id: ");
        if (strstr(start, "event: outlets") && id) {
            if (s->opened && measuring) {
                recordDelay(wallMilliseconds() - strtod(id + 4, NULL));
                (*events)++;
            }
            s->opened = 1;
        }
        if (strstr(start, "event: end")) s->state = 2;
        start = end + 2;
    }
    size_t left = s->filled - (size_t)(start - s->buffer);
    memmove(s->buffer, start, left);
    s->filled = left;
}

int main(int argc, char **argv) {
    if (argc != 6) {
        fprintf(stderr, "usage: streams HOST PORT SECONDS OPEN_RATE TOKENS\n");
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]);
    double seconds = atof(argv[3]), openRate = atof(argv[4]);
    FILE *file = fopen(argv[5], "r");
    if (!file) fail(argv[5]);
    char **tokens = NULL;
    size_t tokenCount = 0, capacity = 0;
    char line[512];
    while (fgets(line, sizeof line, file)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!*line) continue;
        if (tokenCount == capacity) {
            capacity = capacity ? capacity * 2 : 1024;
            tokens = realloc(tokens, capacity * sizeof *tokens);
            if (!tokens) fail("realloc");
        }
        tokens[tokenCount++] = strdup(line);
    }
    fclose(file);
    struct rlimit files;
    getrlimit(RLIMIT_NOFILE, &files);
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    if (tokenCount + 16 > files.rlim_cur) {
        fprintf(stderr, "streams: %zu streams need more open files than %lu\n", tokenCount, (unsigned long)files.rlim_cur);
        return 1;
    }
    Stream *streams = calloc(tokenCount, sizeof *streams);
    if (!streams) fail("calloc");
    int poll = epoll_create1(0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        fprintf(stderr, "streams: %s is not an IPv4 address\n", host);
        return 1;
    }
    size_t next = 0, refused = 0, ended = 0, events = 0, bytes = 0, headed = 0;
    double start = now(), measuring = 0, stop = 0;
    struct epoll_event ready[256];
    for (;;) {
        double t = now();
        // Opens at OPEN_RATE; measuring starts a second after the last stream answered.
        while (next < tokenCount && (double)next <= (t - start) * openRate) {
            Stream *s = &streams[next];
            s->fd = socket(AF_INET, SOCK_STREAM, 0);
            if (s->fd < 0) fail("socket");
            if (connect(s->fd, (struct sockaddr *)&address, sizeof address) != 0) fail("connect");
            int one = 1;
            setsockopt(s->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            char request[1024];
            int length = snprintf(request, sizeof request,
                                  "GET /api/v1/live HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\n"
                                  "Authorization: Bearer %s\r\n\r\n",
                                  host, tokens[next]);
            if (write(s->fd, request, (size_t)length) != length) fail("write");
            fcntl(s->fd, F_SETFL, O_NONBLOCK);
            struct epoll_event event = {.events = EPOLLIN, .data.u64 = next};
            epoll_ctl(poll, EPOLL_CTL_ADD, s->fd, &event);
            next++;
        }
        if (!measuring && next == tokenCount && headed == tokenCount) {
            measuring = t + 1;
            stop = measuring + seconds;
        }
        if (!measuring && t > start + (double)tokenCount / openRate + 60) {
            fprintf(stderr, "streams: %zu of %zu streams unanswered a minute after the last was opened\n",
                    tokenCount - headed, tokenCount);
            return 1;
        }
        if (measuring && t >= stop) break;
        int count = epoll_wait(poll, ready, 256, 20);
        if (count < 0 && errno != EINTR) fail("epoll_wait");
        for (int i = 0; i < count; i++) {
            Stream *s = &streams[ready[i].data.u64];
            ssize_t n = read(s->fd, s->buffer + s->filled, BUFFER - 1 - s->filled);
            if (n < 0 && errno == EAGAIN) continue;
            if (n <= 0) {
                if (s->state == 0) headed++, refused++;
                else if (s->state == 1) ended++;
                s->state = 2;
                epoll_ctl(poll, EPOLL_CTL_DEL, s->fd, NULL);
                close(s->fd);
                continue;
            }
            bytes += (size_t)n;
            s->filled += (size_t)n;
            if (s->state == 0) {
                s->buffer[s->filled] = 0;
                char *end = strstr(s->buffer, "\r\n\r\n");
                if (!end) continue;
                headed++;
                if (atoi(s->buffer + 9) != 200) {
                    refused++;
                    s->state = 2;
                    epoll_ctl(poll, EPOLL_CTL_DEL, s->fd, NULL);
                    close(s->fd);
                    continue;
                }
                s->state = 1;
                size_t head = (size_t)(end + 4 - s->buffer);
                memmove(s->buffer, end + 4, s->filled - head);
                s->filled -= head;
            }
            int wasStreaming = s->state == 1;
            consumeEvents(s, measuring && t >= measuring, &events);
            if (wasStreaming && s->state == 2) ended++;
            if (s->filled >= BUFFER - 1) s->filled = 0;  // an event larger than the buffer: skip it
        }
    }
    qsort(delays, delayCount, sizeof(double), compareDoubles);
    printf("opened %zu refused %zu\n", tokenCount - refused, refused);
    printf("events %zu per_s %.1f delay_p50_ms %.1f delay_p99_ms %.1f delay_max_ms %.1f\n", events,
           (double)events / seconds, percentile(delays, delayCount, 0.5), percentile(delays, delayCount, 0.99),
           delayCount ? delays[delayCount - 1] : 0);
    printf("ended %zu\nbytes %zu\n", ended, bytes);
    printOwnCPU();
    return 0;
}
