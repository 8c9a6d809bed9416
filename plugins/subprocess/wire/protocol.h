/* plugins/subprocess/wire/protocol.h: the messages of the worker protocol.
 *
 * docs/worker-protocol.md is the reference; this is its C form, shared by
 * the plugin (the host end) and cellexec-worker.  Payloads are JSON objects
 * except OUTPUT, which carries raw bytes so a cell's output crosses
 * unchanged, invalid UTF-8 included.
 */
#ifndef CX__WIRE_PROTOCOL_H
#define CX__WIRE_PROTOCOL_H

#include <cellexec/common.h>

#include "lib/peer_json.h"
#include "plugins/subprocess/wire/frame.h"

G_BEGIN_DECLS

/* Bumped on any incompatible change; the host refuses other versions. */
#define CX__WIRE_PROTOCOL_VERSION 1

typedef enum {
  /* worker -> host, first frame on the control channel */
  CX__WIRE_MSG_HELLO = 'H',
  /* host -> worker: open a channel (passed as the frame's descriptor) for
   * one cell ("cell") or a session ("session"); host -> session: a cell */
  CX__WIRE_MSG_RUN = 'R',
  /* cell process -> host: it runs, as process (and process group) PID */
  CX__WIRE_MSG_STARTED = 'S',
  /* cell process -> host: output, see cx__wire_{encode,decode}_output */
  CX__WIRE_MSG_OUTPUT = 'O',
  /* cell process -> host: a display, update_display, clear_output or the
   * cell's value, as a JSON event (see cx__py_output_func), in order
   * with the OUTPUT frames around it */
  CX__WIRE_MSG_DISPLAY = 'P',
  /* cell process -> host: the cell's result (stdout, stderr, rich_outputs
   * and outputs empty: they came as OUTPUT and DISPLAY) */
  CX__WIRE_MSG_RESULT = 'D',
  /* cell process -> host: please stop me, I passed a limit */
  CX__WIRE_MSG_LIMIT = 'L',
  /* fork server -> host, on a cell's channel: its process ended */
  CX__WIRE_MSG_EXITED = 'X',
  /* worker -> host: a request failed ({"message"}) */
  CX__WIRE_MSG_ERROR = 'E',
  /* host -> session process: an executor operation ({"op", "env", ...});
   * see "Executor operations" in docs/worker-protocol.md */
  CX__WIRE_MSG_EXECUTOR_REQUEST = 'Q',
  /* session process -> host: the outcome of the innermost executor request
   * pending ({"value"}, {"env"}, {} or {"python_error"} / {"error"}) */
  CX__WIRE_MSG_EXECUTOR_REPLY = 'Y',
  /* session process -> host: call host function {"function", "arguments"} */
  CX__WIRE_MSG_HOST_CALL = 'C',
  /* host -> session process: the outcome of the innermost HOST_CALL
   * pending ({"value"} or {"error"}) */
  CX__WIRE_MSG_HOST_RETURN = 'T',
  /* cell process -> host: the cell's input() or getpass() asks
   * ({"prompt", "password"}); only when its RUN said "stdin": true */
  CX__WIRE_MSG_INPUT = 'I',
  /* host -> cell process: the answer to INPUT ({"value"}, or {"error"}
   * with "cancelled": true when the wait was interrupted) */
  CX__WIRE_MSG_INPUT_REPLY = 'A',
} cx__wire_message_type;

/* The "op" of an EXECUTOR_REQUEST. */
#define CX__WIRE_OP_PRELUDE "prelude"
#define CX__WIRE_OP_EVALUATE_INLINE "evaluate_inline"
#define CX__WIRE_OP_EXECUTE_BLOCK "execute_block"
#define CX__WIRE_OP_SIDE_EFFECTS "side_effects"
#define CX__WIRE_OP_BIND_FUNCTION "bind_function"
#define CX__WIRE_OP_TYPE_EXPRESSION "type_expression"
#define CX__WIRE_OP_SNAPSHOT "snapshot"
#define CX__WIRE_OP_FREE_ENV "free_env" /* the one without a reply */
/* A Jupyter request beside execute ({"type", "content"}), answered in the
 * session's namespace: {"value": reply content}, or {"value": null} for a
 * type the worker does not answer. */
#define CX__WIRE_OP_KERNEL_REQUEST "kernel_request"

/* EXECUTOR_REPLY and HOST_RETURN payloads are replies as lib/peer_json.h
 * encodes them (cx__peer_reply_new, cx__peer_reply_check). */

/* OUTPUT payload: 1 byte stream (1 stdout, 2 stderr), 8 bytes big-endian
 * count of bytes the worker left out before DATA (never from the head of
 * a stream: see output-limit), then DATA. */
#define CX__WIRE_OUTPUT_HEADER_SIZE 9
void cx__wire_encode_output_header(guint8 header[CX__WIRE_OUTPUT_HEADER_SIZE], int stream,
                                   guint64 omitted);
gboolean cx__wire_decode_output(const guint8 *payload, gsize len, int *stream,
                                guint64 *omitted, const guint8 **data, gsize *data_len,
                                GError **error);

/* PAYLOAD as a JSON object (a new node), or NULL with CX_ERROR_BACKEND
 * naming WHAT (the message) when it is not one, or CX_ERROR_TOO_LARGE
 * when it is more than cx_json_from_string reads.  The _mutable form's nodes
 * may be changed (to bound them). */
JsonNode *cx__wire_parse_object(const guint8 *payload, gsize len, const char *what,
                                GError **error);
JsonNode *cx__wire_parse_mutable_object(const guint8 *payload, gsize len, const char *what,
                                        GError **error);
/* A RESULT payload: a NUL of its error's message or traceback (an
 * exception's str() may hold one) read as CX_RESULT_NUL, as
 * cx_result_set_error() takes it, not as U+FFFD. */
JsonNode *cx__wire_parse_result(const guint8 *payload, gsize len, GError **error);

/* The length of NODE's compact JSON text (what a frame of it would carry). */
gsize cx__wire_json_size(JsonNode *node);

/* Send OBJECT (consumed) as the payload of a TYPE frame, with FD_TO_PASS. */
gboolean cx__wire_send_object(int socket, guint8 type, JsonObject *object, int fd_to_pass,
                              GError **error);

/* Send an ERROR frame ({"message": MESSAGE}): the one way the worker (its
 * main program, the fork server, a cell's process) says it could not do
 * what was asked. */
gboolean cx__wire_send_error(int socket, const char *message, GError **error);
/* The message of an ERROR payload OBJECT (borrowed), whatever the sender
 * put there. */
const char *cx__wire_error_message(JsonObject *object);

/* The EXITED payload for a waitpid() STATUS, and its reading as text:
 * "exited with status 3", "was killed by signal 11 (SIGSEGV)". */
JsonObject *cx__wire_exit_object(int wait_status);
char *cx__wire_describe_exit(JsonObject *exited);
/* The signal number in an EXITED object, or 0 when the process exited. */
int cx__wire_exit_signal(JsonObject *exited);

/* "SIGSEGV" for 11; "signal 99" for a number without a name. */
char *cx__wire_signal_name(int signal_number);

G_END_DECLS

#endif /* CX__WIRE_PROTOCOL_H */
