/* tests/fuzz/fuzz_kernel.c: libFuzzer target for what `cellexec kernel`
 * takes from a peer that may not have the key: a multipart message read
 * from a ZeroMQ socket within the kernel's bounds, frame by frame
 * (jp_zmq_recv_frames_within over inproc), split at the delimiter, its
 * signature checked, its header, parent, metadata and content decoded,
 * then the members a request's handler reads; and the two WebSocket
 * framings `cellexec serve`'s kernels API reads its messages from.
 *
 * Input: a mode byte, then the frames, separated by the byte 0xFF (never
 * in UTF-8, so every JSON frame can be written as is).  Mode bit 0: sign
 * the message with the key, so that fuzzing reaches past the signature
 * check; bit 1: small bounds (8 frames, 256 bytes), so that dropping a
 * message part way is reached too; bit 2: the rest is one v1 WebSocket
 * frame instead; bit 3: one WebSocket text frame. */
#include "config.h"

#include <string.h>
#include <zmq.h>

#include "jupyter_protocol/message.h"
#include "jupyter_protocol/zmq_frames.h"
#include "lib/peer_json.h"
#include "tests/fuzz/jupyter_frames.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define KEY "fuzz-key"

/* What a kernel reads of a request, whatever its type. */
static void
read_request(const jp_message *m)
{
  JsonObject *content = m->content;
  const char *code = cx__peer_get_string(content, "code", "");
  gboolean silent = cx__peer_get_boolean(content, "silent", FALSE);
  gboolean stored = cx__peer_get_boolean(content, "store_history", TRUE);
  gboolean stdin_allowed = cx__peer_get_boolean(content, "allow_stdin", FALSE);
  gint64 cursor = cx__peer_get_int(content, "cursor_pos", -1);
  JsonObject *expressions = cx__peer_get_object(content, "user_expressions");
  const char *comm = cx__peer_get_string(content, "comm_id", "");
  g_autoptr(GBytes) again = jp_json_bytes(content);
  g_autoptr(GBytes) header = jp_json_bytes(m->header);
  (void)code, (void)silent, (void)stored, (void)stdin_allowed, (void)cursor, (void)comm;
  (void)expressions;
  (void)g_bytes_get_size(m->header_json);
  for (guint i = 0; m->identities != NULL && i < m->identities->len; i++) /* ZeroMQ's only */
    (void)g_bytes_get_size(m->identities->pdata[i]);
}

/* The frames of DATA through a socket pair, read back as the kernel reads
 * its sockets: within BOUNDS. */
static GPtrArray *
through_a_socket(GPtrArray *frames, const jp_zmq_bounds *bounds)
{
  static void *context, *in, *out;
  if (context == NULL) {
    context = zmq_ctx_new();
    out = zmq_socket(context, ZMQ_PAIR);
    in = zmq_socket(context, ZMQ_PAIR);
    g_assert(zmq_bind(out, "inproc://fuzz-kernel") == 0);
    g_assert(zmq_connect(in, "inproc://fuzz-kernel") == 0);
  }
  g_assert(jp_zmq_send_frames(in, frames));
  gboolean dropped;
  GPtrArray *read = jp_zmq_recv_frames_within(out, 0, bounds, &dropped);
  gsize bytes = 0;
  for (guint i = 0; i < frames->len; i++)
    bytes += g_bytes_get_size(frames->pdata[i]);
  /* Dropped exactly when over a bound, and nothing left behind. */
  g_assert(dropped == (frames->len > bounds->max_frames || bytes > bounds->max_bytes));
  g_assert(dropped == (read == NULL));
  return read;
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  if (size < 1 || size > 1 << 20)
    return 0;
  guint8 mode = data[0];
  jp_counters counters = { 0 };
  g_autoptr(jp_message) m = NULL;
  if (mode & 4) {
    m = jp_message_from_websocket_v1(data + 1, size - 1, CX_JSON_MAX_VALUES, &counters);
  } else if (mode & 8) {
    m = jp_message_from_websocket((const char *)data + 1, size - 1, CX_JSON_MAX_VALUES,
                                  &counters);
  } else {
    g_autoptr(GPtrArray) frames = fuzz_split_frames(data + 1, size - 1);
    if (mode & 1)
      fuzz_sign_frames(frames, KEY);
    const jp_zmq_bounds bounds = (mode & 2) ? (jp_zmq_bounds){ 256, 8 }
                                            : (jp_zmq_bounds){ 64 << 20, 1024 };
    g_autoptr(GPtrArray) read = through_a_socket(frames, &bounds);
    if (read != NULL)
      (void)jp_message_decode(KEY, read, &counters, &m);
  }
  if (m != NULL)
    read_request(m);
  return 0;
}
