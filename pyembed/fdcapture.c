/* pyembed/fdcapture.c: file descriptors 1 and 2 while cells run.
 *
 * capture.c routes what Python code writes to sys.stdout / sys.stderr; what
 * is written to the descriptors themselves (os.write(1, ...), os.system(),
 * child processes, printf() in C extensions) goes around it.  So, as
 * ipykernel does, while a cell run with CX__PY_RUN_CAPTURE_FDS runs,
 * fds 1 and 2 of the process are the write ends of two pipes: the first
 * such cell installs them (dup2), the last one to end puts the original
 * descriptors back (nested and concurrent cells, as capture.c counts them).
 *
 * A reader thread drains the pipes into a pending buffer as bytes arrive,
 * without ever taking the GIL: a C extension that writes more than a pipe
 * holds while keeping the GIL, or a child writing megabytes while the cell
 * waits for it, never waits for Python.  Pending bytes go into the result
 * of cx__py_output_cell() at points that hold the GIL: every write to
 * sys.stdout / sys.stderr (capture.c), a display, the end of the cell and
 * the worker's streamer (process.c).  Each of them first reads what is in
 * the pipes already (one epoll_wait() that does not wait), so output keeps the
 * order it was written in: print('a'); os.system('echo b'); print('c')
 * gives a, b, c.  The pipes are read only with pipes->lock held, by the
 * reader or by a sync point, so two readers cannot reorder bytes.  Lock
 * order: the GIL, then pipes->lock.
 *
 * Output arriving while no capturing cell runs (a background process a
 * cell started, still writing after the cell ended) is read and dropped.
 * Keeping it for the next cell would hand that cell output it did not
 * write, at a point that depends on timing, and grow without bound for a
 * process that writes while the host runs no cells; letting it through to
 * the host's fds is what capturing exists to prevent.  While a capturing
 * cell runs, such output lands in that cell, as it does in ipykernel.
 *
 * The pipes and the reader are made by the first capturing cell of a
 * process, never earlier: the subprocess worker forks its cells from a
 * server that must stay single-threaded.  A process forked from one that
 * captures (a cell's os.fork()) leaves the inherited pipes alone and makes
 * its own if it runs a capturing cell of its own.  Without a reader thread
 * (RLIMIT_NPROC reached) or without pipes (out of descriptors), the fds
 * are left alone: a cell writing more than a pipe holds would block.
 */
#define _GNU_SOURCE /* pipe2 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "pyembed/pyembed-private.h"
#include "pyembed/pyembed-process.h"

/* Where the saved copies of fds 1 and 2 go (see save_fd). */
#define SAVED_FD_FLOOR 256
/* One read: a pipe's default capacity. */
#define CHUNK (64 * 1024)
/* Reads of one pipe per turn, so that a flood cannot keep a sync point
 * waiting for the lock. */
#define READS_PER_TURN 16
/* A pending buffer that grew past this is freed once delivered. */
#define KEEP_PENDING (1024 * 1024)

typedef struct {
  pid_t pid;               /* the process that made them */
  int read_end[3];         /* [1], [2]: non-blocking, close-on-exec */
  int write_end[3];        /* what fds 1 and 2 become while cells capture */
  /* Both read ends, level-triggered.  epoll_wait() with no timeout is the
   * cheapest way to ask whether a pipe has data: it only looks at a ready
   * list, where poll() asks each pipe, and sync points ask at every print. */
  int epoll_fd;
  GMutex lock;             /* held for every read of the pipes, and for: */
  gboolean collecting;     /* a cell captures: keep what is read, else drop it */
  gboolean broken;         /* a read end went away (a cell closed it) */
  GByteArray *pending;     /* read, not yet in a result, in the order read */
  GArray *segments;        /* of pending_segment: whose bytes pending holds */
  char *scratch;           /* CHUNK bytes to read into */
} fd_pipes;

/* A run of bytes of one stream in pending.  Both pipes go into one buffer,
 * so that stdout and stderr keep the order the reader saw them in. */
typedef struct {
  int fd;
  gsize len;
} pending_segment;

/* GIL-protected. */
static fd_pipes *pipes;                   /* made by this process or inherited */
static unsigned fd_users;                 /* capturing cells between begin and end */
static int saved_fds[3] = { -1, -1, -1 }; /* what fds 1 and 2 were; -1: left alone */

