// An open-loop HTTP/1.1 load generator for Benchmarks/owner-app-load.sh: requests leave at a fixed rate, whatever
// the server's answers do, on a pool of keep-alive connections; a request's latency runs from the time it was due
// (not from when a connection was free), so a server that falls behind shows its queue in the percentiles.
//
//   loadgen HOST PORT RATE SECONDS CONNECTIONS TARGETS     (RATE 0: closed loop, every connection busy, at most)
//
// SECONDS 0: each target once, then the answers awaited however long they take (a warm-up).
//
// TARGETS: one request a line, `ROUTE<TAB>PATH<TAB>TOKEN` (TOKEN `-`: no Authorization), sent in order, cycled.
// Prints one line per route, `route NAME count N errors E p50_ms X p99_ms Y max_ms Z`, then `total …`,
// `sent N in S s`, and `cpu_s U` (the generator's own user + system CPU).
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define MAX_ROUTES 16
#define BUFFER 65536

typedef struct {
    int route;
    char *request;
    size_t length;
} Target;

typedef struct {
    int fd;
    int busy;
    int route;
    double due;
    size_t filled;
    char buffer[BUFFER];
} Connection;

typedef struct {
    char name[32];
    double *latencies;
    size_t count, capacity, errors;
} Route;

static Route routes[MAX_ROUTES];
static int routeCount;
static Target *targets;
static size_t targetCount;

static int routeIndex(const char *name) {
    for (int i = 0; i < routeCount; i++)
        if (strcmp(routes[i].name, name) == 0) return i;
    if (routeCount == MAX_ROUTES) {
        fprintf(stderr, "loadgen: more than %d routes\n", MAX_ROUTES);
        exit(1);
    }
    snprintf(routes[routeCount].name, sizeof routes[routeCount].name, "%s", name);
    return routeCount++;
}

static void readTargets(const char *path, const char *host) {
    FILE *file = fopen(path, "r");
    if (!file) fail(path);
    char line[2048];
    size_t capacity = 0;
    while (fgets(line, sizeof line, file)) {
        char *route = strtok(line, "\t\n"), *target = strtok(NULL, "\t\n"), *token = strtok(NULL, "\t\n");
        if (!route || !target || !token) continue;
        if (targetCount == capacity) {
            capacity = capacity ? capacity * 2 : 1024;
            targets = realloc(targets, capacity * sizeof *targets);
            if (!targets) fail("realloc");
        }
        char request[2048];
        int length;
        if (strcmp(token, "-") == 0)
            length = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, host);
        else
            length = snprintf(request, sizeof request, "GET %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n\r\n",
                              target, host, token);
        targets[targetCount].route = routeIndex(route);
        targets[targetCount].request = strndup(request, (size_t)length);
        targets[targetCount].length = (size_t)length;
        targetCount++;
    }
    fclose(file);
    if (targetCount == 0) {
        fprintf(stderr, "loadgen: no targets in %s\n", path);
        exit(1);
    }
}

static int connectTo(const char *host, int port) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail("socket");
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &address.sin_addr) != 1) {
        fprintf(stderr, "loadgen: %s is not an IPv4 address\n", host);
        exit(1);
    }
    if (connect(fd, (struct sockaddr *)&address, sizeof address) != 0) fail("connect");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    fcntl(fd, F_SETFL, O_NONBLOCK);
    return fd;
}

// LOADGEN_SLOW_MS: each request slower than this is written to stderr (`slow ROUTE MS UNIX-TIME`), to line
// up with the server's and PostgreSQL's logs; unset, none is.
static double slowSeconds = -1;

static void record(int route, double latency, int ok) {
    Route *r = &routes[route];
    if (slowSeconds >= 0 && latency > slowSeconds) {
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        fprintf(stderr, "slow %s %.1f %.3f\n", r->name, latency * 1000, (double)wall.tv_sec + wall.tv_nsec / 1e9);
    }
    if (r->count == r->capacity) {
        r->capacity = r->capacity ? r->capacity * 2 : 4096;
        r->latencies = realloc(r->latencies, r->capacity * sizeof(double));
        if (!r->latencies) fail("realloc");
    }
    r->latencies[r->count++] = latency;
    if (!ok) r->errors++;
}

// Whether the buffer holds a whole response; sets its status.
static int complete(Connection *c, int *status) {
    c->buffer[c->filled < BUFFER ? c->filled : BUFFER - 1] = 0;
    char *end = strstr(c->buffer, "\r\n\r\n");
    if (!end) return 0;
    *status = atoi(c->buffer + 9);
    size_t header = (size_t)(end + 4 - c->buffer);
    for (char *line = strstr(c->buffer, "\r\n"); line && line < end; line = strstr(line + 2, "\r\n")) {
        if (strncasecmp(line + 2, "content-length:", 15) == 0) return c->filled >= header + strtoul(line + 17, NULL, 10);
        if (strncasecmp(line + 2, "transfer-encoding:", 18) == 0)
            return c->filled >= 5 && memcmp(c->buffer + c->filled - 5, "0\r\n\r\n", 5) == 0;
    }
    return 1;
}

