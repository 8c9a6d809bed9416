/* pyembed/running.c: the cells running now, and what reaches them from
 * outside: output of other threads, interrupts and timeouts.
 *
 * Interrupts and timeouts are Python exceptions raised asynchronously in the
 * cell's thread (PyThreadState_SetAsyncExc).  Python sees them at its next
 * bytecode boundary: a cell blocked in a C call (a read, a lock, a long
 * numpy operation) sees them only when the call returns.  helper.py makes
 * time.sleep() and top-level await wake up often enough to be interrupted.
 *
 * The list is changed only with the GIL held and running_lock taken, so
 * readers holding either one see a consistent list.  The watchdog thread
 * waits on running_lock alone and takes the GIL only to raise, after
 * letting go of the lock (lock order: GIL, then running_lock).
 */
#include "config.h"

#include <pthread.h>
#include <unistd.h>

#include "pyembed/pyembed-private.h"

static GMutex running_lock;
static GCond deadlines_changed;
static GQueue running = G_QUEUE_INIT;       /* of cx__py_cell, oldest first */
/* Never joined.  Kept here, not unreferenced: in a process a cell forks,
 * where the thread does not exist, nothing else would refer to it (memory
 * checkers call that a leak when the child exits). */
static GThread *watchdog;
static _Thread_local cx__py_cell *thread_cell; /* innermost cell of this thread */
/* The cell that started this thread (directly or through other threads),
 * by id; 0: none.  Set by helper.py's threading.Thread hook. */
static _Thread_local guint64 thread_origin;
static guint64 last_cell_id;                 /* with running_lock */
/* getpid(), kept current by at_fork_child: a cell's thread state, inherited
 * by a process the cell forks, is not that process's. */
static pid_t process_id;

/* The earliest deadline still ahead; *EXPIRED tells whether a cell that
 * has not timed out yet is past its own.  With running_lock held. */
static gint64
next_deadline(gint64 now, gboolean *expired)
{
  gint64 next = G_MAXINT64;
  *expired = FALSE;
  for (GList *l = running.head; l != NULL; l = l->next) {
    cx__py_cell *cell = l->data;
    if (cell->deadline == 0 || cell->timed_out)
      continue;
    if (cell->deadline <= now)
      *expired = TRUE;
    else
      next = MIN(next, cell->deadline);
  }
  return next;
}

static void
raise_timeouts(void)
{
  PyGILState_STATE gil = cx__py_gil_acquire();
  g_mutex_lock(&running_lock);
  gint64 now = g_get_monotonic_time();
  for (GList *l = running.head; l != NULL; l = l->next) {
    cx__py_cell *cell = l->data;
    if (cell->deadline != 0 && !cell->timed_out && cell->deadline <= now) {
      cell->timed_out = TRUE;
      cell->signalled = TRUE;
      PyThreadState_SetAsyncExc(cell->thread_id, PyExc_TimeoutError);
    }
  }
  g_mutex_unlock(&running_lock);
  cx__py_gil_release(gil);
}

static gpointer
watchdog_main(gpointer unused)
{
  g_mutex_lock(&running_lock);
  for (;;) {
    gboolean expired;
    gint64 next = next_deadline(g_get_monotonic_time(), &expired);
    if (expired) {
      g_mutex_unlock(&running_lock);
      raise_timeouts();
      g_mutex_lock(&running_lock);
    } else if (next == G_MAXINT64) {
      g_cond_wait(&deadlines_changed, &running_lock);
    } else {
      g_cond_wait_until(&deadlines_changed, &running_lock, next);
    }
  }
  return NULL;
}

static void
at_fork_child(void)
{
  process_id = getpid();
}

pid_t
cx__py_process_id(void)
{
  return process_id;
}

void
cx__py_running_begin(cx__py_cell *cell)
{
  cell->thread_id = PyThread_get_thread_ident();
  cell->pid = process_id;
  cell->timed_out = FALSE;
  cell->signalled = FALSE;
  cell->link = (GList){ .data = cell };
  cell->outer = thread_cell;
  thread_cell = cell;

  g_mutex_lock(&running_lock);
  cell->id = ++last_cell_id;
  g_queue_push_tail_link(&running, &cell->link);
  if (cell->deadline != 0) {
    if (watchdog == NULL) {
      /* One thread for the whole process, started by the first deadline. */
      watchdog = g_thread_new("cellexec-watchdog", watchdog_main, NULL);
    }
    g_cond_signal(&deadlines_changed);
  }
  g_mutex_unlock(&running_lock);
}

/* Raise, and drop, an interrupt or timeout sent to this thread that it has
 * not raised yet (it came after the cell's last bytecode).  Not by
 * PyThreadState_SetAsyncExc(id, NULL): on CPython 3.11 that leaves the
 * interpreter's eval breaker set with nothing to handle, which costs every
 * later loop iteration a check of pending work, and hangs any code run
 * under a trace or profile function (cProfile, %prun, coverage, pdb): the
 * traced RESUME instruction re-checks the breaker forever.  Running one
 * bytecode lets the interpreter raise the exception and clear its flag. */
