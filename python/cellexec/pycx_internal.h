/* python/cellexec/pycx_internal.h: declarations shared by the files of the
 * CPython extension module cellexec._cellexec; not installed.  What only one
 * file uses is static there; only PyInit__cellexec is exported (the module
 * is built with -fvisibility=hidden).
 *
 * A thin layer over libcellexec's public API (include/cellexec/): backends,
 * sessions, executor environments and debug exports as Python objects.  The
 * pure-Python package cellexec (__init__.py) re-exports what is here.
 *
 * The GIL.  Every call into libcellexec that may block (running a cell,
 * waiting for a worker, opening or closing a backend or session, executor
 * operations) is made with the GIL released, so other Python threads run
 * meanwhile.  The local backend runs cells in this very interpreter: its
 * runtime (pyembed) takes the GIL itself with PyGILState_Ensure, which works
 * because we gave it up first.  Host callbacks of create_dynamic_function
 * arrive without the GIL (on this thread, or on a thread of the subprocess
 * backend) and take it with PyGILState_Ensure.
 *
 * Objects are shared between threads safely: a handle (backend, session,
 * environment) counts the calls using it, and close() of a handle in use
 * leaves the actual close to the last of them.
 */
#ifndef PYCX_INTERNAL_H
#define PYCX_INTERNAL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cellexec/cellexec.h>

/* ---- errors.c: exceptions -------------------------------------------------- */

/* The class per CX_ERROR_* code, indexed by code. */
extern PyObject *pycx_error_types[];

/* Raise the exception for ERROR (consumed); returns NULL. */
PyObject *pycx_raise_gerror(GError *error);

/* Create the exceptions and add them to MODULE; -1 with an exception. */
int pycx_errors_add(PyObject *module);

/* ---- ref.c: cellexec.Ref --------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  PyObject *id;
  PyObject *repr;
} RefObject;

extern PyTypeObject pycx_RefType;

/* A new Ref of ID (an int) and REPR (a str). */
PyObject *pycx_ref_new_from(PyObject *id, PyObject *repr);

/* ---- hooks.c: ByThread ----------------------------------------------------- */

extern PyTypeObject pycx_ByThreadType;

/* ---- convert.c: JSON <-> Python, result bundles ---------------------------- */

/* A new Python value for NODE (NULL node: None). */
PyObject *pycx_json_to_py(JsonNode *node);
/* NODE (taken; NULL: None) as a new Python value, or ERROR (taken) raised
 * when set. */
PyObject *pycx_node_result(JsonNode *node, GError *error);
/* OBJECT as a dict, or as a Ref for {"$ref": ID, "repr": TEXT}. */
PyObject *pycx_json_object_to_py(JsonObject *object);
/* A new node for VALUE, or NULL with a Python exception. */
JsonNode *pycx_py_to_json(PyObject *value);
/* VALUE (None or a dict) as a new JsonObject in *OBJECT; FALSE with an exception. */
gboolean pycx_py_to_json_object(PyObject *value, const char *what, JsonObject **object);
/* The result bundle as a dict, with the keys cx_result_to_json() writes. */
PyObject *pycx_result_to_dict(const cx_result *result);

/* ---- options.c: run options ------------------------------------------------ */

/* PATH (str, bytes or os.PathLike) as a new C string, or NULL with an exception. */
char *pycx_path_to_string(PyObject *path);
/* The run options of a run_cell call, or NULL with an exception. */
cx_run_options *pycx_make_run_options(PyObject *timeout, PyObject *cwd, PyObject *env,
                                      PyObject *mime, int use_subprocess);

/* ---- handle.c: Backend and Session, handles shared by threads -------------- */

typedef struct HandleObject HandleObject;

/* What a Backend or Session does with its C handle. */
typedef struct {
  const char *type_name;
  cx_result *(*run_cell)(void *handle, const char *code, const cx_run_options *run,
                         GError **error);
  gboolean (*interrupt)(void *handle, GError **error);
  void (*set_debug_exporter)(void *handle, cx_debug_exporter *exporter);
  void (*destroy)(HandleObject *self); /* close the C handle and the exporter; GIL held */
} handle_class;

/* The common head of BackendObject and SessionObject: the C handle, the
 * calls using it right now, and whether close() was asked for.  Fields
 * change with the GIL held. */
#define HANDLE_HEAD                                                          \
  PyObject_HEAD                                                              \
  const handle_class *klass;                                                 \
  void *handle;                 /* cx_backend * or cx_session *; NULL: closed */ \
  cx_debug_exporter *exporter;  /* freed after the handle */                  \
  int users;                                                                 \
  gboolean closing;

struct HandleObject {
  HANDLE_HEAD
};

