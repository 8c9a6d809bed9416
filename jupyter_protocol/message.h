/* jupyter_protocol: Jupyter messages (messaging protocol 5.3), both sides.
 *
 * The codec that the jupyter backend (a client of kernels) and the
 * `cellexec kernel` (a kernel) share: a message on ZeroMQ is
 *
 *   [routing ids...] "<IDS|MSG>" HMAC header parent_header metadata content [buffers...]
 *
 * where HMAC is the hex HMAC-SHA256 of the four JSON frames with the
 * connection's key ("" for unsigned connections).  A message whose
 * signature is missing or wrong, that is not JSON, or lacks a header is
 * dropped and counted, never looked at further.  On a WebSocket (a Jupyter
 * Server's channels) a message is one JSON text with a "channel" member.
 *
 * Internal to cellexec (names jp_): a convenience library linked into the
 * jupyter plugin and the cellexec program, never installed. */
#ifndef CX_JUPYTER_PROTOCOL_MESSAGE_H
#define CX_JUPYTER_PROTOCOL_MESSAGE_H

#include <glib.h>
#include <json-glib/json-glib.h>

G_BEGIN_DECLS

/* The protocol version spoken, and the frame before the signature. */
#define JP_PROTOCOL_VERSION "5.3"
#define JP_DELIMITER "<IDS|MSG>"

/* Channels, in the order of a connection file's ports. */
enum { JP_SHELL, JP_IOPUB, JP_STDIN, JP_CONTROL, JP_HB, JP_N_CHANNELS };
/* Their names, as connection files ("shell_port") and WebSocket messages
 * ("channel") give them. */
extern const char *const jp_channel_names[JP_N_CHANNELS];

/* Messages dropped on a connection; updated atomically. */
typedef struct {
  gint bad_signature; /* HMAC missing or wrong */
  gint wrong_parent;  /* signed, but a reply to someone else's request */
  gint malformed;     /* not a Jupyter message, or not JSON */
  gint oversized;     /* more frames or bytes than a kernel's bounds */
} jp_counters;

typedef struct {
  int channel;               /* WebSocket: the channel it came on; a request a
                              * kernel queued from control: JP_CONTROL; else -1 */
  char *msg_type;
  char *msg_id;
  char *parent_id;           /* "" when none */
  JsonObject *header, *parent, *metadata, *content;
  /* HEADER as JSON, written when the message came: the parent_header of
   * what answers it.  Threads answering one request share these bytes,
   * never the JsonObject, whose references json-glib does not count
   * atomically. */
  GBytes *header_json;
  GPtrArray *identities;     /* ZeroMQ routing ids before the delimiter (GBytes) */
  gboolean nul_replaced;     /* content held a NUL, read as U+FFFD (see below) */
  /* jp_message_decode(): why the content was not read, more than
   * cx_json_from_string reads (CX_JSON_MAX_VALUES, CX_JSON_MAX_BYTES);
   * CONTENT is {} then.  NULL: it was read. */
  char *too_large;
} jp_message;

void jp_message_free(jp_message *message);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(jp_message, jp_message_free)

typedef enum {
  JP_RECV_NONE,     /* nothing waiting (ZMQ_DONTWAIT) or the socket failed */
  JP_RECV_OK,       /* *MESSAGE set */
  JP_RECV_DROPPED,  /* a message came and was dropped (counted) */
} jp_recv_status;

/* A new header for MSG_TYPE in SESSION, from USERNAME; *MSG_ID gets its
 * id (new). */
JsonObject *jp_header_new(const char *session, const char *username, const char *msg_type,
                          char **msg_id);
/* The frames of a message (GBytes): IDENTITIES (may be NULL), the
 * delimiter, the signature with KEY, HEADER, PARENT_JSON (the parent's
 * header_json), METADATA and CONTENT (each may be NULL: {}). */
GPtrArray *jp_message_encode(const char *key, GPtrArray *identities, JsonObject *header,
                             GBytes *parent_json, JsonObject *metadata, JsonObject *content);
