/* The CX_ERROR domain, its Python details, and version queries. */
#include "config.h"

#include "lib/internal.h"

/* CX_ERROR is an extended error domain: every error of it carries a
 * cx_python_error, filled for CX_ERROR_PYTHON. */
typedef struct {
  cx_python_error python;
  char *type;
  char *message;
  char *traceback;
} CxErrorPrivate;

static void
cx_error_private_init(CxErrorPrivate *priv)
{
  priv->python.type = priv->type = NULL;
  priv->python.message = priv->message = NULL;
  priv->python.traceback = priv->traceback = NULL;
  priv->python.line = 0;
}

static void
cx_error_private_copy(const CxErrorPrivate *src, CxErrorPrivate *dest)
{
  dest->type = g_strdup(src->type);
  dest->message = g_strdup(src->message);
  dest->traceback = g_strdup(src->traceback);
  dest->python.type = dest->type;
  dest->python.message = dest->message;
  dest->python.traceback = dest->traceback;
  dest->python.line = src->python.line;
}

static void
cx_error_private_clear(CxErrorPrivate *priv)
{
  g_clear_pointer(&priv->type, g_free);
  g_clear_pointer(&priv->message, g_free);
  g_clear_pointer(&priv->traceback, g_free);
}

G_DEFINE_EXTENDED_ERROR(CxError, cx_error)

const cx_python_error *
cx_error_get_python(const GError *error)
{
  if (error == NULL || !g_error_matches(error, CX_ERROR, CX_ERROR_PYTHON))
    return NULL;
  return &cx_error_get_private(error)->python;
}

void
cx_set_python_error(GError **error, const char *type, const char *message,
                    const char *traceback, int line)
{
  g_return_if_fail(type != NULL && message != NULL);
  if (error == NULL)
    return;
  if (*error != NULL) {
    g_warning("cx_set_python_error: an error is already set (%s); not replacing it with %s: %s",
              (*error)->message, type, message);
    return;
  }
  g_set_error(error, CX_ERROR, CX_ERROR_PYTHON, "%s: %s", type, message);
  CxErrorPrivate *priv = cx_error_get_private(*error);
  priv->python.type = priv->type = g_strdup(type);
  priv->python.message = priv->message = g_strdup(message);
  priv->python.traceback = priv->traceback = g_strdup(traceback != NULL ? traceback : "");
  priv->python.line = line;
}

const char *
cx_version(void)
{
  return PACKAGE_VERSION;
}

const char *
cx_plugins_dir(void)
{
  return CX_PLUGINS_DIR;
}
