/* cellexec/common.h: definitions shared by the client API and the plugin ABI.
 *
 * Every public symbol of libcellexec starts with cx_ and is declared with
 * CX_EXPORT.  Errors are reported through GError in the CX_ERROR domain; the
 * last parameter of a function that can fail is always GError **error, which
 * may be NULL.
 */
#ifndef CELLEXEC_COMMON_H
#define CELLEXEC_COMMON_H

#include <glib.h>
#include <json-glib/json-glib.h>
#include <cellexec/version.h>

G_BEGIN_DECLS

#if defined(CX_COMPILATION)
#define CX_EXPORT __attribute__((visibility("default")))
#else
#define CX_EXPORT
#endif

/* The error domain of libcellexec: CX_ERROR. */
#define CX_ERROR (cx_error_quark())
CX_EXPORT GQuark cx_error_quark(void);

/* Codes of the CX_ERROR domain.  Values never change; new codes are appended. */
typedef enum {
  CX_ERROR_FAILED = 0,       /* anything without a more precise code */
  CX_ERROR_NOT_FOUND,        /* no plugin of that name on the search path */
  CX_ERROR_PLUGIN_LOAD,      /* dlopen failed: not a shared object, unresolved symbol */
  CX_ERROR_NO_ENTRY,         /* the file has no cellexec_plugin_entry symbol */
  CX_ERROR_ABI_MISMATCH,     /* the plugin was built for another abi_major, or
                              * needs a newer core minor (min_core_abi_minor) */
  CX_ERROR_INVALID_PLUGIN,   /* descriptor or vtable too short, required method NULL */
  CX_ERROR_INIT_REFUSED,     /* the plugin's init method declined to load */
  CX_ERROR_DUPLICATE,        /* another plugin of the same name came first */
  CX_ERROR_CONFIG,           /* config file unreadable or malformed */
  CX_ERROR_OPTION,           /* unknown option, or a value of the wrong type */
  CX_ERROR_UNSUPPORTED,      /* the backend does not implement this operation */
  CX_ERROR_BACKEND,          /* the backend could not run the request at all */
  CX_ERROR_JSON,             /* malformed JSON, or JSON of the wrong shape */
  CX_ERROR_PYTHON,           /* Python code raised an exception in an executor operation */
  /* ABI 1.1 */
  CX_ERROR_NOTEBOOK,         /* a file that is not an nbformat 4 notebook, or cannot be written */
  CX_ERROR_CELL,             /* a notebook cell failed and the run stopped there */
  /* ABI 1.2 */
  CX_ERROR_TOO_LARGE,        /* valid input past a bound cellexec sets (CX_JSON_MAX_VALUES) */
} cx_error_code;

/* ABI 1.2: the request type of cx_session_request() (and the backend
 * vtable's session_request) that evaluates execute_request's
 * user_expressions after a cell.  Not a message of the protocol, which
 * carries them inside execute_request, but asked apart so that a backend
 * answers it without knowing the rest of that request. */
#define CX_REQUEST_USER_EXPRESSIONS "user_expressions"

/* ABI 1.1: NODE as JSON text, compact or PRETTY: json_to_string() made
 * strict.  json-glib 1.6 writes U+001F raw, which strict parsers (Python's
 * json, browsers) reject; here every control character is escaped.  Byte
 * strings the core put into NODE with NUL bytes kept (cx_result_to_json)
 * come out with \u0000.  Use it wherever JSON leaves a program; free with
 * g_free(). */
CX_EXPORT char *cx_json_to_string(JsonNode *node, gboolean pretty);

/* ABI 1.1: the JSON value in TEXT (LENGTH bytes, or -1 for a C string) as a
 * new node (json_node_unref), or NULL with CX_ERROR_JSON naming the problem:
 * json_from_string() made safe for a NUL.  A JsonNode string is a C string,
 * and json-glib ends it at a \u0000 escape, losing the rest of it (the rest
 * of a stream, say); here each \u0000 is read as U+FFFD instead, so only
 * the NUL itself changes.  So is a \u escape of a lone surrogate (Python
 * writes them for undecodable bytes), which json-glib would turn into bytes
 * that are not UTF-8 or a failed document.  Arrays and objects nested more
 * than CX_JSON_MAX_DEPTH levels deep are refused, naming the byte (counted
 * from 0) where the text goes deeper: json-glib's parser would overflow the
 * stack on them and crash the program.  Text of more than CX_JSON_MAX_BYTES
 * bytes, or of more than CX_JSON_MAX_VALUES values, is refused with
 * CX_ERROR_TOO_LARGE (ABI 1.2; before, the tree was built, at up to a
 * hundred times the size of the text, and the program aborted when memory
 * ran out).  Use it wherever JSON comes into a program. */
