/* plugins/subprocess/protocol.h: the messages of the worker protocol.
 *
 * docs/worker-protocol.md is the reference; this is its C form, shared by
 * the plugin (the host end) and cellexec-worker.  Payloads are JSON objects
 * except OUTPUT, which carries raw bytes so a cell's output crosses
 * unchanged, invalid UTF-8 included.
 */
#ifndef CX_SUBPROCESS_PROTOCOL_H
#define CX_SUBPROCESS_PROTOCOL_H

#include <cellexec/common.h>

#include "plugins/subprocess/frame.h"

G_BEGIN_DECLS

/* Bumped on any incompatible change; the host refuses other versions. */
#define CX_WORKER_PROTOCOL_VERSION 1

typedef enum {
  /* worker -> host, first frame on the control channel */
  CX_MSG_HELLO = 'H',
  /* host -> worker: open a channel (passed as the frame's descriptor) for
   * one cell ("cell") or a session ("session"); host -> session: a cell */
  CX_MSG_RUN = 'R',
  /* cell process -> host: it runs, as process (and process group) PID */
  CX_MSG_STARTED = 'S',
  /* cell process -> host: output, see cx_protocol_{encode,decode}_output */
  CX_MSG_OUTPUT = 'O',
  /* cell process -> host: a display, update_display, clear_output or the
   * cell's value, as a JSON event (see cx_pyembed_output_func), in order
   * with the OUTPUT frames around it */
  CX_MSG_DISPLAY = 'P',
  /* cell process -> host: the cell's result (stdout, stderr, rich_outputs
   * and outputs empty: they came as OUTPUT and DISPLAY) */
  CX_MSG_RESULT = 'D',
  /* cell process -> host: please stop me, I passed a limit */
  CX_MSG_LIMIT = 'L',
  /* fork server -> host, on a cell's channel: its process ended */
  CX_MSG_EXITED = 'X',
  /* worker -> host: a request failed ({"message"}) */
  CX_MSG_ERROR = 'E',
  /* host -> session process: an executor operation ({"op", "env", ...});
   * see "Executor operations" in docs/worker-protocol.md */
  CX_MSG_EXECUTOR_REQUEST = 'Q',
  /* session process -> host: the outcome of the innermost executor request
   * pending ({"value"}, {"env"}, {} or {"python_error"} / {"error"}) */
  CX_MSG_EXECUTOR_REPLY = 'Y',
  /* session process -> host: call host function {"function", "arguments"} */
  CX_MSG_HOST_CALL = 'C',
  /* host -> session process: the outcome of the innermost HOST_CALL
   * pending ({"value"} or {"error"}) */
  CX_MSG_HOST_RETURN = 'T',
} cx_message_type;

/* The "op" of an EXECUTOR_REQUEST. */
#define CX_EXECUTOR_OP_PRELUDE "prelude"
#define CX_EXECUTOR_OP_EVALUATE_INLINE "evaluate_inline"
#define CX_EXECUTOR_OP_EXECUTE_BLOCK "execute_block"
#define CX_EXECUTOR_OP_SIDE_EFFECTS "side_effects"
#define CX_EXECUTOR_OP_BIND_FUNCTION "bind_function"
#define CX_EXECUTOR_OP_TYPE_EXPRESSION "type_expression"
#define CX_EXECUTOR_OP_SNAPSHOT "snapshot"
#define CX_EXECUTOR_OP_FREE_ENV "free_env" /* the one without a reply */

/* The payload of an EXECUTOR_REPLY or HOST_RETURN for a failure: a Python
 * exception ({"python_error": {"type", "message", "traceback", "line"}})
 * when ERROR is CX_ERROR_PYTHON, else {"error": message}. */
JsonObject *cx_protocol_error_object(const GError *error);
/* The reverse: FALSE with ERROR set when REPLY holds a failure (an
 * "error" from the worker is CX_ERROR_BACKEND, prefixed with WHO). */
gboolean cx_protocol_check_reply(JsonObject *reply, const char *who, GError **error);

