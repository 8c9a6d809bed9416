/* plugins/subprocess/worker_process.h: starting and stopping a worker
 * (cellexec-worker) from the host. */
#ifndef CX__SP_WORKER_PROCESS_H
#define CX__SP_WORKER_PROCESS_H

#include <pthread.h>
#include <sys/types.h>

#include <cellexec/common.h>

G_BEGIN_DECLS

typedef struct {
  pid_t pid;
  int control;        /* the host's end of the control channel */
  JsonNode *hello;    /* the worker's HELLO payload */
  pthread_t relay;    /* a sandboxed worker's stderr relay (worker_process.c) */
  gboolean relaying;  /* RELAY runs and is to be joined */
} cx__sp_worker_process;

/* The environment a worker starts with: from the host's environment only
 * PATH, HOME, LANG, LC_*, TZ and TMPDIR (everything with INHERIT), then
 * CONFIGURED (KEY=VALUE, may be NULL) on top.  Free with g_strfreev. */
char **cx__sp_worker_environment(gboolean inherit, const char *const *configured);

/* Start PATH with ENVIRONMENT and wait for its HELLO.  ISOLATED is the
 * `python3 -I -S` mode; PRELOAD (may be NULL) the modules it imports before
 * forking, comma-separated; SANDBOX (may be NULL) the JSON description of
 * `isolation = sandbox` (worker/sandbox.c); MORE_ARGUMENTS (may be NULL)
 * are appended to its command line. */
cx__sp_worker_process *cx__sp_worker_process_start(const char *path, gboolean isolated,
                                                   const char *preload, const char *sandbox,
                                                   char **more_arguments, char **environment,
                                                   GError **error);

/* TRUE while the process runs (it is reaped once it ended).  A stopped
 * process (SIGSTOP, ptrace) is killed and reaped, and is not alive. */
gboolean cx__sp_worker_process_alive(cx__sp_worker_process *worker);

/* Close the control channel (the worker then kills its processes and
 * exits), wait a little, kill it if needed, reap it and free WORKER. */
void cx__sp_worker_process_stop(cx__sp_worker_process *worker);

G_END_DECLS

#endif /* CX__SP_WORKER_PROCESS_H */
