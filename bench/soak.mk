# bench/: the soak run, many cells with chaos on the local and subprocess
# backends, every result checked (bench/README.md).  Not built by `make`;
# `make soak` builds and runs it, `make soak SOAK_FLAGS='-n 1000'` a short one.
EXTRA_PROGRAMS += bench/soak
CLEANFILES += bench/soak
bench_soak_SOURCES = bench/soak.c bench/timing.c bench/timing.h \
	bench/backend_options.c bench/backend_options.h tests/proc_table.c tests/proc_table.h
bench_soak_CPPFLAGS = $(AM_CPPFLAGS) \
	-DCX_BENCH_PLUGINS_DIR='"$(abs_top_builddir)/plugins/.libs"'
bench_soak_LDADD = libcellexec.la $(GLIB_LIBS) $(JSON_LIBS)

soak: bench/soak plugins/local.la plugins/subprocess.la $(BENCH_PROGRAMS_USED)
	$(BENCH_ENVIRONMENT) bench/soak $(SOAK_FLAGS)
.PHONY: soak
