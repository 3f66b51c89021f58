// Simulated outlets for Benchmarks/owner-app-load.sh: OUTLETS outlets publish RATE native telemetry readings a
// second in all (QoS 1, MQTT 3.1.1, one connection), spread evenly, each outlet every OUTLETS / RATE seconds.
// What `outletd simulate` does, in C on a bare socket: the outlets are not on outletd's machine in production, so
// their stand-in should take as little of the two cores the stage measures as the load generator does. Each
// outlet's power follows an appliance (a fridge's cycle, a kettle, a lamp, …) and changes at every reading; its
// energy counter grows with it.
//
//   outlets HOST PORT OUTLETS RATE PREFIX WIDTH WINDOW     (codes: PREFIX + the number, zero-padded to WIDTH)
//
// At most WINDOW publishes wait for the broker's PUBACK; when the window is full, publishing waits, so what the
// broker took is the rate acknowledged. Runs until SIGTERM or SIGINT. Prints `published N, acknowledged M
// (X/s acknowledged, Y/s asked)` every 5 s, the same at the end, then `cpu_s U`. Exits 1 when the connection
// fails or the broker refuses it.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common.h"

#define OUTGOING (256 * 1024)
#define INCOMING 65536

typedef struct {
    uint64_t random;
    int appliance;  // 0 fridge, 1 television, 2 kettle, 3 washing machine, 4 computer, 5 lamp
    double nominalVolts, energyWattHours, phase, lastAt;
    long long sequence;
} Outlet;

static volatile sig_atomic_t stopping;
static void onSignal(int signalNumber) { (void)signalNumber; stopping = 1; }

static uint64_t splitMix64(uint64_t *state) {
    uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static double uniform(Outlet *o, double low, double high) {
    return low + (high - low) * (double)(splitMix64(&o->random) >> 11) * 0x1.0p-53;
}

// Active power at `t` (seconds since 1970), watts: the appliances of `outletd simulate` (OutletSimulation.swift).
static double powerWatts(Outlet *o, double t) {
    double local = t + o->phase;
    switch (o->appliance) {
    case 0: {
        double inCycle = fmod(local, 2400);
        if (inCycle < 5) return uniform(o, 350, 450);
        return inCycle < 960 ? uniform(o, 95, 130) : uniform(o, 1.5, 2.5);
    }
    case 1: return fmod(local, 43200) < 14400 ? uniform(o, 70, 120) : uniform(o, 0.4, 0.6);
    case 2: return fmod(local, 7200) < 180 ? uniform(o, 1850, 2150) : 0;
    case 3: {
        double inCycle = fmod(local, 21600);
        if (inCycle < 900) return uniform(o, 1900, 2100);
        if (inCycle < 4200) return uniform(o, 150, 450);
        if (inCycle < 5400) return uniform(o, 400, 600);
        return uniform(o, 0.8, 1.2);
    }
    case 4: return 90 + 40 * sin(local / 600) + uniform(o, -10, 10);
    default: return fmod(local, 28800) < 18000 ? uniform(o, 8.5, 9.5) : 0;
    }
}

static const double powerFactors[] = {0.82, 0.93, 1.0, 0.88, 0.95, 0.6};

// One reading's JSON at `t` into `out`; returns its length.
static int reading(Outlet *o, double t, char *out, size_t room) {
    double power = fmax(0, powerWatts(o, t));
    double volts = o->nominalVolts * (1 + 0.03 * sin(t / 3600 + o->phase)) + uniform(o, -0.8, 0.8);
    double powerFactor = power == 0 ? 1.0 : powerFactors[o->appliance];
    if (o->lastAt > 0) o->energyWattHours += power * (t - o->lastAt) / 3600;
    o->lastAt = t;
    o->sequence += 1;
    return snprintf(out, room,
                    "{\"voltage\":%.1f,\"current\":%.3f,\"power\":%.1f,\"pf\":%.2f,\"energy_wh\":%.3f,\"ts\":%lld,"
                    "\"seq\":%lld}",
                    volts, power / (volts * powerFactor), power, powerFactor, o->energyWattHours,
                    (long long)llround(t * 1000), o->sequence);
}

// MQTT's remaining length (1–4 bytes); returns the bytes written.
static int putLength(unsigned char *out, size_t length) {
    int n = 0;
    do {
        unsigned char byte = length % 128;
        length /= 128;
        out[n++] = byte | (length ? 0x80 : 0);
    } while (length);
    return n;
}

static unsigned char outgoing[OUTGOING];
static size_t outgoingLength;

static void sendAll(int fd) {
    size_t sent = 0;
    while (sent < outgoingLength) {
        ssize_t n = write(fd, outgoing + sent, outgoingLength - sent);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) fail("write to the broker");
        sent += (size_t)n;
    }
    outgoingLength = 0;
}

