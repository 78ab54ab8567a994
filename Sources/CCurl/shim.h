/*
 * libcurl (Debian's libcurl4-openssl-dev), the HTTP client the OwnTracks HTTP and Traccar uplinks post through.
 * curl_easy_setopt and curl_easy_getinfo are variadic, which Swift cannot call: these typed wrappers can.
 */
#ifndef CCURL_SHIM_H
#define CCURL_SHIM_H

#include <curl/curl.h>

typedef size_t (*ccurl_write_callback)(char *data, size_t size, size_t count, void *context);
typedef int (*ccurl_progress_callback)(void *context, curl_off_t, curl_off_t, curl_off_t, curl_off_t);

static inline CURLcode ccurl_global_init(void) {
    return curl_global_init(CURL_GLOBAL_DEFAULT);
}

static inline CURLcode ccurl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_set_list(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}

static inline CURLcode ccurl_set_write_function(CURL *handle, ccurl_write_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, callback);
}

static inline CURLcode ccurl_set_progress_function(CURL *handle, ccurl_progress_callback callback) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, callback);
}

static inline CURLcode ccurl_response_code(CURL *handle, long *code) {
    return curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, code);
}

#endif
