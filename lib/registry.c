/* The registry: finds plugin files on the search path, loads and checks them.
 *
 * Every way a file can be wrong becomes a faulty entry carrying a GError
 * that names the file, the reason, the plugin's ABI and ours, and the next
 * step (the approach of Linux-PAM: listed, never skipped silently, failing
 * predictably when selected).
 */
#include "config.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/internal.h"

struct cx_plugin_info {
  char *name;
  char *path;
  char *version;
  char *description;
  guint abi_major;
  guint abi_minor;
  GError *error;          /* NULL when usable */
  gboolean examined;      /* probed and loaded (or found faulty) yet */
  GPtrArray *shadows;     /* paths of later files of the same name, or NULL */
  GStrv optional_methods; /* filled when examined and usable */
  cx__loaded_plugin loaded;
};

/* Entries are found by listing the directories and examined (probed,
 * loaded, checked) only when asked for: `cellexec run -b local` must not
 * pay for, or be disturbed by, every other plugin on the path. */
struct cx_registry {
  gatomicrefcount ref;
  char **search_path;
  GPtrArray *entries;     /* cx_plugin_info*, in search-path order */
  GHashTable *by_name;    /* file stem -> first entry of that name (borrowed) */
  GMutex lock;            /* examining entries */
  cx__probe_cache *probes; /* read on the first examination, under LOCK */
};

/* A struct_size past this is corrupt, not from the future: ABI minors only
 * append methods, a few pointers each. */
#define STRUCT_SIZE_MAX (64 * 1024)

/* The size of the backend vtable in ABI 1.0; a plugin's struct_size may not
 * be smaller. */
#define BACKEND_REQUIRED_SIZE \
  (offsetof(cx_backend_vtable, run_cell) + sizeof(((cx_backend_vtable *)0)->run_cell))

static void
plugin_info_free(cx_plugin_info *info)
{
  g_free(info->name);
  g_free(info->path);
  g_free(info->version);
  g_free(info->description);
  g_clear_error(&info->error);
  g_clear_pointer(&info->shadows, g_ptr_array_unref);
  g_strfreev(info->optional_methods);
  g_free(info);
}

static char *
file_stem(const char *path)
{
  char *base = g_path_get_basename(path);
  if (g_str_has_suffix(base, ".so"))
    base[strlen(base) - 3] = '\0';
  return base;
}

/* Mark INFO faulty with CODE and a message made of the reason and advice. */
G_GNUC_PRINTF(3, 4)
static void
set_faulty(cx_plugin_info *info, cx_error_code code, const char *format, ...)
{
  va_list args;
  va_start(args, format);
  g_autofree char *reason = g_strdup_vprintf(format, args);
  va_end(args);
  g_clear_error(&info->error);
  g_set_error(&info->error, CX_ERROR, code, "plugin %s: %s", info->path, reason);
}

static const char *
their_abi(const cx_plugin_info *info, char buffer[32])
{
  if (info->abi_major == 0 && info->abi_minor == 0)
    return "unknown";
  g_snprintf(buffer, 32, "%u.%u", info->abi_major, info->abi_minor);
  return buffer;
}

static gboolean
valid_plugin_name(const char *name)
{
  if (name == NULL || *name == '\0')
    return FALSE;
  for (const char *c = name; *c; c++)
    if (!(g_ascii_islower(*c) || g_ascii_isdigit(*c) || *c == '_' || *c == '-'))
      return FALSE;
  return TRUE;
}

/* Option names are config keys and CLI words: lowercase, digits, '-'. */
static gboolean
valid_option_name(const char *name)
{
  if (!g_ascii_islower(*name))
    return FALSE;
  for (const char *c = name; *c; c++)
    if (!(g_ascii_islower(*c) || g_ascii_isdigit(*c) || *c == '-'))
      return FALSE;
  return TRUE;
}

