/* The Jupyter message codec (jupyter_protocol/message.c), linked in
 * directly: what a kernel, a front end or a gateway sends is untrusted.
 * Content nested 100,000 levels deep overflowed json-glib's parser and
 * killed the host; such a message is now dropped, counted as malformed,
 * as every other message that is not JSON it can read.  A message over a
 * kernel's bounds is dropped as it is read.  Content of more than
 * CX_JSON_MAX_VALUES values (20 million empty lists from a real ipykernel
 * aborted the host) is valid, and its request must learn of it: the
 * message comes with {} for content and too_large saying why. */
#include "config.h"

#include <string.h>
#include <zmq.h>

#include "jupyter_protocol/zmq_frames.h"
#include "plugins/jupyter/kernel-private.h"
#include "tests/cx_test.h"

#define HOSTILE_LEVELS 100000

static void
add_frame(GPtrArray *frames, const char *text)
{
  g_ptr_array_add(frames, g_bytes_new(text, strlen(text)));
}

/* An unsigned ZeroMQ message (key ""), as a kernel sends it, with CONTENT. */
static GPtrArray *
zmq_message(const char *content)
{
  GPtrArray *frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  add_frame(frames, "<IDS|MSG>");
  add_frame(frames, ""); /* the signature of an unsigned message */
  add_frame(frames, "{\"msg_type\": \"display_data\", \"msg_id\": \"m1\"}");
  add_frame(frames, "{\"msg_id\": \"p1\"}");
  add_frame(frames, "{}");
  add_frame(frames, content);
  return frames;
}

static void
test_zmq_message_with_hostile_content_is_dropped(void)
{
  jp_counters counters = { 0 };
  g_autoptr(jp_message) fine = NULL;
  g_autoptr(GPtrArray) good = zmq_message("{\"data\": {}, \"metadata\": {}}");
  CU_ASSERT_EQUAL(jp_message_decode("", good, &counters, &fine), JP_RECV_OK);

  g_autofree char *deep = cx_test_nested_json(HOSTILE_LEVELS, "0");
  g_autofree char *content = g_strdup_printf("{\"data\": {\"x\": %s}, \"metadata\": {}}", deep);
  g_autoptr(GPtrArray) hostile = zmq_message(content);
  g_autoptr(jp_message) m = NULL;
  CU_ASSERT_EQUAL(jp_message_decode("", hostile, &counters, &m), JP_RECV_DROPPED);
  CU_ASSERT_PTR_NULL(m);
  CU_ASSERT_EQUAL(counters.malformed, 1);
}

/* A WebSocket text message on IOPub with CONTENT, read, counted in
 * COUNTERS. */
static jp_message *
websocket_message(const char *content, jp_counters *counters)
{
  g_autofree char *text = g_strdup_printf(
    "{\"channel\": \"iopub\", \"header\": {\"msg_type\": \"display_data\", \"msg_id\": \"m1\"}, "
    "\"parent_header\": {}, \"metadata\": {}, \"content\": %s}", content);
  return jp_message_from_websocket(text, strlen(text), CX_JSON_MAX_VALUES, counters);
}

static void
test_websocket_message_with_hostile_content_is_dropped(void)
{
  g_autofree char *deep = cx_test_nested_json(HOSTILE_LEVELS, "0");
  jp_counters counters = { 0 };
  g_autoptr(jp_message) m = websocket_message(deep, &counters);
  CU_ASSERT_PTR_NULL(m);
  CU_ASSERT_EQUAL(counters.malformed, 1);
}

/* "[[],[],...]" of CX_JSON_MAX_VALUES empty arrays: one value too many. */
static char *
too_wide_json(void)
{
  GString *text = g_string_sized_new(3 * CX_JSON_MAX_VALUES + 2);
  g_string_append_c(text, '[');
  for (guint i = 0; i < CX_JSON_MAX_VALUES; i++)
    g_string_append(text, i > 0 ? ",[]" : "[]");
  g_string_append_c(text, ']');
  return g_string_free(text, FALSE);
}

static void
test_zmq_message_with_too_wide_content_says_so(void)
{
  g_autofree char *wide = too_wide_json();
  g_autofree char *content = g_strdup_printf("{\"data\": {\"application/json\": %s}}", wide);
  g_autoptr(GPtrArray) frames = zmq_message(content);
  jp_counters counters = { 0 };
  g_autoptr(jp_message) m = NULL;
  CU_ASSERT_EQUAL(jp_message_decode("", frames, &counters, &m), JP_RECV_OK);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_STRING_EQUAL(m->msg_type, "display_data");
  CU_ASSERT_STRING_EQUAL(m->parent_id, "p1");
  CU_ASSERT_EQUAL(json_object_get_size(m->content), 0);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m->too_large);
  CX_ASSERT_CONTAINS(m->too_large, "JSON of more than 1000000 values");
  CU_ASSERT_EQUAL(counters.malformed, 0);
}

