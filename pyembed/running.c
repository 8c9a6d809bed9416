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

#include "pyembed/pyembed-private.h"

static GMutex running_lock;
static GCond deadlines_changed;
static GQueue running = G_QUEUE_INIT;       /* of cx__pyembed_cell, oldest first */
static gboolean watchdog_running;
static _Thread_local cx__pyembed_cell *thread_cell; /* innermost cell of this thread */

/* The earliest deadline still ahead; *EXPIRED tells whether a cell that
 * has not timed out yet is past its own.  With running_lock held. */
static gint64
next_deadline(gint64 now, gboolean *expired)
{
  gint64 next = G_MAXINT64;
  *expired = FALSE;
  for (GList *l = running.head; l != NULL; l = l->next) {
    cx__pyembed_cell *cell = l->data;
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
  PyGILState_STATE gil = cx__pyembed_gil_acquire();
  g_mutex_lock(&running_lock);
  gint64 now = g_get_monotonic_time();
  for (GList *l = running.head; l != NULL; l = l->next) {
    cx__pyembed_cell *cell = l->data;
    if (cell->deadline != 0 && !cell->timed_out && cell->deadline <= now) {
      cell->timed_out = TRUE;
      PyThreadState_SetAsyncExc(cell->thread_id, PyExc_TimeoutError);
    }
  }
  g_mutex_unlock(&running_lock);
  cx__pyembed_gil_release(gil);
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

void
cx__pyembed_running_begin(cx__pyembed_cell *cell)
{
  cell->thread_id = PyThread_get_thread_ident();
  cell->timed_out = FALSE;
  cell->link = (GList){ .data = cell };
  cell->outer = thread_cell;
  thread_cell = cell;

  g_mutex_lock(&running_lock);
  g_queue_push_tail_link(&running, &cell->link);
  if (cell->deadline != 0) {
    if (!watchdog_running) {
      /* One thread for the whole process, started by the first deadline. */
      g_thread_unref(g_thread_new("cellexec-watchdog", watchdog_main, NULL));
      watchdog_running = TRUE;
    }
    g_cond_signal(&deadlines_changed);
  }
  g_mutex_unlock(&running_lock);
}

void
cx__pyembed_running_end(cx__pyembed_cell *cell)
{
  g_mutex_lock(&running_lock);
  g_queue_unlink(&running, &cell->link);
  g_mutex_unlock(&running_lock);
  thread_cell = cell->outer;
  /* An exception set after the cell's last bytecode would otherwise be
   * raised in whatever Python code this thread runs next. */
  if (cell->outer == NULL)
    PyThreadState_SetAsyncExc(cell->thread_id, NULL);
}

cx__pyembed_cell *
cx__pyembed_output_cell(void)
{
  if (thread_cell != NULL)
    return thread_cell;
  return running.tail != NULL ? running.tail->data : NULL;
}

gboolean
cx__pyembed_in_cell(void)
{
  return thread_cell != NULL;
}

void
cx_pyembed_interrupt(const void *owner)
{
  g_mutex_lock(&running_lock);
  gboolean idle = g_queue_is_empty(&running); /* also: Python may not be started */
  g_mutex_unlock(&running_lock);
  if (idle)
    return;

  PyGILState_STATE gil = cx__pyembed_gil_acquire();
  g_mutex_lock(&running_lock);
  for (GList *l = running.head; l != NULL; l = l->next) {
    cx__pyembed_cell *cell = l->data;
    if (cell->owner == owner)
      PyThreadState_SetAsyncExc(cell->thread_id, PyExc_KeyboardInterrupt);
  }
  g_mutex_unlock(&running_lock);
  cx__pyembed_gil_release(gil);
}
