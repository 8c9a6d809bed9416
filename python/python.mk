# python/: the cellexec Python package: a C extension module over
# libcellexec's public API (python/cellexec/*.c, module.c its entry) and
# pure-Python parts (python/cellexec/*.py), installed into
# CX_PYTHON_MODULEDIR, where the configured system python3 finds it.
# ./configure --disable-python leaves it out.
PYTHON_PACKAGE_FILES = python/cellexec/__init__.py python/cellexec/executor.py python/cellexec/_host.py \
	python/cellexec/__init__.pyi python/cellexec/executor.pyi python/cellexec/py.typed
PYTHON_TEST_FILES = python/tests/test_cellexec.py python/tests/test_facade.py \
	python/tests/test_threads.py python/tests/test_executor_ops.py \
	python/tests/test_leak.py python/tests/support.py python/tests/run_tests.py
EXTRA_DIST += $(PYTHON_PACKAGE_FILES) $(PYTHON_TEST_FILES) python/tests/test_python.sh \
	python/README.md

if ENABLE_PYTHON
cellexecpydir = $(CX_PYTHON_MODULEDIR)/cellexec
cellexecpy_LTLIBRARIES = python/cellexec/_cellexec.la
cellexecpy_DATA = $(PYTHON_PACKAGE_FILES)
python_cellexec__cellexec_la_SOURCES = python/cellexec/pycx_internal.h \
	python/cellexec/module.c python/cellexec/errors.c python/cellexec/ref.c \
	python/cellexec/hooks.c python/cellexec/convert.c python/cellexec/options.c \
	python/cellexec/handle.c python/cellexec/backend.c python/cellexec/session.c \
	python/cellexec/env.c
python_cellexec__cellexec_la_CFLAGS = $(AM_CFLAGS) $(PYTHON_EMBED_CFLAGS) -fvisibility=hidden
# An extension module: Python's symbols come from the interpreter loading it.
python_cellexec__cellexec_la_LDFLAGS = $(AM_LDFLAGS) -module -avoid-version -shared
python_cellexec__cellexec_la_LIBADD = pyembed/libcxpyconvert.la libcellexec.la $(GLIB_LIBS) $(JSON_LIBS)

# The package as Python imports it from the build tree, for the tests and
# the benchmarks: python/build/cellexec/ holds the sources and the module.
python/build.stamp: python/cellexec/_cellexec.la $(PYTHON_PACKAGE_FILES:%=$(srcdir)/%)
	$(AM_V_GEN)rm -rf python/build && $(MKDIR_P) python/build/cellexec && \
	  for f in $(PYTHON_PACKAGE_FILES); do cp $(srcdir)/$$f python/build/cellexec/; done && \
	  cp python/cellexec/.libs/_cellexec.so python/build/cellexec/ && touch $@
check_DATA += python/build.stamp
CLEANFILES += python/build.stamp

# tests/test_python.sh runs python/tests with the configured python3 and
# prints "test_python: N passed, N failed" (tests/test_python.log).
tests/test_python.sh: $(srcdir)/python/tests/test_python.sh Makefile
	$(AM_V_GEN)$(MKDIR_P) tests && \
	  $(SED) -e 's|[@]PYTHON[@]|$(PYTHON)|g' -e 's|[@]SANITIZED[@]|$(SANITIZER_CFLAGS)|g' \
	    $(srcdir)/python/tests/test_python.sh > $@.tmp && chmod +x $@.tmp && mv $@.tmp $@
check_SCRIPTS = tests/test_python.sh
TESTS += tests/test_python.sh
CLEANFILES += tests/test_python.sh

# Installed: the libtool archive has no use next to a Python module.
install-exec-hook:
	rm -f $(DESTDIR)$(cellexecpydir)/_cellexec.la
# (so libtool's uninstall, which reads it, leaves the module: removed here).
uninstall-local:
	rm -f $(DESTDIR)$(cellexecpydir)/_cellexec.so
	rm -rf $(DESTDIR)$(cellexecpydir)/__pycache__
	-rmdir $(DESTDIR)$(cellexecpydir) 2>/dev/null

mostlyclean-local:
	rm -rf python/build
endif
