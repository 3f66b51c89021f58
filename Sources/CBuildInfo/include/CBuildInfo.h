#ifndef OUTLETD_CBUILDINFO_H
#define OUTLETD_CBUILDINFO_H

/// The version outletd was built as (the VERSION file, through scripts/build-info), or "dev".
const char *outletd_build_version(void);
/// The git commit outletd was built from (12 hex digits, "-dirty" with uncommitted changes), or "dev".
const char *outletd_build_commit(void);

#endif
