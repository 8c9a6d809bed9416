/* plugins/jupyter/pool.c: the warm pool, kernels started ahead (pool-size
 * at a time, on a thread pool) so that a stateless cell or a new session
 * does not wait for a kernel's start; used kernels are stopped in the
 * background. */
#include "config.h"

#include "plugins/jupyter/jupyter.h"

static void
starter_thread(gpointer data, gpointer user_data)
{
  jupyter_backend *backend = user_data;
  g_autoptr(GError) error = NULL;
  jk_kernel *kernel =
    backend->gateway_url != NULL
      ? jk_kernel_gateway_start(backend->gateway_url, backend->token, backend->kernel_name,
                                backend->nodelay, backend->start_timeout, &backend->counters, &error)
      : jk_kernel_launch(backend->zmq, backend->spec, backend->cwd, backend->start_timeout,
                         &backend->cancel_starts, &backend->counters, &error);
  g_mutex_lock(&backend->lock);
  backend->starting--;
  if (kernel != NULL) {
    backend->kernels_started++;
    if (backend->stopping) {
      g_mutex_unlock(&backend->lock);
      jk_kernel_free(kernel);
      g_mutex_lock(&backend->lock);
    } else {
      g_queue_push_tail(&backend->ready, kernel);
    }
    g_clear_error(&backend->start_error);
  } else {
    g_clear_error(&backend->start_error);
    backend->start_error = g_steal_pointer(&error);
  }
  g_cond_broadcast(&backend->cond);
  g_mutex_unlock(&backend->lock);
}

static void
discard_thread(gpointer data, gpointer user_data)
{
  jk_kernel_free(data);
}

/* Start kernels until ready + starting reaches the pool size.  With
 * backend->lock held. */
static void
fill_pool_locked(jupyter_backend *backend)
{
  while (!backend->stopping && g_queue_get_length(&backend->ready) + backend->starting <
                                 (guint)backend->pool_size) {
    backend->starting++;
    g_thread_pool_push(backend->starters, GINT_TO_POINTER(1), NULL);
  }
}

/* A warm kernel of the pool, for one cell or one session; a replacement
 * starts at once. */
jk_kernel *
jupyter_pool_take(jupyter_backend *backend, GError **error)
{
  gint64 deadline = g_get_monotonic_time() + (gint64)((backend->start_timeout + 10) * G_USEC_PER_SEC);
  g_mutex_lock(&backend->lock);
  g_clear_error(&backend->start_error); /* a past failure is not this call's */
  for (;;) {
    jk_kernel *kernel = g_queue_pop_head(&backend->ready);
    if (kernel != NULL && !jk_kernel_alive(kernel)) {
      g_thread_pool_push(backend->discarder, kernel, NULL);
      continue;
    }
    fill_pool_locked(backend);
    if (kernel == NULL && backend->starting == 0 && backend->start_error == NULL &&
        !backend->stopping) {
      /* pool-size 0: a kernel on demand. */
      backend->starting++;
      g_thread_pool_push(backend->starters, GINT_TO_POINTER(1), NULL);
    }
    if (kernel != NULL) {
      g_mutex_unlock(&backend->lock);
      return kernel;
    }
    if (backend->start_error != NULL) {
      g_propagate_error(error, g_steal_pointer(&backend->start_error));
      g_mutex_unlock(&backend->lock);
      return NULL;
    }
    if (!g_cond_wait_until(&backend->cond, &backend->lock, deadline)) {
      g_mutex_unlock(&backend->lock);
      g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "jupyter: no kernel started within %g s",
                  backend->start_timeout + 10);
      return NULL;
    }
  }
}

/* Done with KERNEL: it goes, in the background. */
void
jupyter_discard(jupyter_backend *backend, jk_kernel *kernel)
{
  if (kernel != NULL)
    g_thread_pool_push(backend->discarder, kernel, NULL);
}

void
jupyter_pool_open(jupyter_backend *backend, gboolean warm)
{
  backend->discarder = g_thread_pool_new(discard_thread, backend, 1, FALSE, NULL);
  if (!warm)
    return;
  backend->starters = g_thread_pool_new(starter_thread, backend, MAX(1, (gint)backend->pool_size),
                                        FALSE, NULL);
  g_mutex_lock(&backend->lock);
  fill_pool_locked(backend);
  g_mutex_unlock(&backend->lock);
}

void
jupyter_pool_close(jupyter_backend *backend)
{
  g_mutex_lock(&backend->lock);
  backend->stopping = TRUE;
  g_mutex_unlock(&backend->lock);
  /* Launched kernels still starting are killed (a one-shot `cellexec run`
   * does not wait half a second for a spare it will never use); a
   * gateway's finish starting, and are shut down. */
  g_atomic_int_set(&backend->cancel_starts, 1);
  if (backend->starters != NULL)
    g_thread_pool_free(backend->starters, FALSE, TRUE);
  jk_kernel *kernel;
  while ((kernel = g_queue_pop_head(&backend->ready)) != NULL)
    jk_kernel_free(kernel);
  if (backend->discarder != NULL)
    g_thread_pool_free(backend->discarder, FALSE, TRUE);
}
