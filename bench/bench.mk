# bench/: benchmarks (see bench/README.md)

# What every benchmark runs with: the probe and the worker built here (the
# registry loads no plugin unprobed).
BENCH_ENVIRONMENT = \
	CELLEXEC_PROBE='$(abs_top_builddir)/lib/cellexec-probe' \
	CELLEXEC_WORKER='$(abs_top_builddir)/plugins/subprocess/.libs/cellexec-worker'
BENCH_PROGRAMS_USED = lib/cellexec-probe plugins/subprocess/cellexec-worker

# bench-python: the Python package (python/) against IPython in the same
# process, and against the C figures of bench_subprocess (bench/README.md).
if ENABLE_PYTHON
EXTRA_DIST += bench/python_local.py bench/python_subprocess.py
BENCH_PYTHON_ENVIRONMENT = $(BENCH_ENVIRONMENT) \
	CELLEXEC_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
	PYTHONPATH='$(abs_top_builddir)/python/build' PYTHONDONTWRITEBYTECODE=1 \
	XDG_CONFIG_HOME='$(abs_top_builddir)/tests/no-such-config'
bench-python: python/build.stamp bench/bench_subprocess plugins/local.la plugins/subprocess.la \
		$(BENCH_PROGRAMS_USED)
	env -u CELLEXEC_CONFIG $(BENCH_PYTHON_ENVIRONMENT) $(PYTHON) \
	  $(srcdir)/bench/python_local.py $(BENCH_PYTHON_LOCAL_FLAGS)
	env -u CELLEXEC_CONFIG $(BENCH_PYTHON_ENVIRONMENT) $(PYTHON) \
	  $(srcdir)/bench/python_subprocess.py --c-bench bench/bench_subprocess \
	  $(BENCH_PYTHON_SUBPROCESS_FLAGS)
endif
.PHONY: bench-python

# bench-notebook: a 50-cell notebook through `cellexec notebook run` on the
# subprocess and local backends against `jupyter execute` (bench/README.md).
EXTRA_DIST += bench/notebook.py
bench-notebook: tools/cellexec plugins/local.la plugins/subprocess.la $(BENCH_PROGRAMS_USED)
	env -u CELLEXEC_CONFIG $(BENCH_ENVIRONMENT) \
	  CELLEXEC_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
	  XDG_CONFIG_HOME='$(abs_top_builddir)/tests/no-such-config' \
	  $(PYTHON) $(srcdir)/bench/notebook.py tools/cellexec $(BENCH_NOTEBOOK_FLAGS)
.PHONY: bench-notebook

# bench-kernel: cellexec kernel against ipykernel through jupyter_client
# (bench/README.md).
EXTRA_DIST += bench/kernel.py
if HAVE_ZMQ
bench-kernel: tools/cellexec plugins/local.la plugins/subprocess.la $(BENCH_PROGRAMS_USED)
	env -u CELLEXEC_CONFIG $(BENCH_ENVIRONMENT) \
	  CELLEXEC_PLUGIN_PATH='$(abs_top_builddir)/plugins/.libs' \
	  XDG_CONFIG_HOME='$(abs_top_builddir)/tests/no-such-config' \
	  LD_LIBRARY_PATH='$(abs_top_builddir)/.libs' \
	  $(PYTHON) $(srcdir)/bench/kernel.py tools/cellexec \
	  --kernel-executable '$(abs_top_builddir)/tools/.libs/cellexec' $(BENCH_KERNEL_FLAGS)
endif
.PHONY: bench-kernel

# bench-serve: cellexec serve against jupyter_server with ipykernel, and
# against the library itself (bench/README.md).
EXTRA_DIST += bench/serve.py bench/serve_execute.lua bench/serve_health.lua bench/serve_body.py \
	bench/isolation_ab.py
if HAVE_SERVE
if ENABLE_PYTHON
bench-serve: tools/cellexec python/build.stamp plugins/local.la plugins/subprocess.la \
		$(BENCH_PROGRAMS_USED)
	env -u CELLEXEC_CONFIG $(BENCH_PYTHON_ENVIRONMENT) \
	  LD_LIBRARY_PATH='$(abs_top_builddir)/.libs' \
	  $(PYTHON) $(srcdir)/bench/serve.py '$(abs_top_builddir)/tools/.libs/cellexec' \
	  $(BENCH_SERVE_FLAGS)
endif
endif
.PHONY: bench-serve
