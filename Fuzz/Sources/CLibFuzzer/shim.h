#ifndef CLIBFUZZER_SHIM_H
#define CLIBFUZZER_SHIM_H

// libFuzzer's driver, as gpx-fuzz calls it when built with `-sanitize=fuzzer` (which links libFuzzer).
// Declaration only: a build without libFuzzer never references the symbol.

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
