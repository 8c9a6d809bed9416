# kernel/: the server side of the Jupyter protocol, `cellexec kernel`'s
# core: a session answering a front end's requests (requests.c, the part
# the HTTP service will share) and its ZeroMQ transport (zmq_kernel.c).
# A convenience library of the cellexec program.
if HAVE_ZMQ
noinst_LTLIBRARIES += kernel/libcxkernel.la
kernel_libcxkernel_la_SOURCES = \
	kernel/kernel.h \
	kernel/requests.c \
	kernel/zmq_kernel.c \
	kernel/zmq_kernel.h
kernel_libcxkernel_la_CPPFLAGS = $(AM_CPPFLAGS) -DCX_DOCDIR='"$(docdir)"'
kernel_libcxkernel_la_CFLAGS = $(AM_CFLAGS) $(ZMQ_CFLAGS)
kernel_libcxkernel_la_LIBADD = jupyter_protocol/libcxjupyter.la lib/libcxoutput.la $(ZMQ_LIBS)
endif

# The kernel's logos, made by make_logo.py (no image tool needed), and the
# kernelspecs `make install` adds: cellexec (the subprocess backend) and
# cellexec-sandbox (isolation = sandbox), written by the cellexec just
# built, as `cellexec kernel install --prefix` writes them, naming the
# installed program.
kernellogodir = $(pkgdatadir)/kernel
KERNEL_LOGOS = kernel/logo-32x32.png kernel/logo-64x64.png
EXTRA_DIST += kernel/make_logo.py
if HAVE_ZMQ
nodist_kernellogo_DATA = $(KERNEL_LOGOS)
CLEANFILES += $(KERNEL_LOGOS)
kernel/logo-%.png: $(srcdir)/kernel/make_logo.py
	@$(MKDIR_P) kernel
	$(PYTHON) $(srcdir)/kernel/make_logo.py `echo $* | sed 's/x.*//'` $@

KERNELSPECS_DIR = $(DESTDIR)$(prefix)/share/jupyter/kernels
install-data-local: install-kernelspecs
install-kernelspecs: tools/cellexec $(KERNEL_LOGOS)
	tools/cellexec kernel install --prefix '$(DESTDIR)$(prefix)' --executable '$(bindir)/cellexec' \
	  --name cellexec -b subprocess --display-name 'Python (cellexec)' >/dev/null
	tools/cellexec kernel install --prefix '$(DESTDIR)$(prefix)' --executable '$(bindir)/cellexec' \
	  --name cellexec-sandbox -b subprocess -o isolation=sandbox \
	  --display-name 'Python (cellexec sandbox)' >/dev/null
	for spec in cellexec cellexec-sandbox; do \
	  $(INSTALL_DATA) $(KERNEL_LOGOS) '$(KERNELSPECS_DIR)'/$$spec/ || exit 1; \
	done
uninstall-local: uninstall-kernelspecs
uninstall-kernelspecs:
	rm -rf '$(KERNELSPECS_DIR)/cellexec' '$(KERNELSPECS_DIR)/cellexec-sandbox'
	-rmdir '$(KERNELSPECS_DIR)' '$(DESTDIR)$(prefix)/share/jupyter' 2>/dev/null
endif
.PHONY: install-kernelspecs uninstall-kernelspecs
