/* bench/timing.h: what every benchmark measures with: a monotonic clock in
 * nanoseconds and the median and 99th percentile of a set of samples. */
#ifndef CX_BENCH_TIMING_H
#define CX_BENCH_TIMING_H

#include <glib.h>

typedef struct {
  double median_ns;
  double p99_ns;
} timing;

/* CLOCK_MONOTONIC, in nanoseconds. */
gint64 now_ns(void);

/* The median and p99 of the N SAMPLES (nanoseconds); sorts SAMPLES. */
timing summarise(double *samples, gsize n);

#endif /* CX_BENCH_TIMING_H */
