#ifndef OUTLETD_CMOSQUITTO_SHIM_H
#define OUTLETD_CMOSQUITTO_SHIM_H
#include <mosquitto.h>
#include <mqtt_protocol.h>
#endif
