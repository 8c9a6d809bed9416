/* plugins/subprocess/worker/worker.h: what the files of cellexec-worker
 * share.  The worker is a fork server: see forkserver.c for the process
 * tree and docs/worker-protocol.md for the messages. */
#ifndef CX_WORKER_H
#define CX_WORKER_H

#include <signal.h>
#include <sys/types.h>

#include <cellexec/common.h>

#include "plugins/subprocess/frame.h"

G_BEGIN_DECLS

/* ---- limits.c: resource limits of a cell's process ------------------------ */

typedef struct {
  guint64 memory_bytes;     /* RLIMIT_AS; 0: none */
  guint64 cpu_seconds;      /* RLIMIT_CPU, per cell; 0: none */
  guint64 processes;        /* RLIMIT_NPROC; 0: none */
  guint64 file_size_bytes;  /* RLIMIT_FSIZE; 0: none */
} cx_worker_limits;

/* Read the "limits" object of an open request (NULL: no limits). */
gboolean cx_worker_limits_parse(JsonObject *object, cx_worker_limits *limits, GError **error);
/* Apply the limits that hold for the process's whole life; core dumps off. */
gboolean cx_worker_limits_apply(const cx_worker_limits *limits, GError **error);
/* Before each cell: allow it cpu_seconds more CPU time than used so far.
 * ONE_SHOT: the process runs one cell, so a hard limit backs the soft one
 * (a session's cannot: a lowered hard limit never rises again). */
gboolean cx_worker_limits_arm_cpu(const cx_worker_limits *limits, gboolean one_shot,
                                  GError **error);

/* ---- reaper.c: leave no process behind ----------------------------------- */

/* Kill (SIGKILL) and reap every descendant of this process, which must be
 * a child subreaper so that orphaned descendants become its children. */
void cx_worker_kill_descendants(void);
/* The fork server's sweep: kill and reap every child that is not in
 * KEEP (pid -> anything), i.e. orphans adopted from dead cells, until none
 * is left. */
void cx_worker_kill_orphans(GHashTable *keep);

/* ---- channel.c: the process that serves one cell or one session ---------- */

/* The cell every process runs first: the server before forking, each
 * spare after (see prewarm() in channel.c). */
#define CX_WORKER_PREWARM_CELL "None"

/* In a spare, a child the fork server forked ahead of need: set up, then
 * wait on SERVER_SOCKET for an open request ({"kind", "limits",
 * "output_limit", "cell"}) and the channel that comes with it, serve that
 * channel as the request says, and exit.  SERVER is the server's pid. */
G_GNUC_NORETURN void cx_worker_spare_main(int server_socket, pid_t server);

/* For os._exit in a cell: send the output seen so far first. */
void cx_worker_before_exit(int status);

/* ---- executor_worker.c: executor operations in a session's process ------- */

typedef struct cx_worker_executor cx_worker_executor;

/* Serves a frame of a session's channel other than an executor request
 * (a cell); FALSE when it is not one the session takes. */
typedef gboolean (*cx_worker_frame_handler)(guint8 type, const guint8 *payload, gsize len,
                                            gpointer user_data);

/* The executor of a session's process on CHANNEL (written under
 * WRITE_LOCK, read with READER, both borrowed).  While a host function
 * waits for the host, the other frames that come go to OTHER_FRAMES. */
cx_worker_executor *cx_worker_executor_new(int channel, GMutex *write_lock,
                                           cx_frame_reader *reader,
                                           cx_worker_frame_handler other_frames,
                                           gpointer other_frames_data);

/* Serve one EXECUTOR_REQUEST (PAYLOAD, valid until the reader is used
 * again) and send its reply. */
void cx_worker_executor_serve(cx_worker_executor *executor, const guint8 *payload, gsize len);

/* ---- worker_main.c: signals ------------------------------------------------ */

/* TRUE while this process runs a cell: SIGINT interrupts it then, and is
 * ignored otherwise. */
extern volatile sig_atomic_t cx_worker_cell_running;
/* How many SIGINTs reached a running cell (to drop a late one after it). */
extern volatile sig_atomic_t cx_worker_interrupts;

/* ---- forkserver.c ----------------------------------------------------------- */

/* Serve the control channel CONTROL until the host closes it. */
int cx_worker_serve(int control);

G_END_DECLS

#endif /* CX_WORKER_H */
