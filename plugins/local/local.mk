# plugins/local: the `local` backend, CPython embedded in the host process.
# The Python work lives in pyembed/libcxpyembed.la; this is the ABI glue.
plugins_LTLIBRARIES += plugins/local.la
plugins_local_la_SOURCES = plugins/local/local.c
plugins_local_la_CFLAGS = $(PLUGIN_CFLAGS)
plugins_local_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_local_la_LIBADD = pyembed/libcxpyembed.la $(PLUGIN_LIBADD) $(PYTHON_EMBED_LIBS)
EXTRA_DIST += plugins/local/README.md
