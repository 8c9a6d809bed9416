# bench/: the jupyter backend against jupyter_client on the same kind of
# kernel (bench/README.md).  Not built by `make`; `make bench-jupyter`
# builds and runs it (it starts its own kernels and a jupyter_server).
if HAVE_ZMQ
EXTRA_PROGRAMS += bench/bench_jupyter
CLEANFILES += bench/bench_jupyter
bench_bench_jupyter_SOURCES = bench/bench_jupyter.c bench/timing.c bench/timing.h \
	tests/test_jupyter_server.c tests/test_jupyter_server.h \
	bench/backend_options.c bench/backend_options.h
bench_bench_jupyter_CPPFLAGS = $(AM_CPPFLAGS) \
	-DCX_BENCH_PLUGINS_DIR='"$(abs_top_builddir)/plugins/.libs"' \
	-DCX_BENCH_BASELINE='"$(abs_top_srcdir)/bench/baseline_jupyter.py"'
bench_bench_jupyter_LDADD = libcellexec.la $(GLIB_LIBS) $(JSON_LIBS)

bench-jupyter: bench/bench_jupyter plugins/jupyter.la $(BENCH_PROGRAMS_USED)
	$(BENCH_ENVIRONMENT) XDG_CACHE_HOME='$(abs_top_builddir)/tests/cache' \
	  bench/bench_jupyter $(BENCH_JUPYTER_FLAGS)
endif
.PHONY: bench-jupyter
EXTRA_DIST += bench/baseline_jupyter.py