static gboolean
pipes_are_ours(void)
{
  return pipes != NULL && pipes->pid == cx__py_process_id();
}

/* Keep the LEN bytes just read from pipe FD into p->scratch.  With
 * p->lock held. */
static void
keep_locked(fd_pipes *p, int fd, gsize len)
{
  pending_segment *last =
    p->segments->len > 0 ? &g_array_index(p->segments, pending_segment, p->segments->len - 1)
                          : NULL;
  if (last != NULL && last->fd == fd) {
    last->len += len;
  } else {
    pending_segment segment = { fd, len };
    g_array_append_val(p->segments, segment);
  }
  g_byte_array_append(p->pending, (const guint8 *)p->scratch, (guint)len);
}

/* Read what pipe FD holds now, keeping it while a cell collects.  FALSE
 * when the read end is gone or at end of file (nobody can write any more).
 * With p->lock held. */
static gboolean
read_pipe_locked(fd_pipes *p, int fd)
{
  for (int turn = 0; turn < READS_PER_TURN; turn++) {
    ssize_t got = read(p->read_end[fd], p->scratch, CHUNK);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return errno == EAGAIN;
    if (got == 0)
      return FALSE;
    if (p->collecting)
      keep_locked(p, fd, (gsize)got);
    if (got < CHUNK)
      break; /* the rest, if any, arrived since: it can wait for the next look */
  }
  return TRUE;
}

/* Read the N pipes epoll_wait() found ready.  One that cannot be read any
 * more (a cell closed descriptors it did not own) leaves the set, so that
 * the reader does not spin on it, and marks P broken: the next cell makes
 * new pipes.  With p->lock held. */
static void
read_events_locked(fd_pipes *p, const struct epoll_event *events, int n)
{
  for (int i = 0; i < n; i++) {
    int fd = (int)events[i].data.u32;
    if (!read_pipe_locked(p, fd)) {
      p->broken = TRUE;
      epoll_ctl(p->epoll_fd, EPOLL_CTL_DEL, p->read_end[fd], NULL);
    }
  }
}

/* What the pipes hold already, without waiting.  With p->lock held. */
static void
read_ready_locked(fd_pipes *p)
{
  struct epoll_event events[2];
  int n = epoll_wait(p->epoll_fd, events, 2, 0);
  if (n < 0 && errno != EINTR)
    p->broken = TRUE; /* the cell closed our epoll descriptor */
  read_events_locked(p, events, n);
}

static void *
reader_main(void *data)
{
  fd_pipes *p = data;
  for (;;) {
    struct epoll_event events[2];
    int n = epoll_wait(p->epoll_fd, events, 2, -1);
    if (n < 0 && errno == EINTR)
      continue;
    g_mutex_lock(&p->lock);
    if (n < 0)
      p->broken = TRUE;
    else
      read_events_locked(p, events, n);
    g_mutex_unlock(&p->lock);
    if (n < 0)
      return NULL; /* the cell closed our epoll descriptor */
  }
}

/* FD moved to 3 or above (with fd 1 or 2 closed, a new descriptor could be
 * one of them), close-on-exec; -1 on failure (FD closed). */
static int
above_stdio(int fd)
{
  if (fd > 2)
    return fd;
  int moved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  close(fd);
  return moved;
}

static void
free_pipes(fd_pipes *p)
{
  for (int fd = 1; fd <= 2; fd++) {
    if (p->read_end[fd] >= 0)
      close(p->read_end[fd]);
    if (p->write_end[fd] >= 0)
      close(p->write_end[fd]);
  }
  if (p->epoll_fd >= 0)
    close(p->epoll_fd);
  g_byte_array_unref(p->pending);
  g_array_unref(p->segments);
  g_free(p->scratch);
  /* Not g_mutex_clear(): inherited through fork(), the lock may be held by
   * a thread that does not exist here. */
  g_free(p);
}

void
cx__py_fdcapture_reserve(void)
{
  /* The table grows to hold a descriptor numbered past its end.  In a
   * process with other threads the kernel first waits for an RCU grace
   * period (expand_fdtable(); about 10 ms on a virtual machine), and the
   * first capturing cell would wait for it in save_fd().  Growing it now,
   * as the only thread, costs a small allocation.  Any open descriptor
   * serves to make the copy. */
  for (int fd = 0; fd <= 2; fd++) {
    int probe = fcntl(fd, F_DUPFD_CLOEXEC, SAVED_FD_FLOOR + 2);
    if (probe >= 0) {
      close(probe);
      return;
    }
  }
}

