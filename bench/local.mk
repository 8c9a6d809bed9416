# bench/: the local backend against plain Python and IPython (bench/README.md).
# Not built by `make`; `make bench-local` builds and runs it.
EXTRA_PROGRAMS += bench/bench_local
CLEANFILES += bench/bench_local
EXTRA_DIST += bench/baseline_local.py bench/README.md
bench_bench_local_SOURCES = bench/bench_local.c bench/timing.c bench/timing.h \
	bench/backend_options.c bench/backend_options.h
bench_bench_local_CPPFLAGS = $(AM_CPPFLAGS) \
	-DCX_BENCH_PLUGINS_DIR='"$(abs_top_builddir)/plugins/.libs"' \
	-DCX_BENCH_BASELINE='"$(abs_top_srcdir)/bench/baseline_local.py"'
bench_bench_local_LDADD = libcellexec.la $(GLIB_LIBS) $(JSON_LIBS)

bench-local: bench/bench_local plugins/local.la $(BENCH_PROGRAMS_USED)
	$(BENCH_ENVIRONMENT) bench/bench_local $(BENCH_LOCAL_FLAGS)
.PHONY: bench-local
