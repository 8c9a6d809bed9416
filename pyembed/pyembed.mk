# pyembed: the embedded-CPython runtime, a convenience library shared by the
# local backend (plugins/local) and, later, the subprocess worker.
noinst_LTLIBRARIES += pyembed/libcxpyembed.la
pyembed_libcxpyembed_la_SOURCES = \
	pyembed/pyembed.h \
	pyembed/pyembed-private.h \
	pyembed/runtime.c \
	pyembed/running.c \
	pyembed/capture.c \
	pyembed/convert.c \
	pyembed/display.c \
	pyembed/native.c \
	pyembed/cell.c
nodist_pyembed_libcxpyembed_la_SOURCES = pyembed/helper-py.h
# -I$(top_builddir): the generated pyembed/helper-py.h.
pyembed_libcxpyembed_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)
pyembed_libcxpyembed_la_CFLAGS = $(PLUGIN_CFLAGS) $(PYTHON_EMBED_CFLAGS)
pyembed_libcxpyembed_la_LIBADD = $(PYTHON_EMBED_LIBS)

# helper.py, the Python half of the runtime, compiled in as a C string.
BUILT_SOURCES += pyembed/helper-py.h
CLEANFILES += pyembed/helper-py.h
EXTRA_DIST += pyembed/helper.py
pyembed/helper-py.h: $(srcdir)/pyembed/helper.py $(srcdir)/pyembed/pyembed.mk
	$(AM_V_GEN)$(MKDIR_P) pyembed && { \
	  echo '/* Generated from pyembed/helper.py by pyembed/pyembed.mk: do not edit. */'; \
	  echo 'static const char cx__pyembed_helper_source[] ='; \
	  $(SED) -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/  "/' -e 's/$$/\\n"/' \
	    $(srcdir)/pyembed/helper.py; \
	  echo '  ;'; \
	} > $@.tmp && mv $@.tmp $@