/* New pipes with their reader, or NULL. */
static fd_pipes *
new_pipes(void)
{
  fd_pipes *p = g_new0(fd_pipes, 1);
  p->pid = cx__py_process_id();
  g_mutex_init(&p->lock);
  p->scratch = g_malloc(CHUNK);
  p->pending = g_byte_array_new();
  p->segments = g_array_new(FALSE, FALSE, sizeof(pending_segment));
  int epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  p->epoll_fd = epoll_fd >= 0 ? above_stdio(epoll_fd) : -1;
  gboolean ok = p->epoll_fd >= 0;
  for (int fd = 1; fd <= 2; fd++) {
    int ends[2] = { -1, -1 };
    if (ok && pipe2(ends, O_CLOEXEC) < 0)
      ok = FALSE;
    p->read_end[fd] = ends[0] >= 0 ? above_stdio(ends[0]) : -1;
    p->write_end[fd] = ends[1] >= 0 ? above_stdio(ends[1]) : -1;
    /* The write end stays blocking: fds 1 and 2 will share its file
     * description, and writers expect a blocking stdout. */
    struct epoll_event readable = { .events = EPOLLIN, .data.u32 = (guint32)fd };
    ok = ok && p->read_end[fd] >= 0 && p->write_end[fd] >= 0 &&
         fcntl(p->read_end[fd], F_SETFL, O_NONBLOCK) == 0 &&
         epoll_ctl(p->epoll_fd, EPOLL_CTL_ADD, p->read_end[fd], &readable) == 0;
  }
  /* Before the reader exists: then a process that had no other thread
   * grows its table without waiting (see cx__py_fdcapture_reserve). */
  cx__py_fdcapture_reserve();
  if (!ok || cx__py_start_thread(reader_main, p) != 0) {
    g_mutex_clear(&p->lock);
    free_pipes(p);
    return NULL;
  }
  return p;
}

/* This process's pipes, made if needed; NULL if they cannot be. */
static fd_pipes *
our_pipes(void)
{
  if (pipes_are_ours()) {
    g_mutex_lock(&pipes->lock);
    gboolean broken = pipes->broken;
    g_mutex_unlock(&pipes->lock);
    if (!broken)
      return pipes;
    /* Its reader may still run: leave it be (a cell closed descriptors
     * that were not its own; they may be someone else's by now). */
  } else if (pipes != NULL) {
    free_pipes(pipes); /* inherited: the descriptors are this process's copies */
  }
  pipes = new_pipes();
  return pipes;
}

/* Flush sys.__stdout__ / sys.__stderr__: Python-level output buffered in
 * the process's own streams.  May let go of the GIL (a blocking write). */
static void
flush_python_stdio(void)
{
  static const char *const names[] = { "__stdout__", "__stderr__" };
  static PyObject *flush_name;
  if (flush_name == NULL && (flush_name = PyUnicode_InternFromString("flush")) == NULL) {
    PyErr_Clear();
    return;
  }
  for (gsize i = 0; i < G_N_ELEMENTS(names); i++) {
    PyObject *stream = PySys_GetObject(names[i]); /* borrowed */
    if (stream == NULL || stream == Py_None)
      continue;
    Py_INCREF(stream);
    PyObject *done = PyObject_CallMethodNoArgs(stream, flush_name);
    if (done == NULL)
      PyErr_Clear(); /* closed or broken: the host's business */
    Py_XDECREF(done);
    Py_DECREF(stream);
  }
}

static void
flush_c_stdio(void)
{
  fflush(stdout);
  fflush(stderr);
}

/* Move what has been read into CELL's streams.  With the GIL and p->lock
 * held. */