/* Check what the descriptor's option schema declares: names, types, defaults. */
static gboolean
check_schema(cx_plugin_info *info, const cx_option_spec *schema)
{
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  for (const cx_option_spec *spec = schema; spec != NULL && spec->name != NULL; spec++) {
    if (!valid_option_name(spec->name)) {
      set_faulty(info, CX_ERROR_INVALID_PLUGIN,
                 "its option name '%s' is not valid; use lowercase letters, digits and '-', "
                 "starting with a letter, as config keys are written",
                 spec->name);
      return FALSE;
    }
    if (!g_hash_table_add(seen, (gpointer)spec->name)) {
      set_faulty(info, CX_ERROR_INVALID_PLUGIN,
                 "its option schema declares '%s' twice; fix the plugin's option table",
                 spec->name);
      return FALSE;
    }
    if ((guint)spec->type > CX_OPTION_SIZE_LIMIT) {
      set_faulty(info, CX_ERROR_INVALID_PLUGIN,
                 "option '%s' has unknown type %d; rebuild the plugin against cellexec %s",
                 spec->name, (int)spec->type, CX_VERSION_STRING);
      return FALSE;
    }
    g_autoptr(GError) error = NULL;
    if (spec->default_value != NULL &&
        !cx__option_value_check(spec->type, spec->default_value, &error)) {
      set_faulty(info, CX_ERROR_INVALID_PLUGIN,
                 "the default '%s' of option '%s' is not valid (%s); fix the plugin's option table",
                 spec->default_value, spec->name, error->message);
      return FALSE;
    }
  }
  return TRUE;
}

/* Copy the vtables into zero-padded structures of this core's size. */
static gboolean
copy_vtables(cx_plugin_info *info, const cx_plugin *descriptor)
{
  char abi[32];
  const cx_backend_vtable *backend = descriptor->backend;
  if (backend == NULL) {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "its descriptor has no backend vtable; every plugin must provide one");
    return FALSE;
  }
  if (backend->struct_size > STRUCT_SIZE_MAX) {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "its backend vtable claims %zu bytes, more than any cellexec structure will "
               "ever be (%d); set struct_size to sizeof(cx_backend_vtable)",
               backend->struct_size, STRUCT_SIZE_MAX);
    return FALSE;
  }
  if (backend->struct_size < BACKEND_REQUIRED_SIZE) {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "its backend vtable is %zu bytes, ABI %d.0 needs at least %zu "
               "(plugin ABI %s, cellexec ABI %d.%d); rebuild it against cellexec %s",
               backend->struct_size, CX_ABI_MAJOR, (size_t)BACKEND_REQUIRED_SIZE,
               their_abi(info, abi), CX_ABI_MAJOR, CX_ABI_MINOR, CX_VERSION_STRING);
    return FALSE;
  }
  memcpy(&info->loaded.backend, backend, MIN(backend->struct_size, sizeof(cx_backend_vtable)));
  info->loaded.backend.struct_size = sizeof(cx_backend_vtable);

  const char *missing = info->loaded.backend.create == NULL    ? "create"
                        : info->loaded.backend.destroy == NULL ? "destroy"
                        : info->loaded.backend.run_cell == NULL ? "run_cell"
                                                                : NULL;
  if (missing != NULL) {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "the required backend method %s is NULL (plugin ABI %s, cellexec ABI %d.%d); "
               "the plugin is incomplete: implement %s",
               missing, their_abi(info, abi), CX_ABI_MAJOR, CX_ABI_MINOR, missing);
    return FALSE;
  }
  int sessions = (info->loaded.backend.session_open != NULL) +
                 (info->loaded.backend.session_run_cell != NULL) +
                 (info->loaded.backend.session_close != NULL);
  if (sessions != 0 && sessions != 3) {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "it sets only some of session_open, session_run_cell and session_close; "
               "implement all three or none");
    return FALSE;
  }

  const cx_executor_vtable *executor = descriptor->executor;
  if (executor != NULL) {
    if (executor->struct_size < sizeof(size_t) || executor->struct_size > STRUCT_SIZE_MAX) {
      set_faulty(info, CX_ERROR_INVALID_PLUGIN,
                 "its executor vtable has struct_size %zu; set it to sizeof(cx_executor_vtable)",
                 executor->struct_size);
      return FALSE;
    }
    memcpy(&info->loaded.executor, executor,
           MIN(executor->struct_size, sizeof(cx_executor_vtable)));
    info->loaded.executor.struct_size = sizeof(cx_executor_vtable);
    info->loaded.has_executor = TRUE;
  }
  return TRUE;
}

