#include "CCRC32C.h"

#include <string.h>

#if defined(__x86_64__)

int outletd_crc32c_hardware_available(void) {
    return __builtin_cpu_supports("sse4.2");
}

__attribute__((target("sse4.2"))) uint32_t outletd_crc32c_hardware(uint32_t crc, const void *data, size_t length) {
    const unsigned char *bytes = data;
    uint64_t value = (uint32_t)~crc;
    while (length >= 8) {
        uint64_t word;
        memcpy(&word, bytes, 8);
        value = __builtin_ia32_crc32di(value, word);
        bytes += 8;
        length -= 8;
    }
    uint32_t rest = (uint32_t)value;
    while (length > 0) {
        rest = __builtin_ia32_crc32qi(rest, *bytes);
        bytes += 1;
        length -= 1;
    }
    return ~rest;
}

#else

int outletd_crc32c_hardware_available(void) {
    return 0;
}

uint32_t outletd_crc32c_hardware(uint32_t crc, const void *data, size_t length) {
    (void)data;
    (void)length;
    return crc; // never called: outletd_crc32c_hardware_available() is 0
}

#endif
