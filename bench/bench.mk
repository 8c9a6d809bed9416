# bench/: benchmarks (see bench/README.md)

# What every benchmark runs with: the probe and the worker built here (the
# registry loads no plugin unprobed).
BENCH_ENVIRONMENT = \
	CELLEXEC_PROBE='$(abs_top_builddir)/lib/cellexec-probe' \
	CELLEXEC_WORKER='$(abs_top_builddir)/plugins/subprocess/.libs/cellexec-worker'
BENCH_PROGRAMS_USED = lib/cellexec-probe plugins/subprocess/cellexec-worker
