// scripts/build-info (run by make) writes generated/build_info.h with OUTLETD_VERSION and OUTLETD_COMMIT and
// touches this file when they change; a plain `swift build` finds no such header and says "dev".
#include "CBuildInfo.h"

#if __has_include("generated/build_info.h")
#include "generated/build_info.h"
#endif

#ifndef OUTLETD_VERSION
#define OUTLETD_VERSION "dev"
#endif
#ifndef OUTLETD_COMMIT
#define OUTLETD_COMMIT "dev"
#endif

const char *outletd_build_version(void) { return OUTLETD_VERSION; }
const char *outletd_build_commit(void) { return OUTLETD_COMMIT; }