/* Check the descriptor an entry returned; fills INFO or marks it faulty. */
static gboolean
check_descriptor(cx_plugin_info *info, const cx_plugin *descriptor)
{
  char abi[32];
  if (descriptor == NULL) {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "its entry %s returned NULL; it must return the plugin's descriptor",
               CX_PLUGIN_ENTRY_SYMBOL);
    return FALSE;
  }
  /* abi_major, abi_minor and struct_size never move, whatever the ABI. */
  info->abi_major = descriptor->abi_major;
  info->abi_minor = descriptor->abi_minor;
  if (descriptor->abi_major != CX_ABI_MAJOR) {
    set_faulty(info, CX_ERROR_ABI_MISMATCH,
               "it was built for plugin ABI %s, this cellexec has ABI %d.%d; "
               "rebuild it against cellexec %s",
               their_abi(info, abi), CX_ABI_MAJOR, CX_ABI_MINOR, CX_VERSION_STRING);
    return FALSE;
  }
  if (descriptor->struct_size > STRUCT_SIZE_MAX) {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "its descriptor claims %zu bytes, more than any cellexec structure will ever "
               "be (%d); define it with CX_PLUGIN_DEFINE and rebuild against cellexec %s",
               descriptor->struct_size, STRUCT_SIZE_MAX, CX_VERSION_STRING);
    return FALSE;
  }
  if (descriptor->struct_size < CX__DESCRIPTOR_SIZE_1_0) {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "its descriptor is %zu bytes, ABI %d.0 needs at least %zu "
               "(plugin ABI %s, cellexec ABI %d.%d); define it with CX_PLUGIN_DEFINE "
               "and rebuild against cellexec %s",
               descriptor->struct_size, CX_ABI_MAJOR, (size_t)CX__DESCRIPTOR_SIZE_1_0,
               their_abi(info, abi), CX_ABI_MAJOR, CX_ABI_MINOR, CX_VERSION_STRING);
    return FALSE;
  }
  if (!valid_plugin_name(descriptor->name)) {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "its name '%s' is not valid; use lowercase letters, digits, '-' and '_'",
               descriptor->name != NULL ? descriptor->name : "(null)");
    return FALSE;
  }
  /* The file name is how a plugin is found without loading the others. */
  if (strcmp(descriptor->name, info->name) != 0) {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "its descriptor names it '%s' but the file is %s.so; a plugin's file must be "
               "NAME.so: rename the file to %s.so",
               descriptor->name, info->name, descriptor->name);
    return FALSE;
  }
  const char *missing = descriptor->version == NULL       ? "version"
                        : descriptor->description == NULL ? "description"
                                                          : NULL;
  if (missing != NULL || *descriptor->version == '\0') {
    set_faulty(info, CX_ERROR_INVALID_PLUGIN,
               "its descriptor has no %s; set it in CX_PLUGIN_DEFINE",
               missing != NULL ? missing : "version");
    return FALSE;
  }
  info->version = g_strdup(descriptor->version);
  info->description = g_strdup(descriptor->description);
  if (descriptor->struct_size >= CX__DESCRIPTOR_SIZE_1_1 &&
      descriptor->min_core_abi_minor > CX_ABI_MINOR) {
    set_faulty(info, CX_ERROR_ABI_MISMATCH,
               "it needs cellexec ABI %u.%u or newer, this cellexec has ABI %d.%d "
               "(cellexec %s); upgrade cellexec, or use a build of the plugin for this one",
               descriptor->abi_major, descriptor->min_core_abi_minor, CX_ABI_MAJOR,
               CX_ABI_MINOR, CX_VERSION_STRING);
    return FALSE;
  }
  info->loaded.descriptor = descriptor;
  if (descriptor->struct_size >= CX__DESCRIPTOR_SIZE_1_1)
    info->loaded.flags = descriptor->flags;
  return copy_vtables(info, descriptor) && check_schema(info, descriptor->options);
}

