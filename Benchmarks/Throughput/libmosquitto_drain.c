// A drain client on libmosquitto's own loop (mosquitto_loop_forever), the "few lines of C" a user would write,
// for Benchmarks/broker-ceiling.sh: it compares this client, mosquitto_sub and broker-ceiling (outletd's MQTT
// layer) draining the same backlog. Settings as outletd's session: MQTT v5, clean start off, Session Expiry
// Interval 3600 s, Receive Maximum 1000, TCP_NODELAY; QoS 1; every message acknowledged and discarded.
//
//   cc -O2 -o libmosquitto-drain Benchmarks/Throughput/libmosquitto_drain.c -lmosquitto
//   libmosquitto-drain PORT CLIENT_ID FILTER --subscribe-only | libmosquitto-drain PORT CLIENT_ID FILTER COUNT
//
// A drain prints `received=N bytes=B last=EPOCH cpu=SECONDS`, as broker-ceiling does.
#include <mosquitto.h>
#include <mqtt_protocol.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>

static const char *filter;
static long target, received, bytes, not_qos1;
static int subscribe_only;
static double last;

static void on_connect(struct mosquitto *mosq, void *obj, int rc, int flags, const mosquitto_property *props) {
    (void)obj, (void)flags, (void)props;
    if (rc != 0) {
        fprintf(stderr, "libmosquitto-drain: connection refused (%d)\n", rc);
        exit(1);
    }
    mosquitto_subscribe_v5(mosq, NULL, filter, 1, MQTT_SUB_OPT_SEND_RETAIN_NEW, NULL);
}

static void on_subscribe(struct mosquitto *mosq, void *obj, int mid, int count, const int *granted,
                         const mosquitto_property *props) {
    (void)obj, (void)mid, (void)props;
    if (count != 1 || granted[0] != 1) {
        fprintf(stderr, "libmosquitto-drain: subscription refused\n");
        exit(1);
    }
    if (subscribe_only) mosquitto_disconnect_v5(mosq, 0, NULL);
}

static void on_message(struct mosquitto *mosq, void *obj, const struct mosquitto_message *message,
                       const mosquitto_property *props) {
    (void)obj, (void)props;
    if (message->qos != 1) not_qos1++;
    bytes += message->payloadlen;
    if (++received == target) {
        struct timeval now;
        gettimeofday(&now, NULL);
        last = now.tv_sec + now.tv_usec / 1e6;
        mosquitto_disconnect_v5(mosq, 0, NULL);
    }
}

int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: libmosquitto-drain PORT CLIENT_ID FILTER --subscribe-only|COUNT\n");
        return 2;
    }
    filter = argv[3];
    subscribe_only = strcmp(argv[4], "--subscribe-only") == 0;
    target = subscribe_only ? 0 : atol(argv[4]);
    mosquitto_lib_init();
    struct mosquitto *mosq = mosquitto_new(argv[2], false, NULL);
    mosquitto_property *properties = NULL;
    if (mosq == NULL || mosquitto_int_option(mosq, MOSQ_OPT_PROTOCOL_VERSION, MQTT_PROTOCOL_V5)
        || mosquitto_int_option(mosq, MOSQ_OPT_RECEIVE_MAXIMUM, 1000)
        || mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1)
        || mosquitto_property_add_int32(&properties, MQTT_PROP_SESSION_EXPIRY_INTERVAL, 3600)) {
        fprintf(stderr, "libmosquitto-drain: setting up the client failed\n");
        return 1;
    }
    mosquitto_connect_v5_callback_set(mosq, on_connect);
    mosquitto_subscribe_v5_callback_set(mosq, on_subscribe);
    mosquitto_message_v5_callback_set(mosq, on_message);
    if (mosquitto_connect_bind_v5(mosq, "127.0.0.1", atoi(argv[1]), 30, NULL, properties) != MOSQ_ERR_SUCCESS) {
        fprintf(stderr, "libmosquitto-drain: cannot connect\n");
        return 1;
    }
    mosquitto_loop_forever(mosq, -1, 1);
    if (!subscribe_only) {
        if (received < target || not_qos1 != 0) {
            fprintf(stderr, "libmosquitto-drain: %ld of %ld messages (%ld not QoS 1)\n", received, target, not_qos1);
            return 1;
        }
        struct rusage usage;
        getrusage(RUSAGE_SELF, &usage);
        printf("received=%ld bytes=%ld last=%.6f cpu=%.3f\n", received, bytes, last,
               usage.ru_utime.tv_sec + usage.ru_stime.tv_sec
                   + (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6);
    }
    mosquitto_destroy(mosq);
    mosquitto_lib_cleanup();
    return 0;
}
