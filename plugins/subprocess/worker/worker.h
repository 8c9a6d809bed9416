/* plugins/subprocess/worker/worker.h: what the files of cellexec-worker
 * share.  The worker is a fork server: see forkserver.c for the process
 * tree and docs/worker-protocol.md for the messages. */
#ifndef CX__WORKER_H
#define CX__WORKER_H

#include <signal.h>
#include <sys/types.h>

#include <cellexec/common.h>

#include "plugins/subprocess/wire/frame.h"
#include "pyembed/pyembed.h"

G_BEGIN_DECLS

/* ---- limits.c: resource limits of a cell's process ------------------------ */

typedef struct {
  guint64 memory_bytes;     /* RLIMIT_AS; 0: none */
  guint64 cpu_seconds;      /* RLIMIT_CPU, per cell; 0: none */
  guint64 processes;        /* RLIMIT_NPROC; 0: none */
  guint64 file_size_bytes;  /* RLIMIT_FSIZE; 0: none */
  guint64 open_files;       /* RLIMIT_NOFILE; 0: unchanged */
} cx__worker_limits;

/* Read the "limits" object of an open request (NULL: no limits). */
gboolean cx__worker_limits_parse(JsonObject *object, cx__worker_limits *limits, GError **error);
/* Apply the limits that hold for the process's whole life; core dumps off. */
gboolean cx__worker_limits_apply(const cx__worker_limits *limits, GError **error);
/* Before each cell: allow it cpu_seconds more CPU time than used so far.
 * ONE_SHOT: the process runs one cell, so a hard limit backs the soft one
 * (a session's cannot: a lowered hard limit never rises again). */
gboolean cx__worker_limits_arm_cpu(const cx__worker_limits *limits, gboolean one_shot,
                                   GError **error);

/* ---- reaper.c: leave no process behind ----------------------------------- */

/* Kill (SIGKILL) and reap every descendant of this process, which must be
 * a child subreaper so that orphaned descendants become its children. */
void cx__worker_kill_descendants(void);
/* The fork server's sweep: kill and reap every child that is not in
 * KEEP (pid -> anything), i.e. orphans adopted from dead cells, until none
 * is left. */
void cx__worker_kill_orphans(GHashTable *keep);

/* ---- cell_process.c: the process that serves one cell or one session ----- */

/* In a spare, a child the fork server forked ahead of need: set up, then
 * wait on SERVER_SOCKET for an open request ({"kind", "limits",
 * "output_limit", "cell"}) and the channel that comes with it, serve that
 * channel as the request says, and exit.  SERVER is the server's pid. */
G_GNUC_NORETURN void cx__worker_spare_main(int server_socket, pid_t server);

/* Parse a request and serialise SAMPLE as a result, as every cell process
 * will.  json-glib initialises its classes and the process faults in their
 * code on first use: done in the fork server before it forks, every
 * process forked later shares that work instead of paying for it (about
 * 0.1 ms of CPU each, bench/README.md); done again in each spare, it takes
 * the copy-on-write faults before the cell is asked for. */
void cx__worker_warm_cell_paths(const cx_result *sample);

/* For os._exit in a cell: send the output seen so far first. */
void cx__worker_before_exit(int status);

/* ---- executor_worker.c: executor operations in a session's process ------- */

typedef struct cx__worker_executor cx__worker_executor;

/* Serves a frame of a session's channel other than an executor request
 * (a cell); FALSE when it is not one the session takes. */
typedef gboolean (*cx__worker_frame_handler)(guint8 type, const guint8 *payload, gsize len,
                                             gpointer user_data);

/* The executor of a session's process on CHANNEL (written under
 * WRITE_LOCK, read with READER, both borrowed), for SESSION (borrowed: the
 * namespace Jupyter requests are answered in).  While a host function
 * waits for the host, the other frames that come go to OTHER_FRAMES. */
cx__worker_executor *cx__worker_executor_new(int channel, GMutex *write_lock,
                                             cx__wire_reader *reader, cx__py_session *session,
                                             cx__worker_frame_handler other_frames,
                                             gpointer other_frames_data);

/* Serve one EXECUTOR_REQUEST (PAYLOAD, valid until the reader is used
 * again) and send its reply. */
void cx__worker_executor_serve(cx__worker_executor *executor, const guint8 *payload, gsize len);

/* ---- interrupt.c: signals ------------------------------------------------- */

/* Signals as python3 sets them up (SIGPIPE and SIGXFSZ ignored, SIGINT
 * routed to the running cell), the ones the host may have changed reset. */
gboolean cx__worker_set_up_signals(GError **error);
/* TRUE while this process runs a cell: SIGINT interrupts it then.
 * Otherwise a SIGINT is kept for the cell this process was asked to run
 * next (the host may interrupt a cell the moment it starts, before its
 * code runs): cx__worker_take_interrupt() gives it to that cell, and
 * cx__worker_forget_interrupt() drops one kept from before a request. */
