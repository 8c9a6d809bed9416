/* plugins/subprocess/worker/limits.c: resource limits of a cell's process. */
#include "config.h"

#include <errno.h>
#include <sys/resource.h>

#include "plugins/subprocess/worker/worker.h"

static gboolean
read_limit(JsonObject *object, const char *key, guint64 *value, GError **error)
{
  JsonNode *node = json_object_get_member(object, key);
  *value = 0;
  if (node == NULL || JSON_NODE_HOLDS_NULL(node))
    return TRUE;
  if (json_node_get_value_type(node) != G_TYPE_INT64 || json_node_get_int(node) < 0) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "limit \"%s\" must be a non-negative integer", key);
    return FALSE;
  }
  *value = (guint64)json_node_get_int(node);
  return TRUE;
}

gboolean
cx__worker_limits_parse(JsonObject *object, cx__worker_limits *limits, GError **error)
{
  *limits = (cx__worker_limits){ 0 };
  if (object == NULL)
    return TRUE;
  return read_limit(object, "memory", &limits->memory_bytes, error) &&
         read_limit(object, "cpu", &limits->cpu_seconds, error) &&
         read_limit(object, "processes", &limits->processes, error) &&
         read_limit(object, "file_size", &limits->file_size_bytes, error) &&
         read_limit(object, "open_files", &limits->open_files, error);
}

static gboolean
set_limit(int resource, const char *name, rlim_t soft, rlim_t hard, GError **error)
{
  struct rlimit limit = { soft, hard };
  if (setrlimit(resource, &limit) == 0)
    return TRUE;
  int saved = errno;
  g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "cannot set %s to %llu: %s", name,
              (unsigned long long)soft, g_strerror(saved));
  return FALSE;
}

gboolean
cx__worker_limits_apply(const cx__worker_limits *limits, GError **error)
{
  /* A crashing cell must not litter its directory with core files. */
  if (!set_limit(RLIMIT_CORE, "RLIMIT_CORE", 0, 0, error))
    return FALSE;
  if (limits->memory_bytes > 0 &&
      !set_limit(RLIMIT_AS, "the memory limit (RLIMIT_AS)", limits->memory_bytes,
                 limits->memory_bytes, error))
    return FALSE;
  /* In the sandbox the cell's cgroup bounds its tree (pids.max); there,
   * RLIMIT_NPROC would count every process of the cells' user, so the
   * spares and every other cell, against each one. */
  if (limits->processes > 0 && !cx__worker_sandboxed &&
      !set_limit(RLIMIT_NPROC, "the process limit (RLIMIT_NPROC)", limits->processes,
                 limits->processes, error))
    return FALSE;
  if (limits->file_size_bytes > 0 &&
      !set_limit(RLIMIT_FSIZE, "the file size limit (RLIMIT_FSIZE)", limits->file_size_bytes,
                 limits->file_size_bytes, error))
    return FALSE;
  if (limits->open_files > 0 &&
      !set_limit(RLIMIT_NOFILE, "the open files limit (RLIMIT_NOFILE)", limits->open_files,
                 limits->open_files, error))
    return FALSE;
  return TRUE;
}

gboolean
cx__worker_limits_arm_cpu(const cx__worker_limits *limits, gboolean one_shot, GError **error)
{
  if (limits->cpu_seconds == 0)
    return TRUE;
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  /* RLIMIT_CPU counts whole seconds of the process's life. */
  rlim_t used = usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
                (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec + 999999) / 1000000;
  rlim_t soft = used + limits->cpu_seconds;
  /* SIGXCPU at the soft limit; SIGKILL at the hard one, should the cell
   * ignore SIGXCPU. */
  rlim_t hard = one_shot ? soft + 1 : RLIM_INFINITY;
  return set_limit(RLIMIT_CPU, "the CPU limit (RLIMIT_CPU)", soft, hard, error);
}