static const char *
dlerror_reason(const char *message, cx_error_code *code)
{
  *code = CX_ERROR_PLUGIN_LOAD;
  if (strstr(message, "undefined symbol") != NULL)
    return "it has an unresolved symbol; rebuild it against the installed cellexec and the "
           "libraries it uses";
  if (strstr(message, "cannot open shared object file") != NULL)
    return "a library it needs is missing; install that library or rebuild the plugin";
  return "it is not a loadable shared object; remove the file from the plugin directory or "
         "replace it with a plugin built for this machine";
}

/* Call DESCRIPTOR's init once per process, however many registries load
 * the plugin (it is never unloaded, so the pointer identifies it): later
 * loads get the first verdict. */
static gboolean
init_once(const cx_plugin *descriptor, GError **error)
{
  static GMutex lock;
  static GHashTable *verdicts; /* descriptor -> NULL (accepted) or GError* (refused) */
  g_mutex_lock(&lock);
  if (verdicts == NULL)
    verdicts = g_hash_table_new(NULL, NULL);
  gpointer refusal = NULL;
  if (!g_hash_table_lookup_extended(verdicts, descriptor, NULL, &refusal)) {
    GError *init_error = NULL;
    if (!descriptor->init(&init_error) && init_error == NULL)
      init_error = g_error_new_literal(CX_ERROR, CX_ERROR_INIT_REFUSED, "(no reason given)");
    refusal = init_error;
    g_hash_table_insert(verdicts, (gpointer)descriptor, refusal);
  }
  g_mutex_unlock(&lock);
  if (refusal != NULL)
    g_propagate_error(error, g_error_copy(refusal));
  return refusal == NULL;
}

/* The optional methods a usable plugin has, by their vtable names. */
static GStrv
list_optional_methods(const cx__loaded_plugin *loaded)
{
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
  const cx_backend_vtable *backend = &loaded->backend;
  if (backend->session_open != NULL)
    g_strv_builder_add_many(builder, "session_open", "session_run_cell", "session_close", NULL);
  if (backend->interrupt != NULL)
    g_strv_builder_add(builder, "interrupt");
  if (backend->query != NULL)
    g_strv_builder_add(builder, "query");
  if (loaded->has_executor) {
    const cx_executor_vtable *executor = &loaded->executor;
    const struct {
      const char *name;
      gboolean present;
    } methods[] = {
      { "execute_prelude", executor->execute_prelude != NULL },
      { "execute_prelude_incremental", executor->execute_prelude_incremental != NULL },
      { "evaluate_inline", executor->evaluate_inline != NULL },
      { "execute_block", executor->execute_block != NULL },
      { "execute_side_effects", executor->execute_side_effects != NULL },
      { "create_dynamic_function", executor->create_dynamic_function != NULL },
      { "evaluate_type_expression", executor->evaluate_type_expression != NULL },
      { "set_debug_exporter", executor->set_debug_exporter != NULL },
      { "env_snapshot", executor->env_snapshot != NULL },
      { "env_free", executor->env_free != NULL },
    };
    for (gsize i = 0; i < G_N_ELEMENTS(methods); i++)
      if (methods[i].present)
        g_strv_builder_add(builder, methods[i].name);
  }
  return g_strv_builder_end(builder);
}

/* While a plugin's constructors, entry and init run in this process, what
 * they print goes to stderr: the host's stdout may be JSON that a chatty
 * plugin must not corrupt.  Returns the saved stdout, for
 * restore_stdout(). */
static int
divert_stdout(void)
{
  fflush(stdout);
  int saved = dup(STDOUT_FILENO);
  if (saved >= 0)
    dup2(STDERR_FILENO, STDOUT_FILENO);
  return saved;
}

static void
restore_stdout(int saved)
{
  if (saved < 0)
    return;
  fflush(stdout);
  dup2(saved, STDOUT_FILENO);
  close(saved);
}

