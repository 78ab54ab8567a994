/*
 * libmosquitto (Debian's libmosquitto-dev), the MQTT client library the uplinks publish through.
 * Swift calls its plain functions; what it cannot (variadic calls) is not used.
 */
#ifndef CMOSQUITTO_SHIM_H
#define CMOSQUITTO_SHIM_H

#include <mosquitto.h>

#if LIBMOSQUITTO_MAJOR < 2
#error "libmosquitto 2.0 or newer is required"
#endif

#endif