static void
drop_late_exception(void)
{
  static PyObject *code, *globals; /* "None", compiled once */
  if (code == NULL) {
    code = Py_CompileString("None", "<cellexec>", Py_eval_input);
    globals = PyDict_New();
    if (code == NULL || globals == NULL) {
      PyErr_Clear();
      Py_CLEAR(code);
      Py_CLEAR(globals);
      PyThreadState_SetAsyncExc(PyThread_get_thread_ident(), NULL); /* no memory: at least drop it */
      return;
    }
  }
  PyObject *type, *value, *traceback;
  PyErr_Fetch(&type, &value, &traceback);
  PyObject *done = PyEval_EvalCode(code, globals, globals);
  Py_XDECREF(done);
  PyErr_Clear();
  PyErr_Restore(type, value, traceback);
}

void
cx__py_running_end(cx__py_cell *cell)
{
  g_mutex_lock(&running_lock);
  g_queue_unlink(&running, &cell->link);
  g_mutex_unlock(&running_lock);
  thread_cell = cell->outer;
  /* An exception set after the cell's last bytecode would otherwise be
   * raised in whatever Python code this thread runs next.  (Nothing can
   * be sent to the cell from here on: the list no longer has it, and
   * senders hold the GIL, which this thread holds.) */
  if (cell->outer == NULL && cell->signalled)
    drop_late_exception();
}

/* The running cell with ID, or NULL; with the GIL held. */
static cx__py_cell *
running_cell(guint64 id)
{
  for (GList *l = running.tail; l != NULL; l = l->prev)
    if (((cx__py_cell *)l->data)->id == id)
      return l->data;
  return NULL;
}

cx__py_cell *
cx__py_output_cell(void)
{
  cx__py_cell *cell = thread_cell;
  if (cell == NULL)
    cell = thread_origin != 0 ? running_cell(thread_origin)
                              : running.tail != NULL ? running.tail->data : NULL;
  /* In a process a cell forked, the cell is the parent's. */
  return cell != NULL && cell->pid == process_id ? cell : NULL;
}

gboolean
cx__py_output_orphaned(void)
{
  return thread_cell == NULL && thread_origin != 0 && running_cell(thread_origin) == NULL;
}

gboolean
cx__py_in_cell(void)
{
  return thread_cell != NULL && thread_cell->pid == process_id;
}

/* ---- _cellexec_native functions of this file ------------------------------- */

/* thread_origin() -> int | None: what a thread started now inherits: the
 * cell the calling thread runs, else the one that started it. */
static PyObject *
native_thread_origin(PyObject *module, PyObject *unused)
{
  if (cx__py_in_cell())
    return PyLong_FromUnsignedLongLong(thread_cell->id);
  if (thread_origin != 0)
    return PyLong_FromUnsignedLongLong(thread_origin);
  return Py_NewRef(Py_None);
}

/* adopt_origin(id): the calling thread (just started) belongs to cell ID. */
static PyObject *
native_adopt_origin(PyObject *module, PyObject *id)
{
  unsigned long long value = PyLong_AsUnsignedLongLong(id);
  if (value == (unsigned long long)-1 && PyErr_Occurred())
    return NULL;
  if (thread_origin == 0 && value != 0)
    cx__py_capture_thread_begin();
  thread_origin = value;
  return Py_NewRef(Py_None);
}

/* release_origin(): the calling thread, adopted by a cell, is ending. */
static PyObject *
native_release_origin(PyObject *module, PyObject *unused)
{
  if (thread_origin != 0)
    cx__py_capture_thread_end();
  thread_origin = 0;
  return Py_NewRef(Py_None);
}

static PyMethodDef running_methods[] = {
  { "thread_origin", native_thread_origin, METH_NOARGS,
    "The cell a thread started now belongs to (an id), or None." },
  { "adopt_origin", native_adopt_origin, METH_O,
    "adopt_origin(id): the calling thread belongs to the cell ID." },
  { "release_origin", native_release_origin, METH_NOARGS,
    "The calling thread, adopted by a cell, is ending." },
  { NULL }
};

gboolean
cx__py_running_init(void)
{
  process_id = getpid();
  if (pthread_atfork(NULL, NULL, at_fork_child) != 0)
    return FALSE;
  PyObject *native = PyDict_GetItemString(PyImport_GetModuleDict(), "_cellexec_native");
  return native != NULL && PyModule_AddFunctions(native, running_methods) == 0 &&
         cx__py_signals_init(native);
}

void
cx__py_interrupt(const void *owner)
{
  g_mutex_lock(&running_lock);
  gboolean idle = g_queue_is_empty(&running); /* also: Python may not be started */
  g_mutex_unlock(&running_lock);
  if (idle)
    return;

  PyGILState_STATE gil = cx__py_gil_acquire();
  g_mutex_lock(&running_lock);
  for (GList *l = running.head; l != NULL; l = l->next) {
    cx__py_cell *cell = l->data;
    if (cell->owner == owner) {
      cell->signalled = TRUE;
      PyThreadState_SetAsyncExc(cell->thread_id, PyExc_KeyboardInterrupt);
    }
  }
  g_mutex_unlock(&running_lock);
  cx__py_gil_release(gil);
}