static void
test_websocket_message_too_wide_says_so(void)
{
  g_autofree char *wide = too_wide_json();
  jp_counters counters = { 0 };
  g_autoptr(jp_message) m = websocket_message(wide, &counters);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m);
  CU_ASSERT_EQUAL(m->channel, -1);
  CU_ASSERT_PTR_NOT_NULL_FATAL(m->too_large);
  CX_ASSERT_CONTAINS(m->too_large, "JSON of more than 1000000 values");
  CU_ASSERT_EQUAL(counters.malformed, 0);
}

/* What one side encodes the other decodes: the routing ids kept for the
 * reply, the parent's id, the content; one byte changed and the signature
 * no longer holds. */
static void
test_encoded_message_decodes_and_tampering_is_dropped(void)
{
  g_autofree char *parent_id = NULL, *id = NULL;
  g_autoptr(JsonObject) parent = jp_header_new("s1", "front end", "execute_request", &parent_id);
  g_autoptr(JsonObject) header = jp_header_new("s2", "kernel", "execute_reply", &id);
  g_autoptr(JsonObject) content = json_object_new();
  json_object_set_string_member(content, "status", "ok");
  g_autoptr(GPtrArray) identities = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  g_ptr_array_add(identities, g_bytes_new_static("client-1", 8));
  g_autoptr(GBytes) parent_json = jp_json_bytes(parent);
  g_autoptr(GPtrArray) frames = jp_message_encode("a key", identities, header, parent_json, NULL,
                                                  content);
  jp_counters counters = { 0 };
  g_autoptr(jp_message) m = NULL;
  CU_ASSERT_EQUAL_FATAL(jp_message_decode("a key", frames, &counters, &m), JP_RECV_OK);
  CU_ASSERT_STRING_EQUAL(m->msg_type, "execute_reply");
  CU_ASSERT_STRING_EQUAL(m->msg_id, id);
  CU_ASSERT_STRING_EQUAL(m->parent_id, parent_id);
  CU_ASSERT_STRING_EQUAL(cx__peer_get_string(m->content, "status", ""), "ok");
  CU_ASSERT_STRING_EQUAL(cx__peer_get_string(m->header, "version", ""), JP_PROTOCOL_VERSION);
  CU_ASSERT_EQUAL_FATAL(m->identities->len, 1);
  CU_ASSERT_TRUE(g_bytes_equal(m->identities->pdata[0], identities->pdata[0]));
  /* The content frame is the last: "ok" becomes "ko". */
  gsize len;
  const char *text = g_bytes_get_data(frames->pdata[frames->len - 1], &len);
  g_autofree char *tampered = g_strndup(text, len);
  char *ok = strstr(tampered, "\"ok\"");
  CU_ASSERT_PTR_NOT_NULL_FATAL(ok);
  memcpy(ok, "\"ko\"", 4);
  g_bytes_unref(frames->pdata[frames->len - 1]);
  frames->pdata[frames->len - 1] = g_bytes_new(tampered, len);
  g_autoptr(jp_message) forged = NULL;
  CU_ASSERT_EQUAL(jp_message_decode("a key", frames, &counters, &forged), JP_RECV_DROPPED);
  CU_ASSERT_EQUAL(counters.bad_signature, 1);
}

/* ---- Bounds on what a peer sends (jupyter_protocol/zmq_frames.c) ---- */

/* N_FRAMES frames of FRAME_SIZE bytes each, sent on IN as one message. */
static void
send_message(void *in, guint n_frames, gsize frame_size)
{
  g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  g_autofree char *data = g_malloc0(frame_size + 1);
  for (guint i = 0; i < n_frames; i++)
    g_ptr_array_add(frames, g_bytes_new(data, frame_size));
  CU_ASSERT_TRUE(jp_zmq_send_frames(in, frames));
}

/* A message over a bound is read to its end and dropped; the one behind it
 * comes whole.  Within the bounds, a message comes as it was sent. */
static void
test_messages_over_the_bounds_are_dropped_whole(void)
{
  void *context = zmq_ctx_new();
  void *out = zmq_socket(context, ZMQ_PAIR), *in = zmq_socket(context, ZMQ_PAIR);
  CU_ASSERT_EQUAL_FATAL(zmq_bind(out, "inproc://bounds"), 0);
  CU_ASSERT_EQUAL_FATAL(zmq_connect(in, "inproc://bounds"), 0);
  const jp_zmq_bounds bounds = { 100, 8 };
  static const struct {
    guint n_frames;
    gsize frame_size;
    gboolean dropped;
  } cases[] = {
    { 8, 12, FALSE }, /* 96 bytes: at both bounds */
    { 9, 0, TRUE },   /* a frame too many */
    { 2, 51, TRUE },  /* a byte too many */
    { 1, 101, TRUE }, /* one frame over the whole */
    { 1, 0, FALSE },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    send_message(in, cases[i].n_frames, cases[i].frame_size);
    send_message(in, 3, 1); /* the next message */
    gboolean dropped = !cases[i].dropped;
    g_autoptr(GPtrArray) first = jp_zmq_recv_frames_within(out, 0, &bounds, &dropped);
    CU_ASSERT_EQUAL(dropped, cases[i].dropped);
    CU_ASSERT_EQUAL(first == NULL, cases[i].dropped);
    if (first != NULL)
      CU_ASSERT_EQUAL(first->len, cases[i].n_frames);
    g_autoptr(GPtrArray) next = jp_zmq_recv_frames_within(out, 0, &bounds, &dropped);
    CU_ASSERT_FALSE(dropped);
    CU_ASSERT_TRUE_FATAL(next != NULL);
    CU_ASSERT_EQUAL(next->len, 3);
  }
  zmq_close(in);
  zmq_close(out);
  zmq_ctx_term(context);
}

