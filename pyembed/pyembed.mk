# pyembed: build rules (see top-level Makefile.am)