CX_EXPORT JsonNode *cx_json_from_string(const char *text, gssize length, GError **error);
/* ABI 1.2: how cx_json_from_string_bounded() reads strings. */
typedef enum {
  CX_JSON_READ_DEFAULT = 0,
  /* A \u0000 is read as CX_RESULT_NUL, as cx_json_from_string_keeping_nul()
   * reads it, not as U+FFFD. */
  CX_JSON_READ_KEEP_NUL = 1 << 0,
} cx_json_read_flags;

/* ABI 1.2: cx_json_from_string() (with CX_JSON_READ_KEEP_NUL in FLAGS,
 * cx_json_from_string_keeping_nul()) reading at most MAX_VALUES values (no
 * more than CX_JSON_MAX_VALUES whatever MAX_VALUES says), for input known
 * to hold few, such as an HTTP request's body: json-glib's tree of it then
 * takes at most about 300 bytes per value beyond the text. */
CX_EXPORT JsonNode *cx_json_from_string_bounded(const char *text, gssize length,
                                                guint max_values, cx_json_read_flags flags,
                                                GError **error);
/* ABI 1.1: like cx_json_from_string(), but a \u0000 in a string (or a member
 * name) is read as CX_RESULT_NUL, the two bytes C0 80 that no UTF-8 text
 * holds, instead of U+FFFD: for text a plugin passes on whole, such as a
 * kernel's stream output (turn the marker back into NUL before
 * cx_result_append_stdout()) or an exception's message
 * (cx_result_set_error() takes the marker as NUL).  The rare text that
 * holds a NUL and every character from U+FDD0 to U+FDEF fails with
 * CX_ERROR_UNSUPPORTED.  Free with json_node_unref(). */
CX_EXPORT JsonNode *cx_json_from_string_keeping_nul(const char *text, gssize length,
                                                    GError **error);

/* ABI 1.1: the deepest nesting of arrays and objects cx_json_from_string
 * reads.  Python's json module (and so nbformat and Jupyter's messages)
 * reads and writes fewer than 1000 levels under its default recursion
 * limit; 10000 leaves room for a raised limit or a newer Python, and
 * json-glib reads and frees it in less than 2 MiB of stack. */
#define CX_JSON_MAX_DEPTH 10000

/* ABI 1.2: the most values (arrays, objects, strings, numbers, true, false
 * and null, each member's value counted) and the longest text
 * cx_json_from_string reads in one piece.  json-glib builds the whole
 * tree, from 45 bytes of memory per value to 300 (an empty object), so
 * 60 MB of "[]," would take 2.4 GB: bounded, a text costs at most about
 * 300 MB beyond its own bytes.  A million values is more than a notebook
 * of ten thousand cells holds, and a string of any length is one value
 * (a picture in base64, a table's HTML); 256 MiB is CX_FILE_MAX_SIZE, the
 * largest notebook cellexec reads. */
#define CX_JSON_MAX_VALUES 1000000
#define CX_JSON_MAX_BYTES (256 * 1024 * 1024)

/* ABI 1.1: the largest file cx_file_get_contents reads: 256 MiB. */
#define CX_FILE_MAX_SIZE (256 * 1024 * 1024)

/* ABI 1.1: g_file_get_contents() made safe for a path from anyone: the
 * contents of the regular file PATH, NUL-terminated, in *CONTENTS (g_free
 * it) and their size in *LENGTH (may be NULL).  A directory, a FIFO, a
 * device (/dev/zero would be read until memory runs out) or a file larger
 * than CX_FILE_MAX_SIZE is refused, with CX_ERROR_FAILED and one sentence
 * naming PATH, as is a file that cannot be read.  Notebooks, recordings and
 * the fake backend's responses are read with it. */
CX_EXPORT gboolean cx_file_get_contents(const char *path, char **contents, gsize *length,
                                        GError **error);

/* The library version at run time ("0.1.0"); compare with CX_VERSION_STRING. */
CX_EXPORT const char *cx_version(void);

/* Opaque types.  Owned by the core; plugins and clients use them only through
 * the functions declared in result.h, options.h and cellexec.h. */
typedef struct cx_result cx_result;           /* result bundle of one cell */
typedef struct cx_options cx_options;         /* backend options, checked against a schema */
typedef struct cx_run_options cx_run_options; /* options of one run_cell call */

G_END_DECLS

#endif /* CELLEXEC_COMMON_H */
