/* The CX_ERROR domain and version queries. */
#include "config.h"

#include "lib/internal.h"

G_DEFINE_QUARK(cx-error-quark, cx_error)

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
