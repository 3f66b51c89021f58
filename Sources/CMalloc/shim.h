#ifndef OUTLETD_CMALLOC_SHIM_H
#define OUTLETD_CMALLOC_SHIM_H
// glibc's malloc tuning (mallopt), which Glibc's Swift module does not export.
#include <malloc.h>
#endif