// Queues a packet: the fixed header's first byte, its variable header and its payload (either may be empty).
static void queuePacket(unsigned char first, const void *head, size_t headLength, const void *body, size_t bodyLength) {
    unsigned char fixed[5];
    fixed[0] = first;
    int lengthBytes = putLength(fixed + 1, headLength + bodyLength);
    memcpy(outgoing + outgoingLength, fixed, 1 + (size_t)lengthBytes);
    outgoingLength += 1 + (size_t)lengthBytes;
    if (headLength) memcpy(outgoing + outgoingLength, head, headLength);
    outgoingLength += headLength;
    if (bodyLength) memcpy(outgoing + outgoingLength, body, bodyLength);
    outgoingLength += bodyLength;
}

static unsigned char incoming[INCOMING];
static size_t incomingLength;

// Reads what the broker sent and counts its PUBACKs (and CONNACK's verdict, when one comes). Returns 0 at end of
// file or on an error.
static int readReplies(int fd, unsigned long long *acknowledged, int *connected) {
    ssize_t n = recv(fd, incoming + incomingLength, INCOMING - incomingLength, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) return 1;
    if (n <= 0) return 0;
    incomingLength += (size_t)n;
    size_t at = 0;
    while (at + 2 <= incomingLength) {
        size_t length = 0, multiplier = 1, header = 1;
        int complete = 0;
        while (at + header < incomingLength && header <= 4) {
            unsigned char byte = incoming[at + header++];
            length += (byte & 127) * multiplier;
            multiplier *= 128;
            if (!(byte & 128)) { complete = 1; break; }
        }
        if (!complete || at + header + length > incomingLength) break;
        unsigned char type = incoming[at] >> 4;
        if (type == 4) *acknowledged += 1;
        if (type == 2) *connected = length >= 2 && incoming[at + header + 1] == 0 ? 1 : -1;
        at += header + length;
    }
    memmove(incoming, incoming + at, incomingLength - at);
    incomingLength -= at;
    return 1;
}

static void report(unsigned long long published, unsigned long long acknowledged, double elapsed, double rate) {
    printf("published %llu, acknowledged %llu (%.0f/s acknowledged, %.0f/s asked)\n", published, acknowledged,
           elapsed > 0 ? (double)acknowledged / elapsed : 0, rate);
    fflush(stdout);
}