/* The message in FRAMES (GBytes, as received: routing ids, delimiter,
 * signature, the four JSON frames, buffers), its signature checked with
 * KEY ("": unsigned); JP_RECV_DROPPED, counted in COUNTERS, when it is
 * not a well-formed, well-signed message.
 *
 * A NUL in the content cannot be held by json-glib, so it is read as
 * U+FFFD; a stream's text, an error's name, value and traceback and an
 * execute_request's code keep it as CX_RESULT_NUL (the result's marker)
 * instead, and for any other message nul_replaced says a NUL was
 * replaced.  So do the two WebSocket readers below.  A content too large
 * to read comes as {}, with too_large saying why: JP_RECV_OK still, so
 * that the request it answers can fail with that reason. */
jp_recv_status jp_message_decode(const char *key, GPtrArray *frames, jp_counters *counters,
                                 jp_message **message);
/* The message in a WebSocket text frame TEXT (JSON with a "channel"), or
 * NULL, counted as malformed in COUNTERS.  A text too large to read (more
 * than MAX_VALUES values, CX_JSON_MAX_VALUES at most: what a peer's
 * messages may hold) comes as a message of no channel (-1), with "" for
 * its type and ids, {} for its parts, and too_large saying why. */
jp_message *jp_message_from_websocket(const char *text, gsize len, guint max_values,
                                      jp_counters *counters);

/* A message as a WebSocket text frame: JSON with its CHANNEL's name and
 * HEADER, PARENT, METADATA and CONTENT (each may be NULL: {}), no buffers,
 * and the header's msg_id and msg_type at the top too, as Jupyter Server
 * writes them (clients such as E2B's server and jupyter_server's gateway
 * client read them there).  New. */
char *jp_message_to_websocket(int channel, JsonObject *header, JsonObject *parent,
                              JsonObject *metadata, JsonObject *content);

/* The WebSocket subprotocol of Jupyter Server 2 and JupyterLab 4: each
 * message one binary frame, the channel's name and the four JSON parts
 * behind a table of offsets (all little-endian 64-bit):
 *
 *   N, offset[0] ... offset[N-1], channel, header, parent, metadata, content[, buffers]
 *
 * where offset[0] = 8 * (N + 1) and part i runs from offset[i] to
 * offset[i+1] (the last to the end).  Buffers are not kept. */
#define JP_WEBSOCKET_V1 "v1.kernel.websocket.jupyter.org"
GBytes *jp_message_to_websocket_v1(int channel, JsonObject *header, JsonObject *parent,
                                   JsonObject *metadata, JsonObject *content);

/* The same two framings from the four parts already written as JSON
 * (header, parent, metadata, content; jp_json_bytes()): text made on one
 * thread can be framed on another, where json-glib's objects, whose
 * references are not atomic, could not be shared. */
char *jp_websocket_text_of_parts(int channel, GBytes *const parts[4], const char *msg_id,
                                 const char *msg_type);
GBytes *jp_websocket_v1_of_parts(int channel, GBytes *const parts[4]);
/* The message in a v1 binary frame, or NULL, counted as malformed in
 * COUNTERS: a table that does not fit the frame, parts out of order, a
 * channel it does not name, or parts that are not JSON objects (of at
 * most MAX_VALUES values each). */
jp_message *jp_message_from_websocket_v1(const guint8 *data, gsize len, guint max_values,
                                         jp_counters *counters);

/* The signature of the four JSON frames, hex; and its check, in constant
 * time. */
char *jp_sign(const char *key, const GBytes *const frames[4]);
gboolean jp_signature_equal(const char *expected, const char *given, gsize given_len);

/* The JSON object in DATA (new), or NULL; bytes that are not UTF-8 are
 * read as U+FFFD, as jupyter_client reads them, and the text with
 * cx_json_from_string(), so a NUL or a lone surrogate is U+FFFD too. */
JsonObject *jp_json_parse_object(const char *data, gsize len);
/* The JSON document in FILE (a kernelspec, a connection file), read as
 * every JSON cellexec reads: bounded in size and depth. */
JsonNode *jp_json_from_file(const char *file, GError **error);
/* OBJECT as compact JSON text, in bytes (new). */
GBytes *jp_json_bytes(JsonObject *object);

G_END_DECLS

#endif /* CX_JUPYTER_PROTOCOL_MESSAGE_H */
