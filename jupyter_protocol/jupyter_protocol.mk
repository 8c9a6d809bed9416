# jupyter_protocol: the Jupyter messaging protocol that both sides share,
# the jupyter backend (a client of kernels) and `cellexec kernel` (a
# kernel): the codec of messages (framing, HMAC signing, parsing), their
# frames on ZeroMQ sockets, and cellexec's outputs as IOPub messages.  A convenience library linked into each;
# plugins do not depend on each other, and it is outside libcellexec's ABI.
if HAVE_ZMQ
noinst_LTLIBRARIES += jupyter_protocol/libcxjupyter.la
jupyter_protocol_libcxjupyter_la_SOURCES = \
	jupyter_protocol/message.c \
	jupyter_protocol/message.h \
	jupyter_protocol/outputs.c \
	jupyter_protocol/outputs.h \
	jupyter_protocol/zmq_frames.c \
	jupyter_protocol/zmq_frames.h
jupyter_protocol_libcxjupyter_la_CFLAGS = $(PLUGIN_CFLAGS) $(ZMQ_CFLAGS)
endif
