# tests/fuzz: libFuzzer targets (clang -fsanitize=fuzzer): the config
# parser, cx_result_from_json, JSON text nested past the depth limit
# (cx_json_from_string), the subprocess wire's frames and messages,
# the executor's value conversion (pyembed/convert.c), the checks
# `cellexec serve` makes of a request's head (server/request_head.c), the
# jupyter backend's messages and what the kernel reads from a peer (when
# they are built).
# `make fuzz` builds them with clang (tests/fuzz/run.sh) and runs each for
# FUZZ_SECONDS, FUZZ_JOBS at a time; without clang and libFuzzer (configure checks) it says so
# and succeeds.  Adding a target: see the head of tests/fuzz/run.sh.
FUZZ_SECONDS = 30
# How many targets run at once.
FUZZ_JOBS = 2
# Source files only (the build tree's tests/fuzz holds binaries and logs):
# every fuzz_*.c, so that a new target needs no line here.
EXTRA_DIST += tests/fuzz/run.sh tests/fuzz/corpus tests/fuzz/regressions \
	$(wildcard $(srcdir)/tests/fuzz/fuzz_*.c) tests/fuzz/jupyter_frames.c \
	tests/fuzz/jupyter_frames.h
if HAVE_ZMQ
FUZZ_JUPYTER = yes
else
FUZZ_JUPYTER = no
endif
fuzz: all
if HAVE_LIBFUZZER
	FUZZ_CC='$(FUZZ_CC)' FUZZ_SECONDS='$(FUZZ_SECONDS)' FUZZ_JOBS='$(FUZZ_JOBS)' srcdir='$(abs_top_srcdir)' \
	  builddir='$(abs_top_builddir)' FUZZ_JUPYTER='$(FUZZ_JUPYTER)' \
	  FUZZ_CFLAGS='$(GLIB_CFLAGS) $(JSON_CFLAGS) $(PYTHON_EMBED_CFLAGS) $(ZMQ_CFLAGS)' \
	  FUZZ_LIBS='$(GLIB_LIBS) $(JSON_LIBS) $(PYTHON_EMBED_LIBS) $(ZMQ_LIBS)' $(SHELL) $(srcdir)/tests/fuzz/run.sh
else
	@echo "fuzz: skipped: configure found no clang that links libFuzzer targets"
endif
.PHONY: fuzz