static void
deliver_locked(fd_pipes *p, cx__py_cell *cell)
{
  if (p->segments->len == 0)
    return;
  const char *data = (const char *)p->pending->data;
  for (guint i = 0; i < p->segments->len; i++) {
    pending_segment *segment = &g_array_index(p->segments, pending_segment, i);
    cx__py_note_stream(cell, segment->fd);
    if (segment->fd == 1)
      cx_result_append_stdout(cell->result, data, (gssize)segment->len);
    else
      cx_result_append_stderr(cell->result, data, (gssize)segment->len);
    data += segment->len;
  }
  g_array_set_size(p->segments, 0);
  if (p->pending->len > KEEP_PENDING) {
    g_byte_array_unref(p->pending);
    p->pending = g_byte_array_new();
  } else {
    g_byte_array_set_size(p->pending, 0);
  }
}

void
cx__py_fdcapture_deliver(cx__py_cell *cell)
{
  if (fd_users == 0 || !pipes_are_ours())
    return;
  if (cell == NULL && (cell = cx__py_output_cell()) == NULL)
    return; /* kept until a cell is there to take it */
  g_mutex_lock(&pipes->lock);
  read_ready_locked(pipes);
  deliver_locked(pipes, cell);
  g_mutex_unlock(&pipes->lock);
}

/* A copy of FD to put back when the cell ends, close-on-exec.  Numbered
 * high: a cell that closes descriptors it does not own and opens files
 * would otherwise be likely to get our copy's number for one of them, and
 * the host's stdout would be restored onto the cell's file. */
static int
save_fd(int fd)
{
  int saved = fcntl(fd, F_DUPFD_CLOEXEC, SAVED_FD_FLOOR);
  if (saved < 0 && errno == EINVAL) /* RLIMIT_NOFILE below the floor */
    saved = fcntl(fd, F_DUPFD_CLOEXEC, 3);
  return saved;
}

void
cx__py_fdcapture_begin(cx__py_run_flags flags)
{
  if (!(flags & CX__PY_RUN_CAPTURE_FDS))
    return;
  /* The host's buffered output goes to the host's fds, not into the cell. */
  if (fd_users == 0)
    flush_python_stdio();
  /* Counted before anything else: from here to the end of this function
   * the GIL is never let go, so no other cell installs or restores. */
  if (fd_users++ > 0)
    return;
  flush_c_stdio();
  fd_pipes *p = our_pipes();
  if (p == NULL)
    return; /* no capture, but the cell runs */
  g_mutex_lock(&p->lock);
  /* What background writers left in the pipes since the last cell is not
   * this cell's: read with collecting off, it is dropped. */
  read_ready_locked(p);
  p->collecting = TRUE;
  g_mutex_unlock(&p->lock);
  for (int fd = 1; fd <= 2; fd++) {
    /* A closed fd 1 or 2 stays closed: nothing to capture, nothing to restore. */
    saved_fds[fd] = save_fd(fd);
    if (saved_fds[fd] >= 0 && dup2(p->write_end[fd], fd) < 0) {
      close(saved_fds[fd]);
      saved_fds[fd] = -1;
    }
  }
}

void
cx__py_fdcapture_end(cx__py_run_flags flags, cx__py_cell *cell)
{
  if (!(flags & CX__PY_RUN_CAPTURE_FDS))
    return;
  /* The cell's buffered output, into the pipes while they are in place:
   * cx__py_capture_end() has just flushed sys.__stdout__ and
   * sys.__stderr__ (letting go of the GIL if it wrote: another cell may
   * have begun meanwhile, and then restores when it ends); C stdio here. */
  flush_c_stdio();
  if (fd_users > 1) {
    fd_users--;
    cx__py_fdcapture_deliver(cell);
    return;
  }
  for (int fd = 1; fd <= 2; fd++) {
    if (saved_fds[fd] < 0)
      continue;
    if (dup2(saved_fds[fd], fd) < 0) {
      /* The cell closed our copy (os.closerange): the original is gone.
       * /dev/null, rather than a pipe nobody may read any more, whose
       * SIGPIPE would end the host. */
      int null = open("/dev/null", O_WRONLY); /* fd itself, if free: inherited by children */
      if (null >= 0 && null != fd) {
        dup2(null, fd);
        close(null);
      }
    }
    close(saved_fds[fd]);
    saved_fds[fd] = -1;
  }
  if (pipes_are_ours()) {
    /* Everything written before the restore is in the pipes or read. */
    g_mutex_lock(&pipes->lock);
    read_ready_locked(pipes);
    deliver_locked(pipes, cell);
    pipes->collecting = FALSE;
    g_mutex_unlock(&pipes->lock);
  }
  fd_users = 0;
}