extern volatile sig_atomic_t cx__worker_cell_running;
void cx__worker_forget_interrupt(void);
void cx__worker_take_interrupt(void);
/* How many SIGINTs reached a running cell (to drop a late one after it). */
extern volatile sig_atomic_t cx__worker_interrupts;

/* ---- sandbox.c, seccomp.c: isolation = sandbox ----------------------------- */

/* TRUE once cx__worker_sandbox_enter() succeeded in this process. */
extern gboolean cx__worker_sandboxed;
/* The maker of PID namespaces (pid_namespace.c: a child of the fork
 * server, never killed as an orphan), or 0. */
extern pid_t cx__worker_pid_namespace_maker;

/* Apply the sandbox SPEC (JSON from the host: "network", "read_only",
 * "writable", "hidden", "cwd", "memory", "processes"); append the name of
 * each measure applied to MEASURES.  Single-threaded, before Python. */
gboolean cx__worker_sandbox_enter(const char *spec, GPtrArray *measures, GError **error);
/* First thing in a spare, before any Python runs in it: its own /tmp,
 * the cells' user, no capabilities, a Landlock domain of its own, the
 * seccomp filter.  FALSE (and *ERROR) when one of them cannot be had: the
 * spare must then run nothing, only report it. */
gboolean cx__worker_sandbox_confine(GError **error);
/* After it: the HOME cells get ("/tmp", their own, when the one inherited
 * is not writable by them), or NULL to keep the one they have. */
const char *cx__worker_sandbox_home(void);
/* cgroup.c.  Before pivot_root: the worker's cgroup (v2, else v1 memory
 * and pids), whose limits each spare's own cgroup gets: MEMORY and
 * PROCESSES (0: none); the measures' names appended to MEASURES. */
gboolean cx__worker_cgroups_open(guint64 memory, guint64 processes, GPtrArray *measures,
                                 GError **error);
/* In the fork server, right after forking PID: its cgroup of its own. */
gboolean cx__worker_sandbox_adopt(pid_t pid, GError **error);
/* When PID has ended: kill what is left in its cgroup, remove it. */
void cx__worker_sandbox_release(pid_t pid);
/* At the fork server's end: release every cell's cgroup, then the
 * worker's own. */
void cx__worker_sandbox_finish(void);
/* The bounding and ambient sets emptied, securebits locked, no new
 * privileges; and every capability dropped unless KEEP_CAPABILITIES. */
gboolean cx__worker_drop_privileges(gboolean keep_capabilities, GError **error);
/* pid_namespace.c.  Before pivot_root: start the maker of PID namespaces. */
gboolean cx__worker_pid_namespaces_start(GError **error);
/* FORK_FUNCTION (fork, cx__py_fork) into a new PID namespace once the
 * maker is started, else as it is; -1 with *ERROR. */
pid_t cx__worker_fork_in_new_namespace(pid_t (*fork_function)(void), GError **error);
/* When the process PID forked by it has ended: kill its namespace's init,
 * and with it what is left in the namespace. */
void cx__worker_pid_namespace_release(pid_t pid);
/* Compile the seccomp filter (seccomp.c), once, in the fork server. */
gboolean cx__worker_seccomp_prepare(GError **error);
/* Load the compiled filter into this process (and set no_new_privs). */
gboolean cx__worker_seccomp_load(GError **error);
/* The same, less the rule against clone(CLONE_NEWPID): for the maker of
 * PID namespaces, whose inits inherit it. */
gboolean cx__worker_seccomp_load_for_maker(GError **error);

/* ---- private_cwd.c: cwd-per-session --------------------------------------- */

/* Give every process forked later a directory of its own under CWD, kept
 * when it ends if KEEP. */
void cx__worker_private_cwd_configure(const char *cwd, gboolean keep);
/* In the server, before a fork: make the next process's directory. */
gboolean cx__worker_private_cwd_prepare(GError **error);
/* In the server, after it: PID (<= 0: the fork failed) owns it. */
void cx__worker_private_cwd_adopt(pid_t pid);
/* In the process forked: its own directory, or NULL. */
const char *cx__worker_private_cwd(void);
/* In it, without the sandbox: work in that directory. */
gboolean cx__worker_private_cwd_enter(GError **error);
/* In the server, when PID has ended: remove its directory (unless kept). */
void cx__worker_private_cwd_release(pid_t pid);

/* ---- forkserver.c ----------------------------------------------------------- */

/* Serve the control channel CONTROL until the host closes it.  MEASURES
 * (NULL: none) are the sandbox's, for HELLO. */
int cx__worker_serve(int control, GPtrArray *measures);

G_END_DECLS

#endif /* CX__WORKER_H */
