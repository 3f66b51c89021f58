#ifndef OUTLETD_CLIBPQ_SHIM_H
#define OUTLETD_CLIBPQ_SHIM_H
#include <libpq-fe.h>
#endif
