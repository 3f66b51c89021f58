// What Benchmarks/OwnerAppLoad's generators share: clocks, failing, percentiles, their own CPU.
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

// Seconds on the monotonic clock.
static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static inline void fail(const char *what) {
    perror(what);
    exit(1);
}

static inline int compareDoubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

// The p-th quantile (0…1) of `count` sorted values; 0 when there are none.
static inline double percentile(double *sorted, size_t count, double p) {
    if (count == 0) return 0;
    return sorted[(size_t)(p * (double)(count - 1) + 0.5)];
}

// Prints `cpu_s U`: the process's own user + system CPU so far.
static inline void printOwnCPU(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    printf("cpu_s %.2f\n", (double)usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + (double)usage.ru_stime.tv_sec +
                               usage.ru_stime.tv_usec / 1e6);
}
