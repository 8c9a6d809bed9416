/* bench/timing.c: clock and percentiles shared by the benchmarks. */
#include "config.h"

#include <stdlib.h>
#include <time.h>

#include "bench/timing.h"

gint64
now_ns(void)
{
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (gint64)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
compare_doubles(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

timing
summarise(double *samples, gsize n)
{
  qsort(samples, n, sizeof(double), compare_doubles);
  timing t = { samples[n / 2], samples[MIN(n - 1, (gsize)(n * 0.99))] };
  return t;
}
