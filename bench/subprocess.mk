# bench/: the subprocess backend against a process per cell started the
# usual ways (bench/README.md).  Not built by `make`; `make bench-subprocess`
# builds and runs it.
EXTRA_PROGRAMS += bench/bench_subprocess
CLEANFILES += bench/bench_subprocess
EXTRA_DIST += bench/baseline_subprocess.py bench/fork_per_cell.py
bench_bench_subprocess_SOURCES = bench/bench_subprocess.c bench/timing.c bench/timing.h \
	bench/backend_options.c bench/backend_options.h
bench_bench_subprocess_CPPFLAGS = $(AM_CPPFLAGS) \
	-DCX_BENCH_PLUGINS_DIR='"$(abs_top_builddir)/plugins/.libs"' \
	-DCX_BENCH_BASELINE='"$(abs_top_srcdir)/bench/baseline_subprocess.py"'
bench_bench_subprocess_LDADD = libcellexec.la $(GLIB_LIBS) $(JSON_LIBS)

bench-subprocess: bench/bench_subprocess plugins/subprocess.la $(BENCH_PROGRAMS_USED)
	$(BENCH_ENVIRONMENT) bench/bench_subprocess $(BENCH_SUBPROCESS_FLAGS)
.PHONY: bench-subprocess

# bench/bench_streaming: the latency of streamed output (bench/README.md).
EXTRA_PROGRAMS += bench/bench_streaming
CLEANFILES += bench/bench_streaming
bench_bench_streaming_SOURCES = bench/bench_streaming.c bench/timing.c bench/timing.h \
	bench/backend_options.c bench/backend_options.h
bench_bench_streaming_CPPFLAGS = $(AM_CPPFLAGS) \
	-DCX_BENCH_PLUGINS_DIR='"$(abs_top_builddir)/plugins/.libs"'
bench_bench_streaming_LDADD = libcellexec.la $(GLIB_LIBS) $(JSON_LIBS)

bench-streaming: bench/bench_streaming plugins/subprocess.la plugins/local.la $(BENCH_PROGRAMS_USED)
	$(BENCH_ENVIRONMENT) bench/bench_streaming $(BENCH_STREAMING_FLAGS)
.PHONY: bench-streaming