/* Load INFO's file (probed already) and check what it declares. */
static void
load_checked(cx_plugin_info *info)
{
  dlerror();
  void *handle = dlopen(info->path, RTLD_NOW | RTLD_LOCAL);
  if (handle == NULL) {
    const char *message = dlerror();
    cx_error_code code;
    const char *reason = dlerror_reason(message != NULL ? message : "", &code);
    set_faulty(info, code, "%s (%s) (plugin ABI unknown, cellexec ABI %d.%d)", reason,
               message != NULL ? message : "dlopen failed", CX_ABI_MAJOR, CX_ABI_MINOR);
    return;
  }
  cx_plugin_entry_func entry = (cx_plugin_entry_func)dlsym(handle, CX_PLUGIN_ENTRY_SYMBOL);
  if (entry == NULL) {
    set_faulty(info, CX_ERROR_NO_ENTRY,
               "no entry point %s in it (plugin ABI unknown, cellexec ABI %d.%d); "
               "it is not a cellexec plugin, or it was built without CX_PLUGIN_DEFINE",
               CX_PLUGIN_ENTRY_SYMBOL, CX_ABI_MAJOR, CX_ABI_MINOR);
    dlclose(handle);
    return;
  }
  if (!check_descriptor(info, entry())) {
    info->loaded.descriptor = NULL;
    dlclose(handle);
    return;
  }

  const cx_plugin *descriptor = info->loaded.descriptor;
  g_autoptr(GError) init_error = NULL;
  if (descriptor->init != NULL && !init_once(descriptor, &init_error)) {
    set_faulty(info, CX_ERROR_INIT_REFUSED, "it refused to load: %s",
               init_error != NULL ? init_error->message : "(no reason given)");
    /* The init may have started things (threads, handlers): keep it loaded. */
    info->loaded.descriptor = NULL;
    return;
  }
  info->optional_methods = list_optional_methods(&info->loaded);
}

/* Probe, load and check INFO's file, leaving INFO usable or faulty. */
static void
examine(cx_registry *registry, cx_plugin_info *info)
{
  /* A plugin that crashes in its entry or init would take the host down:
   * it is tried in a process of its own first.  The cache file is read
   * once per registry; a new verdict is saved at once. */
  if (registry->probes == NULL)
    registry->probes = cx__probe_cache_open();
  g_autofree char *fault = cx__probe_plugin(registry->probes, info->path);
  cx__probe_cache_save(registry->probes);
  if (fault != NULL) {
    set_faulty(info, CX_ERROR_PLUGIN_LOAD, "%s (plugin ABI unknown, cellexec ABI %d.%d)", fault,
               CX_ABI_MAJOR, CX_ABI_MINOR);
    return;
  }
  int saved_stdout = divert_stdout();
  load_checked(info);
  restore_stdout(saved_stdout);
}

/* INFO, examined first if it has not been yet. */
static const cx_plugin_info *
examined(const cx_registry *registry, cx_plugin_info *info)
{
  cx_registry *mutable_registry = (cx_registry *)registry; /* examining is caching */
  g_mutex_lock(&mutable_registry->lock);
  if (!info->examined) {
    examine(mutable_registry, info);
    info->examined = TRUE;
  }
  g_mutex_unlock(&mutable_registry->lock);
  return info;
}

