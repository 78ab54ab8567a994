/*
 * What Swift cannot import from <gps.h>, and the differences between libgps API versions, in one place.
 * Swift code calls only these cgps_* functions and the plain functions and fields of gps.h.
 */
#ifndef CGPS_SHIM_H
#define CGPS_SHIM_H

#include <gps.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#if GPSD_API_MAJOR_VERSION < 9
#error "libgps API 9 (gpsd 3.20) or newer is required: fix.time must be a timespec"
#endif

/* gps_send is variadic, which Swift cannot call: send one ready-made command line. */
static inline int cgps_send(struct gps_data_t *data, const char *command) {
    return gps_send(data, "%s", command);
}

/* The error code gps_open leaves in errno on failure (negative for libgps's own codes). */
static inline int cgps_errno(void) { return errno; }

/* The fix status moved from gps_data_t into gps_fix_t in API 10. */
static inline int cgps_fix_status(const struct gps_data_t *data) {
#if GPSD_API_MAJOR_VERSION >= 10
    return data->fix.status;
#else
    return data->status;
#endif
}

/* gpsd's fix status values (TPV "status"). The numbers are the same from gpsd 3.20 on, but 3.23.1 renamed
 * the macros (STATUS_NO_FIX became STATUS_UNK, STATUS_FIX became STATUS_GPS, ...): Swift uses only these. */
#ifdef STATUS_UNK
static const int CGPS_STATUS_UNKNOWN = STATUS_UNK;
static const int CGPS_STATUS_GPS = STATUS_GPS;
static const int CGPS_STATUS_DGPS = STATUS_DGPS;
#else
static const int CGPS_STATUS_UNKNOWN = STATUS_NO_FIX;
static const int CGPS_STATUS_GPS = STATUS_FIX;
static const int CGPS_STATUS_DGPS = STATUS_DGPS_FIX;
#endif
static const int CGPS_STATUS_RTK_FIXED = STATUS_RTK_FIX;
static const int CGPS_STATUS_RTK_FLOAT = STATUS_RTK_FLT;
static const int CGPS_STATUS_DEAD_RECKONING = STATUS_DR;
static const int CGPS_STATUS_GNSS_DEAD_RECKONING = STATUS_GNSSDR;
static const int CGPS_STATUS_TIME_ONLY = STATUS_TIME;
static const int CGPS_STATUS_SIMULATED = STATUS_SIM;
static const int CGPS_STATUS_PRECISE_POSITIONING = STATUS_PPS_FIX;

/* The fix time as seconds and nanoseconds since 1970 (UTC). Zero when the TPV carried no time. */
static inline int64_t cgps_fix_time_seconds(const struct gps_data_t *data) {
    return (int64_t)data->fix.time.tv_sec;
}
static inline int64_t cgps_fix_time_nanoseconds(const struct gps_data_t *data) {
    return (int64_t)data->fix.time.tv_nsec;
}

/* Altitudes: altMSL/altHAE exist since API 9 (gpsd 3.20); before that only the deprecated altitude. */
static inline double cgps_fix_alt_msl(const struct gps_data_t *data) { return data->fix.altMSL; }
static inline double cgps_fix_alt_hae(const struct gps_data_t *data) { return data->fix.altHAE; }

/* The device path of the last report, NUL-terminated inside the struct (may be empty). */
static inline const char *cgps_device_path(const struct gps_data_t *data) { return data->dev.path; }

/* The text of gpsd's last ERROR message, NUL-terminated within its field whatever gpsd sent. */
static inline const char *cgps_error_message(struct gps_data_t *data) {
    data->error[sizeof(data->error) - 1] = '\0';
    return data->error;
}

/* One satellite of the last SKY (index below satellites_visible and MAXCHANNELS). */
static inline const struct satellite_t *cgps_satellite(const struct gps_data_t *data, int index) {
    return &data->skyview[index];
}

/* The last SKY's time, seconds since 1970; zero when it carried none. */
static inline int64_t cgps_skyview_time_seconds(const struct gps_data_t *data) {
    return (int64_t)data->skyview_time.tv_sec;
}
static inline int64_t cgps_skyview_time_nanoseconds(const struct gps_data_t *data) {
    return (int64_t)data->skyview_time.tv_nsec;
}

/* The `set` mask bits we test, as plain constants (UNION_SET and friends are macros Swift drops). */
static const uint64_t CGPS_MODE_SET = MODE_SET;
static const uint64_t CGPS_TIME_SET = TIME_SET;
static const uint64_t CGPS_SATELLITE_SET = SATELLITE_SET;
static const uint64_t CGPS_VERSION_SET = VERSION_SET;
static const uint64_t CGPS_ERROR_SET = ERROR_SET;
static const uint64_t CGPS_DEVICE_SET = DEVICE_SET;
static const uint64_t CGPS_DEVICELIST_SET = DEVICELIST_SET;

/* Stream flags. */
static const unsigned int CGPS_WATCH_ENABLE_JSON = WATCH_ENABLE | WATCH_JSON;
static const unsigned int CGPS_WATCH_ENABLE_JSON_DEVICE = WATCH_ENABLE | WATCH_JSON | WATCH_DEVICE;
static const unsigned int CGPS_WATCH_DISABLE = WATCH_DISABLE;

#endif
