/* A real jupyter_server on 127.0.0.1 with a token, for gateway mode:
 * shared by tests/test_jupyter.c and bench/bench_jupyter.c. */
#ifndef CX_TEST_JUPYTER_SERVER_H
#define CX_TEST_JUPYTER_SERVER_H

#include <glib.h>

/* A TCP port on 127.0.0.1 that was free a moment ago. */
int jupyter_server_free_port(void);
/* TRUE when something accepts connections on 127.0.0.1:PORT. */
gboolean jupyter_server_port_open(int port);
/* Start `PYTHON -m jupyter_server` on 127.0.0.1:PORT with TOKEN, its root
 * ROOT, its kernels' connection files in RUNTIME_DIR (NULL: the default),
 * quiet, as root too; wait (60 s at most) until it accepts connections.
 * Its pid (reap it), or 0 with ERROR set. */
GPid jupyter_server_start(const char *python, int port, const char *token, const char *root,
                          const char *runtime_dir, GError **error);

#endif
