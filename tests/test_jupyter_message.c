/* The jupyter backend's message decoding (plugins/jupyter/message.c),
 * linked in directly: what a kernel or a gateway sends is untrusted.
 * Content nested 100,000 levels deep overflowed json-glib's parser and
 * killed the host; such a message is now dropped, counted as malformed,
 * as every other message that is not JSON it can read. */
#include "config.h"

#include <string.h>

#include "tests/cx_test.h"
#include "plugins/jupyter/kernel-private.h"

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
  jk_counters counters = { 0 };
  g_autoptr(jk_message) fine = NULL;
  g_autoptr(GPtrArray) good = zmq_message("{\"data\": {}, \"metadata\": {}}");
  CU_ASSERT_EQUAL(jk_message_decode("", good, &counters, &fine), JK_RECV_OK);

  g_autofree char *deep = cx_test_nested_json(HOSTILE_LEVELS, "0");
  g_autofree char *content = g_strdup_printf("{\"data\": {\"x\": %s}, \"metadata\": {}}", deep);
  g_autoptr(GPtrArray) hostile = zmq_message(content);
  g_autoptr(jk_message) m = NULL;
  CU_ASSERT_EQUAL(jk_message_decode("", hostile, &counters, &m), JK_RECV_DROPPED);
  CU_ASSERT_PTR_NULL(m);
  CU_ASSERT_EQUAL(counters.malformed, 1);
}

static void
test_websocket_message_with_hostile_content_is_dropped(void)
{
  g_autofree char *deep = cx_test_nested_json(HOSTILE_LEVELS, "0");
  g_autofree char *text = g_strdup_printf(
    "{\"channel\": \"iopub\", \"header\": {\"msg_type\": \"stream\", \"msg_id\": \"m1\"}, "
    "\"parent_header\": {}, \"metadata\": {}, \"content\": %s}", deep);
  jk_counters counters = { 0 };
  g_autoptr(jk_message) m = jk_message_from_websocket(text, strlen(text), &counters);
  CU_ASSERT_PTR_NULL(m);
  CU_ASSERT_EQUAL(counters.malformed, 1);
}

void
cx_test_register(void)
{
  static const cx_test_case tests[] = {
    { "test_zmq_message_with_hostile_content_is_dropped",
      test_zmq_message_with_hostile_content_is_dropped },
    { "test_websocket_message_with_hostile_content_is_dropped",
      test_websocket_message_with_hostile_content_is_dropped },
    { NULL, NULL },
  };
  cx_test_add_suite("jupyter_message", tests);
}