static int
compare_names(gconstpointer a, gconstpointer b)
{
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void
scan_directory(cx_registry *registry, const char *dir)
{
  GDir *handle = g_dir_open(dir, 0, NULL);
  if (handle == NULL)
    return; /* a missing directory on the path is not an error */
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  const char *name;
  while ((name = g_dir_read_name(handle)) != NULL)
    if (g_str_has_suffix(name, ".so"))
      g_ptr_array_add(names, g_strdup(name));
  g_dir_close(handle);
  g_ptr_array_sort(names, compare_names);

  for (guint i = 0; i < names->len; i++) {
    cx_plugin_info *info = g_new0(cx_plugin_info, 1);
    info->path = g_build_filename(dir, g_ptr_array_index(names, i), NULL);
    info->name = file_stem(info->path);
    g_ptr_array_add(registry->entries, info);
    cx_plugin_info *first = g_hash_table_lookup(registry->by_name, info->name);
    if (first == NULL) {
      g_hash_table_insert(registry->by_name, info->name, info);
      continue;
    }
    /* First on the path wins; the later file is never loaded. */
    set_faulty(info, CX_ERROR_DUPLICATE,
               "it is shadowed by %s, which comes first on the plugin path and is used "
               "instead; remove one of them or reorder the plugin path",
               first->path);
    info->examined = TRUE;
    if (first->shadows == NULL)
      first->shadows = g_ptr_array_new_null_terminated(1, g_free, TRUE);
    g_ptr_array_add(first->shadows, g_strdup(info->path));
  }
}

/* The same directory twice on the path would report every plugin in it as
 * its own duplicate. */
static char **
unique_dirs(const char *const *dirs)
{
  g_autoptr(GPtrArray) result = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GHashTable) seen = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (const char *const *dir = dirs; dir != NULL && *dir != NULL; dir++) {
    if (**dir == '\0')
      continue;
    char *real = realpath(*dir, NULL);
    char *key = real != NULL ? g_strdup(real) : g_canonicalize_filename(*dir, NULL);
    free(real);
    if (g_hash_table_add(seen, key))
      g_ptr_array_add(result, g_strdup(*dir));
  }
  g_ptr_array_add(result, NULL);
  return (char **)g_ptr_array_free(g_steal_pointer(&result), FALSE);
}

cx_registry *
cx_registry_new_for_path(const char *const *dirs)
{
  cx_registry *registry = g_new0(cx_registry, 1);
  g_atomic_ref_count_init(&registry->ref);
  registry->search_path = unique_dirs(dirs);
  registry->entries = g_ptr_array_new_with_free_func((GDestroyNotify)plugin_info_free);
  registry->by_name = g_hash_table_new(g_str_hash, g_str_equal);
  g_mutex_init(&registry->lock);
  for (char **dir = registry->search_path; *dir != NULL; dir++)
    scan_directory(registry, *dir);
  return registry;
}

cx_registry *
cx_registry_new(const char *const *extra_dirs)
{
  g_autoptr(GStrvBuilder) builder = g_strv_builder_new();
  const char *env = g_getenv("CELLEXEC_PLUGIN_PATH");
  if (env != NULL) {
    g_auto(GStrv) dirs = g_strsplit(env, G_SEARCHPATH_SEPARATOR_S, -1);
    g_strv_builder_addv(builder, (const char **)dirs);
  }
  if (extra_dirs != NULL)
    g_strv_builder_addv(builder, (const char **)extra_dirs);
  g_strv_builder_add(builder, cx_plugins_dir());
  g_auto(GStrv) path = g_strv_builder_end(builder);
  return cx_registry_new_for_path((const char *const *)path);
}

cx_registry *
cx_registry_ref(cx_registry *registry)
{
  g_return_val_if_fail(registry != NULL, NULL);
  g_atomic_ref_count_inc(&registry->ref);
  return registry;
}

void
cx_registry_unref(cx_registry *registry)
{
  if (registry == NULL || !g_atomic_ref_count_dec(&registry->ref))
    return;
  /* Plugins stay loaded: an embedded interpreter cannot be unloaded. */
  g_hash_table_unref(registry->by_name);
  g_ptr_array_unref(registry->entries);
  g_strfreev(registry->search_path);
  cx__probe_cache_close(registry->probes);
  g_mutex_clear(&registry->lock);
  g_free(registry);
}

const char *const *
cx_registry_get_search_path(const cx_registry *registry)
{
  g_return_val_if_fail(registry != NULL, NULL);
  return (const char *const *)registry->search_path;
}

guint
cx_registry_get_n_plugins(const cx_registry *registry)
{
  g_return_val_if_fail(registry != NULL, 0);
  return registry->entries->len;
}

const cx_plugin_info *
cx_registry_get_plugin(const cx_registry *registry, guint index)
{
  g_return_val_if_fail(registry != NULL, NULL);
  if (index >= registry->entries->len)
    return NULL;
  return examined(registry, g_ptr_array_index(registry->entries, index));
}

