# pyembed: the executor operations (executor.c, and executor.py compiled in
# as a C string), part of libcxpyembed.la.
pyembed_libcxpyembed_la_SOURCES += pyembed/executor.h pyembed/executor.c
nodist_pyembed_libcxpyembed_la_SOURCES += pyembed/executor-py.h
BUILT_SOURCES += pyembed/executor-py.h
CLEANFILES += pyembed/executor-py.h
EXTRA_DIST += pyembed/executor.py
pyembed/executor-py.h: $(srcdir)/pyembed/executor.py $(srcdir)/pyembed/executor.mk
	$(AM_V_GEN)$(MKDIR_P) pyembed && { \
	  echo '/* Generated from pyembed/executor.py by pyembed/executor.mk: do not edit. */'; \
	  echo 'static const char cx__pyembed_executor_source[] ='; \
	  $(SED) -e 's/\\/\\\\/g' -e 's/"/\\"/g' -e 's/^/  "/' -e 's/$$/\\n"/' \
	    $(srcdir)/pyembed/executor.py; \
	  echo '  ;'; \
	} > $@.tmp && mv $@.tmp $@