typedef struct {
  HANDLE_HEAD
} BackendObject;

typedef struct {
  HANDLE_HEAD
  BackendObject *backend;
  GPtrArray *envs; /* EnvObject *, borrowed: the live environments */
} SessionObject;

typedef struct {
  PyObject_HEAD
  SessionObject *session;
  cx_env *env;
  int users;
} EnvObject;

/* Take SELF's C handle for one call; NULL with an exception when closed. */
void *pycx_handle_enter(HandleObject *self);
void pycx_handle_leave(HandleObject *self);

/* The methods and getter Backend and Session share. */
PyObject *pycx_Handle_run_cell(HandleObject *self, PyObject *args, PyObject *kwargs);
PyObject *pycx_Handle_interrupt(HandleObject *self, PyObject *unused);
PyObject *pycx_Handle_debug_export(HandleObject *self, PyObject *args, PyObject *kwargs);
PyObject *pycx_Handle_close(HandleObject *self, PyObject *unused);
PyObject *pycx_Handle_enter_context(HandleObject *self, PyObject *unused);
PyObject *pycx_Handle_exit_context(HandleObject *self, PyObject *args);
PyObject *pycx_Handle_get_closed(HandleObject *self, void *closure);

#define RUN_CELL_DOC(what)                                                                 \
  "run_cell($self, code, *, timeout=None, cwd=None, env=None, mime=None, use_subprocess=False)\n" \
  "--\n\n"                                                                                 \
  what "\n\n"                                                                              \
  "Returns the result bundle as a dict: stdout, stderr, rich_outputs, success,\n"         \
  "error (None or {'type', 'message', 'traceback'}), outputs (nbformat v4 output\n"       \
  "objects in order) and the extra keys the backend sets (execution_count,\n"              \
  "duration_ms, ...).  A Python exception in the cell is never raised here: it is\n"      \
  "the bundle's error.  timeout is in seconds (0 or None: none); env is a dict\n"         \
  "(or KEY=VALUE strings) of variables for the cell; mime keeps only rich outputs\n"      \
  "of these MIME types; use_subprocess runs the cell on the subprocess backend\n"         \
  "(where the backend supports it).  Raises cellexec.Error when the backend could\n"      \
  "not run anything.  Other Python threads run while the cell does."

#define DEBUG_EXPORT_DOC(what)                                                                 \
  "debug_export($self, path, *, redact=None, max_value_bytes=0)\n--\n\n"                              \
  "Log every step of " what " to PATH: JSON Lines for a .jsonl or .ndjson\n"                   \
  "file, Markdown otherwise (created or truncated).  Keys and KEY=VALUE entries\n"             \
  "matching redact (glob patterns, case-insensitive; None: *TOKEN*, *SECRET*,\n"               \
  "*PASSWORD*, *API_KEY*, *CREDENTIAL*) are written as [redacted]; values are cut\n"           \
  "at max_value_bytes (0: 4096).  PATH None stops logging.  Exports may still hold\n"          \
  "code, prompts and data: store them accordingly."

#define HANDLE_METHODS(what, close_doc)                                                       \
  { "run_cell", (PyCFunction)(void (*)(void))pycx_Handle_run_cell,                            \
    METH_VARARGS | METH_KEYWORDS, RUN_CELL_DOC(what) },                                       \
  { "debug_export", (PyCFunction)(void (*)(void))pycx_Handle_debug_export,                    \
    METH_VARARGS | METH_KEYWORDS, DEBUG_EXPORT_DOC("its cells and operations") },             \
  { "close", (PyCFunction)pycx_Handle_close, METH_NOARGS,                                     \
    "close($self)\n--\n\n" close_doc },                                                       \
  { "__enter__", (PyCFunction)pycx_Handle_enter_context, METH_NOARGS, NULL },                 \
  { "__exit__", (PyCFunction)pycx_Handle_exit_context, METH_VARARGS, NULL }

/* ---- backend.c: cellexec.Backend ------------------------------------------- */

extern PyTypeObject pycx_BackendType;

/* ---- session.c: cellexec.Session ------------------------------------------- */

extern PyTypeObject pycx_SessionType;

/* A new Session for SESSION (consumed, closed on failure) opened on BACKEND. */
SessionObject *pycx_session_new(BackendObject *backend, cx_session *session);
cx_session *pycx_session_enter(SessionObject *self);
void pycx_session_leave(SessionObject *self);

/* ---- env.c: cellexec.Env --------------------------------------------------- */

extern PyTypeObject pycx_EnvType;

/* A new Env for ENV (consumed, freed on failure) in SESSION. */
PyObject *pycx_env_wrap(SessionObject *session, cx_env *env);

#endif /* PYCX_INTERNAL_H */