const cx_plugin_info *
cx_registry_lookup(const cx_registry *registry, const char *name, GError **error)
{
  g_return_val_if_fail(registry != NULL && name != NULL, NULL);
  cx_plugin_info *info = g_hash_table_lookup(registry->by_name, name);
  if (info != NULL)
    return examined(registry, info);

  g_autofree char *dirs = g_strjoinv(G_SEARCHPATH_SEPARATOR_S, registry->search_path);
  g_autofree const char **names = (const char **)g_hash_table_get_keys_as_array(registry->by_name, NULL);
  const char *closest = cx_suggest(name, names);
  g_set_error(error, CX_ERROR, CX_ERROR_NOT_FOUND,
              "no backend plugin named '%s'%s%s%s in %s; run `cellexec plugins` to list the "
              "plugins found, or add their directory to CELLEXEC_PLUGIN_PATH",
              name, closest != NULL ? " (did you mean '" : "", closest != NULL ? closest : "",
              closest != NULL ? "'?)" : "", *dirs != '\0' ? dirs : "(empty search path)");
  return NULL;
}

gboolean
cx__registry_has_plugin(const cx_registry *registry, const char *name)
{
  return g_hash_table_contains(registry->by_name, name);
}

GPtrArray *
cx__registry_names(const cx_registry *registry)
{
  GPtrArray *names = g_ptr_array_new_null_terminated(registry->entries->len, NULL, TRUE);
  for (guint i = 0; i < registry->entries->len; i++)
    g_ptr_array_add(names, ((cx_plugin_info *)g_ptr_array_index(registry->entries, i))->name);
  return names;
}

const char *
cx_plugin_info_get_name(const cx_plugin_info *info)
{
  g_return_val_if_fail(info != NULL, NULL);
  return info->name;
}

const char *
cx_plugin_info_get_path(const cx_plugin_info *info)
{
  g_return_val_if_fail(info != NULL, NULL);
  return info->path;
}

const char *
cx_plugin_info_get_version(const cx_plugin_info *info)
{
  g_return_val_if_fail(info != NULL, NULL);
  return info->version;
}

const char *
cx_plugin_info_get_description(const cx_plugin_info *info)
{
  g_return_val_if_fail(info != NULL, NULL);
  return info->description;
}

void
cx_plugin_info_get_abi(const cx_plugin_info *info, guint *major, guint *minor)
{
  g_return_if_fail(info != NULL);
  if (major != NULL)
    *major = info->abi_major;
  if (minor != NULL)
    *minor = info->abi_minor;
}

gboolean
cx_plugin_info_is_usable(const cx_plugin_info *info)
{
  g_return_val_if_fail(info != NULL, FALSE);
  return info->error == NULL;
}

const GError *
cx_plugin_info_get_error(const cx_plugin_info *info)
{
  g_return_val_if_fail(info != NULL, NULL);
  return info->error;
}

const cx_option_spec *
cx_plugin_info_get_options(const cx_plugin_info *info)
{
  static const cx_option_spec none[] = { { NULL, 0, NULL, NULL } };
  g_return_val_if_fail(info != NULL, NULL);
  if (info->error == NULL && info->loaded.descriptor->options != NULL)
    return info->loaded.descriptor->options;
  return none;
}

gboolean
cx_plugin_info_has_executor(const cx_plugin_info *info)
{
  g_return_val_if_fail(info != NULL, FALSE);
  return info->error == NULL && info->loaded.has_executor;
}

const cx__loaded_plugin *
cx__plugin_info_get_loaded(const cx_plugin_info *info)
{
  return info->error == NULL ? &info->loaded : NULL;
}

const char *const *
cx_plugin_info_get_optional_methods(const cx_plugin_info *info)
{
  static const char *const none[] = { NULL };
  g_return_val_if_fail(info != NULL, NULL);
  return info->error == NULL && info->optional_methods != NULL
           ? (const char *const *)info->optional_methods
           : none;
}

const char *const *
cx_plugin_info_get_shadowed_paths(const cx_plugin_info *info)
{
  g_return_val_if_fail(info != NULL, NULL);
  return info->shadows != NULL ? (const char *const *)info->shadows->pdata : NULL;
}

guint32
cx_plugin_info_get_flags(const cx_plugin_info *info)
{
  g_return_val_if_fail(info != NULL, 0);
  return info->error == NULL ? info->loaded.flags : 0;
}