/* ---- A NUL in an execute_request's code, through each reader ---- */

#define EXECUTE_HEADER "{\"msg_type\": \"execute_request\", \"msg_id\": \"m1\"}"

static jp_message *
decoded_from_zmq(const char *content, jp_counters *counters)
{
  g_autoptr(GPtrArray) frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  const char *const parts[] = { "<IDS|MSG>", "", EXECUTE_HEADER, "{}", "{}", content };
  for (gsize i = 0; i < G_N_ELEMENTS(parts); i++)
    add_frame(frames, parts[i]);
  jp_message *m = NULL;
  jp_message_decode("", frames, counters, &m);
  return m;
}

static jp_message *
decoded_from_websocket_text(const char *content, jp_counters *counters)
{
  g_autofree char *text = g_strdup_printf(
    "{\"channel\": \"shell\", \"header\": " EXECUTE_HEADER ", \"parent_header\": {}, "
    "\"metadata\": {}, \"content\": %s}", content);
  return jp_message_from_websocket(text, strlen(text), CX_JSON_MAX_VALUES, counters);
}

static jp_message *
decoded_from_websocket_v1(const char *content, jp_counters *counters)
{
  GBytes *parts[4] = { g_bytes_new_static(EXECUTE_HEADER, strlen(EXECUTE_HEADER)),
                       g_bytes_new_static("{}", 2), g_bytes_new_static("{}", 2),
                       g_bytes_new(content, strlen(content)) };
  g_autoptr(GBytes) frame = jp_websocket_v1_of_parts(JP_SHELL, parts);
  for (int i = 0; i < 4; i++)
    g_bytes_unref(parts[i]);
  gsize len;
  const guint8 *data = g_bytes_get_data(frame, &len);
  return jp_message_from_websocket_v1(data, len, CX_JSON_MAX_VALUES, counters);
}

/* A \u0000 in the code reaches the session as CX_RESULT_NUL, which fails
 * there as Python fails such source; read as U+FFFD, altered code ran.  A
 * backslash and a zero (\\0 in the JSON) stays what it is. */
static void
test_execute_request_keeps_a_nul_of_its_code(void)
{
  static const struct {
    const char *name;
    jp_message *(*decode)(const char *content, jp_counters *counters);
  } readers[] = {
    { "ZeroMQ frames", decoded_from_zmq },
    { "a WebSocket text", decoded_from_websocket_text },
    { "a v1 WebSocket frame", decoded_from_websocket_v1 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(readers); i++) {
    jp_counters counters = { 0 };
    g_autoptr(jp_message) nul = readers[i].decode("{\"code\": \"print('a\\u0000b')\"}", &counters);
    g_autoptr(jp_message) escape = readers[i].decode("{\"code\": \"print('a\\\\0b')\"}", &counters);
    if (nul == NULL || escape == NULL)
      fprintf(stderr, "\n  %s: not decoded\n", readers[i].name);
    CU_ASSERT_PTR_NOT_NULL_FATAL(nul);
    CU_ASSERT_PTR_NOT_NULL_FATAL(escape);
    const char *code = json_object_get_string_member(nul->content, "code");
    if (strcmp(code, "print('a" CX_RESULT_NUL "b')") != 0)
      fprintf(stderr, "\n  %s: the code read is \"%s\"\n", readers[i].name, code);
    CU_ASSERT_STRING_EQUAL(code, "print('a" CX_RESULT_NUL "b')");
    CU_ASSERT_STRING_EQUAL(json_object_get_string_member(escape->content, "code"),
                           "print('a\\0b')");
  }
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_zmq_message_with_hostile_content_is_dropped",
      test_zmq_message_with_hostile_content_is_dropped },
    { "test_websocket_message_with_hostile_content_is_dropped",
      test_websocket_message_with_hostile_content_is_dropped },
    { "test_zmq_message_with_too_wide_content_says_so",
      test_zmq_message_with_too_wide_content_says_so },
    { "test_websocket_message_too_wide_says_so", test_websocket_message_too_wide_says_so },
    { "test_encoded_message_decodes_and_tampering_is_dropped",
      test_encoded_message_decodes_and_tampering_is_dropped },
    { "test_messages_over_the_bounds_are_dropped_whole",
      test_messages_over_the_bounds_are_dropped_whole },
    { "test_execute_request_keeps_a_nul_of_its_code",
      test_execute_request_keeps_a_nul_of_its_code },
    { NULL, NULL },
  };
  cx_test_add_suite("jupyter_message", tests);
}
