/* tests/fuzz/fuzz_jupyter.c: libFuzzer target for the jupyter backend's
 * message decoding: ZeroMQ multipart messages (delimiter, HMAC-SHA256
 * signature check, the four JSON frames) and a gateway's WebSocket text
 * frames, then what the backend makes of each message: IOPub outputs onto
 * a result bundle, an execute_reply's payload and error, an input_request.
 *
 * Input: a mode byte, then the frames, separated by the byte 0xFF (never
 * in UTF-8, so every JSON frame can be written as is).  Mode bit 0: the
 * frames are one gateway text frame instead of ZeroMQ frames; bit 1: sign
 * the message with the key, as a kernel does, so that fuzzing reaches
 * past the signature check (without it, almost nothing is well signed);
 * bit 2: a MIME filter on the run; bits 3-4: how the request ended. */
#include "config.h"

#include <string.h>

#include "plugins/jupyter/kernel-private.h"
#include "tests/fuzz/jupyter_frames.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

#define KEY "fuzz-key"

static char *
answer(const char *prompt, const char *msg_id, gpointer data)
{
  return g_strdup(prompt);
}

static void
apply(jp_message *m, guint8 mode)
{
  g_autoptr(cx_run_options) run = cx_run_options_new();
  if (mode & 4) {
    cx_run_options_add_allowed_mime_type(run, "text/plain");
    cx_run_options_add_allowed_mime_type(run, "image/png");
  }
  g_autoptr(cx_result) result = cx_result_new();
  /* A small output-limit now and then, so that outputs are cut too. */
  jk_exec exec = { .code = "", .result = result, .run = run, .timeout = 1, .on_input = answer,
                   .output_limit = (mode & 32) ? 16 : 0 };
  jk_exec_state state;
  jk_exec_begin(&state, &exec);
  (void)jk_exec_handle_iopub(&state, m);
  /* The same message again, as another output of the request. */
  (void)jk_exec_handle_iopub(&state, m);
  g_autoptr(JsonObject) input = jk_exec_input_reply(&exec, m->parent_id, m);
  if (g_str_equal(m->msg_type, "execute_reply"))
    exec.reply = json_object_ref(m->content);
  static const jk_exec_outcome outcomes[] = { JK_EXEC_DONE, JK_EXEC_TIMEOUT, JK_EXEC_DIED,
                                              JK_EXEC_SEND_FAILED };
  jk_exec_finish(&state, outcomes[(mode >> 3) & 3]);
  g_autofree char *json = cx_result_to_json(result, FALSE);
  jk_exec_clear(&exec);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  if (size < 1 || size > 1 << 20)
    return 0;
  guint8 mode = data[0];
  jp_counters counters = { 0 };
  g_autoptr(jp_message) m = NULL;
  if (mode & 1) {
    m = jp_message_from_websocket((const char *)data + 1, size - 1, CX_JSON_MAX_VALUES,
                                  &counters);
  } else {
    g_autoptr(GPtrArray) frames = fuzz_split_frames(data + 1, size - 1);
    if (mode & 2)
      fuzz_sign_frames(frames, KEY);
    (void)jp_message_decode(KEY, frames, &counters, &m);
  }
  if (m != NULL)
    apply(m, mode);
  return 0;
}
