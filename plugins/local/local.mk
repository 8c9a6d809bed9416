# plugins/local: build rules (see top-level Makefile.am)