static void report(const char *name, double *values, size_t count, size_t errors) {
    qsort(values, count, sizeof(double), compareDoubles);
    printf("%s %s count %zu errors %zu p50_ms %.1f p99_ms %.1f max_ms %.1f\n", strcmp(name, "total") ? "route" : "total",
           strcmp(name, "total") ? name : "all", count, errors, percentile(values, count, 0.5) * 1e3,
           percentile(values, count, 0.99) * 1e3, count ? values[count - 1] * 1e3 : 0);
}

int main(int argc, char **argv) {
    if (argc != 7) {
        fprintf(stderr, "usage: loadgen HOST PORT RATE SECONDS CONNECTIONS TARGETS\n");
        return 2;
    }
    const char *host = argv[1];
    int port = atoi(argv[2]), connectionCount = atoi(argv[5]);
    double rate = atof(argv[3]), seconds = atof(argv[4]);
    if (getenv("LOADGEN_SLOW_MS")) slowSeconds = atof(getenv("LOADGEN_SLOW_MS")) / 1000;
    readTargets(argv[6], host);
    Connection *connections = calloc((size_t)connectionCount, sizeof *connections);
    if (!connections) fail("calloc");
    int poll = epoll_create1(0);
    for (int i = 0; i < connectionCount; i++) {
        connections[i].fd = connectTo(host, port);
        struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)i};
        epoll_ctl(poll, EPOLL_CTL_ADD, connections[i].fd, &event);
    }
    // Idle connections, a stack; requests due but without a connection wait in order (their due times).
    int *idle = malloc((size_t)connectionCount * sizeof(int)), idleCount = connectionCount;
    for (int i = 0; i < connectionCount; i++) idle[i] = connectionCount - 1 - i;
    size_t next = 0, sent = 0, answered = 0;
    int once = seconds == 0;
    double start = now(), stop = once ? INFINITY : start + seconds;
    struct epoll_event events[256];
    for (;;) {
        double t = now();
        // Requests due by now (open loop) or one per idle connection (closed loop), while connections are idle.
        while (idleCount > 0 && t < stop && (!once || next < targetCount) &&
               (rate == 0 || start + (double)next / rate <= t)) {
            Connection *c = &connections[idle[--idleCount]];
            Target *target = &targets[next % targetCount];
            c->busy = 1;
            c->route = target->route;
            c->due = rate == 0 ? t : start + (double)next / rate;
            c->filled = 0;
            next++;
            if (write(c->fd, target->request, target->length) != (ssize_t)target->length) fail("write");
            sent++;
        }
        if ((t >= stop || (once && next == targetCount)) && idleCount == connectionCount) break;
        if (t >= stop + 10) {
            fprintf(stderr, "loadgen: %d requests unanswered 10 s after the end\n", connectionCount - idleCount);
            break;
        }
        int timeout = 1;
        if (rate > 0 && idleCount > 0 && t < stop) {
            double wait = start + (double)next / rate - t;
            timeout = wait > 0 ? (int)(wait * 1e3) : 0;
        }
        int ready = epoll_wait(poll, events, 256, timeout > 100 ? 100 : timeout);
        if (ready < 0 && errno != EINTR) fail("epoll_wait");
        for (int i = 0; i < ready; i++) {
            int index = (int)events[i].data.u32;
            Connection *c = &connections[index];
            ssize_t n = read(c->fd, c->buffer + c->filled, BUFFER - 1 - c->filled);
            if (n == 0 || (n < 0 && errno != EAGAIN)) {
                if (!c->busy) {
                    // An idle connection the server closed, as it may (no first request within
                    // app.header_timeout_seconds: the idle stack reuses its top, so the bottom can wait that
                    // long; or app.idle_timeout_seconds): opened again, as a browser would.
                    epoll_ctl(poll, EPOLL_CTL_DEL, c->fd, NULL);
                    close(c->fd);
                    c->fd = connectTo(host, port);
                    struct epoll_event event = {.events = EPOLLIN, .data.u32 = (uint32_t)index};
                    epoll_ctl(poll, EPOLL_CTL_ADD, c->fd, &event);
                    continue;
                }
                fprintf(stderr, "loadgen: the server closed a connection with a request on it\n");
                return 1;
            }
            if (n < 0) continue;
            c->filled += (size_t)n;
            int status = 0;
            if (!c->busy || !complete(c, &status)) continue;
            record(c->route, now() - c->due, status >= 200 && status < 300);
            c->busy = 0;
            answered++;
            idle[idleCount++] = index;
        }
    }
    double elapsed = now() - start;
    size_t all = 0, errors = 0;
    for (int i = 0; i < routeCount; i++) all += routes[i].count, errors += routes[i].errors;
    double *every = malloc((all ? all : 1) * sizeof(double));
    size_t filled = 0;
    for (int i = 0; i < routeCount; i++) {
        memcpy(every + filled, routes[i].latencies, routes[i].count * sizeof(double));
        filled += routes[i].count;
        report(routes[i].name, routes[i].latencies, routes[i].count, routes[i].errors);
    }
    report("total", every, all, errors);
    printf("sent %zu answered %zu in %.2f s\n", sent, answered, elapsed);
    printOwnCPU();
    return 0;
}
