/* See test_jupyter_server.h. */
#include "config.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/test_jupyter_server.h"

int
jupyter_server_free_port(void)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  socklen_t len = sizeof addr;
  int port = -1;
  if (fd >= 0 && bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
      getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
    port = ntohs(addr.sin_port);
  if (fd >= 0)
    close(fd);
  return port;
}

gboolean
jupyter_server_port_open(int port)
{
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in addr = { .sin_family = AF_INET, .sin_port = htons(port),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
  gboolean ok = fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0;
  if (fd >= 0)
    close(fd);
  return ok;
}

GPid
jupyter_server_start(const char *python, int port, const char *token, const char *root,
                     const char *runtime_dir, GError **error)
{
  g_autofree char *port_arg = g_strdup_printf("--port=%d", port);
  g_autofree char *token_arg = g_strdup_printf("--ServerApp.token=%s", token);
  g_autofree char *root_arg = g_strdup_printf("--ServerApp.root_dir=%s", root);
  const char *argv[] = { python, "-m", "jupyter_server", "--ip=127.0.0.1", port_arg, token_arg,
                         "--no-browser", "--allow-root", "--ServerApp.port_retries=0", root_arg,
                         NULL };
  g_auto(GStrv) env = g_get_environ();
  if (runtime_dir != NULL)
    env = g_environ_setenv(env, "JUPYTER_RUNTIME_DIR", runtime_dir, TRUE);
  env = g_environ_setenv(env, "PYDEVD_DISABLE_FILE_VALIDATION", "1", TRUE);
  GPid pid = 0;
  if (!g_spawn_async(NULL, (char **)argv, env,
                     G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDOUT_TO_DEV_NULL | G_SPAWN_STDERR_TO_DEV_NULL,
                     NULL, NULL, &pid, error))
    return 0;
  gint64 deadline = g_get_monotonic_time() + 60 * G_USEC_PER_SEC;
  while (!jupyter_server_port_open(port) && g_get_monotonic_time() < deadline)
    g_usleep(50 * 1000);
  return pid;
}
