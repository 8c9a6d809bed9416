# server/: `cellexec serve`, the backends over HTTP (libsoup 3): Jupyter
# Server's kernels API, each kernel served by kernel/'s request handling.
# A convenience library of the cellexec program.
if HAVE_SERVE
noinst_LTLIBRARIES += server/libcxserver.la
server_libcxserver_la_SOURCES = \
	server/server.h \
	server/server-private.h \
	server/http.c \
	server/accept.h \
	server/accept.c \
	server/request_head.h \
	server/request_head.c \
	server/kernels.c \
	server/websocket.c \
	server/channels.c \
	server/e2b.c \
	server/ending.c \
	server/request_body.c
server_libcxserver_la_CFLAGS = $(AM_CFLAGS) $(SOUP_CFLAGS) $(ZMQ_CFLAGS)
# kernel/libcxkernel.la, which brings the protocol library, is the
# program's already (tools/tools.mk).
server_libcxserver_la_LIBADD = $(SOUP_LIBS)
endif
