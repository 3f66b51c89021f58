#ifndef OUTLETD_CMOSQUITTO_SHIM_H
#define OUTLETD_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <mqtt_protocol.h>
/* The network loop (NetworkLoop.swift) wakes its poll with an eventfd and corks its socket. */
#include <sys/eventfd.h>
#include <netinet/tcp.h>
#endif
