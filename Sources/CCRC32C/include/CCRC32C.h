#ifndef OUTLETD_CCRC32C_H
#define OUTLETD_CCRC32C_H
// CRC-32C with the processor's own instruction (SSE 4.2 `crc32`, eight bytes per instruction), for the
// spool's record checksums (MessageSpool/CRC32C.swift keeps the table-driven version for processors
// without it). docs/PERFORMANCE.md: the table-driven one was the largest single function in outletd's
// profile once the socket reads were buffered.

#include <stddef.h>
#include <stdint.h>

/// Whether `outletd_crc32c_hardware` may be called on this processor.
int outletd_crc32c_hardware_available(void);

/// Continues a running CRC-32C (start with 0) over `length` bytes at `data`.
uint32_t outletd_crc32c_hardware(uint32_t crc, const void *data, size_t length);

#endif