int main(int argc, char **argv) {
    if (argc != 8) {
        fprintf(stderr, "usage: outlets HOST PORT OUTLETS RATE PREFIX WIDTH WINDOW\n");
        return 2;
    }
    int count = atoi(argv[3]), width = atoi(argv[6]);
    double rate = atof(argv[4]);
    const char *prefix = argv[5];
    unsigned long long window = strtoull(argv[7], NULL, 10);
    if (count <= 0 || rate <= 0 || width <= 0 || width > 12 || strlen(prefix) > 32 || window == 0) {
        fprintf(stderr, "outlets: OUTLETS, RATE and WINDOW must be positive, WIDTH 1…12, PREFIX ≤ 32 bytes\n");
        return 2;
    }
    signal(SIGTERM, onSignal);
    signal(SIGINT, onSignal);
    signal(SIGPIPE, SIG_IGN);

    Outlet *fleet = calloc((size_t)count, sizeof(Outlet));
    if (!fleet) fail("calloc");
    for (int i = 0; i < count; i++) {
        Outlet *o = &fleet[i];
        o->random = 0x5EED0000ULL + (uint64_t)i * 7919;
        o->appliance = (int)(splitMix64(&o->random) % 6);
        o->nominalVolts = splitMix64(&o->random) % 3 == 0 ? 220 : 127;
        o->energyWattHours = (double)(splitMix64(&o->random) % 50000) / 10;
        o->phase = (double)(splitMix64(&o->random) % 86400);
    }

    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) fail("socket");
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(argv[2]))};
    if (inet_pton(AF_INET, argv[1], &address.sin_addr) != 1) fail("HOST (an IPv4 address)");
    if (connect(fd, (struct sockaddr *)&address, sizeof address) < 0) fail("connect to the broker");
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);

    // CONNECT: MQTT 3.1.1, clean session, keep-alive 60 s, client id outletd-bench-outlets-<pid>.
    char clientID[64];
    int idLength = snprintf(clientID, sizeof clientID, "outletd-bench-outlets-%d", (int)getpid());
    unsigned char connectHead[12] = {0, 4, 'M', 'Q', 'T', 'T', 4, 0x02, 0, 60, 0, (unsigned char)idLength};
    queuePacket(0x10, connectHead, sizeof connectHead, clientID, (size_t)idLength);
    sendAll(fd);
    unsigned long long published = 0, acknowledged = 0;
    int connected = 0;
    while (connected == 0) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 5000) <= 0) fail("waiting for the broker's CONNACK");
        if (!readReplies(fd, &acknowledged, &connected)) fail("the broker closed the connection");
    }
    if (connected < 0) {
        fprintf(stderr, "outlets: the broker refused the connection\n");
        return 1;
    }

    double started = now(), lastReport = started, lastPing = started;
    unsigned short packetID = 0;
    int next = 0;
    char topic[64], payload[256];
    while (!stopping) {
        double t = now();
        // Readings due by now, outlet after outlet, as long as the window has room.
        unsigned long long due = (unsigned long long)((t - started) * rate);
        struct timespec wall;
        clock_gettime(CLOCK_REALTIME, &wall);
        double wallSeconds = (double)wall.tv_sec + (double)wall.tv_nsec / 1e9;
        while (published < due && published - acknowledged < window && outgoingLength + 512 < OUTGOING) {
            Outlet *o = &fleet[next];
            int topicLength = snprintf(topic, sizeof topic, "outlets/%s%0*d/telemetry", prefix, width, next + 1);
            int payloadLength = reading(o, wallSeconds, payload, sizeof payload);
            if (++packetID == 0) packetID = 1;
            unsigned char head[2 + 64 + 2];
            head[0] = 0;
            head[1] = (unsigned char)topicLength;
            memcpy(head + 2, topic, (size_t)topicLength);
            head[2 + topicLength] = packetID >> 8;
            head[3 + topicLength] = packetID & 0xFF;
            queuePacket(0x32, head, 4 + (size_t)topicLength, payload, (size_t)payloadLength);
            published += 1;
            next = (next + 1) % count;
        }
        if (t - lastPing >= 30) {
            queuePacket(0xC0, NULL, 0, NULL, 0);
            lastPing = t;
        }
        if (outgoingLength) sendAll(fd);
        // Sleep until the next reading is due (at least 2 ms: readings leave in small bursts), then take every
        // PUBACK that came meanwhile at once. Only a full window waits on the socket itself.
        if (published - acknowledged >= window) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            if (poll(&p, 1, 2) < 0 && errno != EINTR) fail("poll");
        } else {
            double wait = fmax(0.002, ((double)(published + 1) / rate) - (now() - started));
            struct timespec pause = {.tv_sec = 0, .tv_nsec = (long)(fmin(wait, 0.5) * 1e9)};
            nanosleep(&pause, NULL);
        }
        for (;;) {
            size_t before = incomingLength;
            unsigned long long acknowledgedBefore = acknowledged;
            if (!readReplies(fd, &acknowledged, &connected)) {
                fprintf(stderr, "outlets: the broker closed the connection\n");
                return 1;
            }
            if (incomingLength == before && acknowledged == acknowledgedBefore) break;  // nothing was waiting
        }
        if (now() - lastReport >= 5) {
            lastReport = now();
            report(published, acknowledged, lastReport - started, rate);
        }
    }
    // What is in flight gets a second to be acknowledged, then DISCONNECT.
    double until = now() + 1;
    while (acknowledged < published && now() < until) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) > 0 && !readReplies(fd, &acknowledged, &connected)) break;
    }
    queuePacket(0xE0, NULL, 0, NULL, 0);
    sendAll(fd);
    close(fd);
    report(published, acknowledged, now() - started, rate);
    printOwnCPU();
    return 0;
}