/* OUTPUT payload: 1 byte stream (1 stdout, 2 stderr), 8 bytes big-endian
 * count of bytes the worker left out before DATA (never from the head of
 * a stream: see output-limit), then DATA. */
#define CX_OUTPUT_HEADER_SIZE 9
void cx_protocol_encode_output_header(guint8 header[CX_OUTPUT_HEADER_SIZE], int stream,
                                      guint64 omitted);
gboolean cx_protocol_decode_output(const guint8 *payload, gsize len, int *stream,
                                   guint64 *omitted, const guint8 **data, gsize *data_len,
                                   GError **error);

/* PAYLOAD as a JSON object (a new node), or NULL with CX_ERROR_BACKEND
 * naming WHAT (the message) when it is not one.  The _mutable form's nodes
 * may be changed (to bound them). */
JsonNode *cx_protocol_parse_object(const guint8 *payload, gsize len, const char *what,
                                   GError **error);
JsonNode *cx_protocol_parse_mutable_object(const guint8 *payload, gsize len, const char *what,
                                           GError **error);

/* The length of NODE's compact JSON text (what a frame of it would carry). */
gsize cx_protocol_json_size(JsonNode *node);

/* Member KEY of OBJECT when it is an array / object (borrowed), else NULL:
 * payloads come from processes that run untrusted code. */
JsonArray *cx_protocol_get_array(JsonObject *object, const char *key);
JsonObject *cx_protocol_get_object(JsonObject *object, const char *key);
/* The string member KEY of OBJECT, or FALLBACK when missing or not a string. */
const char *cx_protocol_get_string(JsonObject *object, const char *key, const char *fallback);

/* Send OBJECT (consumed) as the payload of a TYPE frame, with FD_TO_PASS. */
gboolean cx_protocol_send_object(int socket, guint8 type, JsonObject *object, int fd_to_pass,
                                 GError **error);

/* Bounding what a cell shows (docs/worker-protocol.md, "Limits").  A
 * text over LIMIT bytes keeps its head and tail (UTF-8 characters whole)
 * with a line saying how much was left out between them, as the streams
 * do; other data over LIMIT is left out with a placeholder in its stead.
 * Each cut adds {"part", "total_bytes", "omitted_bytes"} to TRUNCATED.
 * Largest part an event or a result whose frame would be too long keeps,
 * whatever output-limit says (0: no limit). */
#define CX_PROTOCOL_PART_MAX (CX_FRAME_MAX_PAYLOAD / 4)
/* The line that stands where OMITTED bytes of a stream or a text were left
 * out (a new string): the one wording, wherever a cut is made. */
char *cx_protocol_omitted_line(guint64 omitted);
/* TEXT (LEN bytes) cut to LIMIT, or NULL when it fits. */
char *cx_protocol_cut_text(const char *text, gsize len, guint64 limit, guint64 *omitted);
/* Bound the MIME values and metadata of a DISPLAY event, or the evalue
 * and traceback of an error event, to LIMIT (0: none). */
void cx_protocol_bound_event(JsonObject *event, guint64 limit, JsonArray *truncated);
/* Bound the member KEY (a string) of OBJECT, recorded as PART. */
void cx_protocol_bound_string(JsonObject *object, const char *key, const char *part,
                              guint64 limit, JsonArray *truncated);

/* The EXITED payload for a waitpid() STATUS, and its reading as text:
 * "exited with status 3", "was killed by signal 11 (SIGSEGV)". */
JsonObject *cx_protocol_exit_object(int wait_status);
char *cx_protocol_describe_exit(JsonObject *exited);
/* The signal number in an EXITED object, or 0 when the process exited. */
int cx_protocol_exit_signal(JsonObject *exited);

/* "SIGSEGV" for 11; "signal 99" for a number without a name. */
char *cx_protocol_signal_name(int signal_number);

G_END_DECLS

#endif /* CX_SUBPROCESS_PROTOCOL_H */
