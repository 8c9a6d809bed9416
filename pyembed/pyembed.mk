# pyembed: the embedded-CPython runtime, a convenience library shared by the
# local backend (plugins/local) and the subprocess worker.
noinst_LTLIBRARIES += pyembed/libcxpyembed.la
pyembed_libcxpyembed_la_SOURCES = \
	pyembed/pyembed.h \
	pyembed/pyembed-private.h \
	pyembed/runtime.c \
	pyembed/running.c \
	pyembed/capture.c \
	pyembed/fdcapture.c \
	pyembed/display.c \
	pyembed/native.c \
	pyembed/cell.c \
	pyembed/executor.h \
	pyembed/executor.c
# The Python halves of the runtime (errors.py, helper.py, ipython_shell.py,
# kernel.py, requests.py, executor.py) are compiled in as C strings.  The rule below does it for
# any DIR/NAME.py of the tree (the backends' own Python too): it becomes
# cx__py_NAME_source in DIR/NAME-py.h, which lists it in BUILT_SOURCES,
# CLEANFILES and EXTRA_DIST as this file does.
PYEMBED_GENERATED = pyembed/errors-py.h pyembed/helper-py.h pyembed/ipython_shell-py.h \
	pyembed/kernel-py.h pyembed/requests-py.h pyembed/executor-py.h
nodist_pyembed_libcxpyembed_la_SOURCES = $(PYEMBED_GENERATED)
# -I$(top_builddir): the generated pyembed/NAME-py.h.
pyembed_libcxpyembed_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)
pyembed_libcxpyembed_la_CFLAGS = $(PLUGIN_CFLAGS) $(PYTHON_EMBED_CFLAGS)
pyembed_libcxpyembed_la_LIBADD = pyembed/libcxpyconvert.la $(PYTHON_EMBED_LIBS)

# Python values as JSON, the one converter of them: linked into the
# runtime above and into the Python binding (python/python.mk).
noinst_LTLIBRARIES += pyembed/libcxpyconvert.la
pyembed_libcxpyconvert_la_SOURCES = pyembed/convert.c pyembed/convert.h
pyembed_libcxpyconvert_la_CFLAGS = $(PLUGIN_CFLAGS) $(PYTHON_EMBED_CFLAGS)

BUILT_SOURCES += $(PYEMBED_GENERATED)
CLEANFILES += $(PYEMBED_GENERATED)
EXTRA_DIST += pyembed/errors.py pyembed/helper.py pyembed/ipython_shell.py pyembed/kernel.py \
	pyembed/requests.py pyembed/executor.py
# (Two patterns: GNU make matches a pattern without a slash against the
# file name alone, and would look for the .py under the target's directory.)
cx_py_to_c = $(MKDIR_P) $(@D) && { \
	  echo '/* Generated from $(<:$(srcdir)/%=%) by pyembed/pyembed.mk: do not edit. */'; \
	  echo 'static const char cx__py_$(notdir $*)_source[] ='; \
	  $(SED) -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/  "/' -e 's/$$/\\n"/' $<; \
	  echo '  ;'; \
	} > $@.tmp && mv $@.tmp $@
pyembed/%-py.h: $(srcdir)/pyembed/%.py $(srcdir)/pyembed/pyembed.mk
	$(AM_V_GEN)$(cx_py_to_c)
plugins/%-py.h: $(srcdir)/plugins/%.py $(srcdir)/pyembed/pyembed.mk
	$(AM_V_GEN)$(cx_py_to_c)
