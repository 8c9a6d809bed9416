/* tests/fuzz/jupyter_frames.c: the frames of a fuzz input
 * (jupyter_frames.h). */
#include "config.h"

#include <string.h>

#include "jupyter_protocol/message.h"
#include "tests/fuzz/jupyter_frames.h"

GPtrArray *
fuzz_split_frames(const unsigned char *data, size_t size)
{
  GPtrArray *frames = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
  size_t start = 0;
  for (size_t i = 0; i <= size; i++)
    if (i == size || data[i] == 0xFF) {
      g_ptr_array_add(frames, g_bytes_new(data + start, i - start));
      start = i + 1;
    }
  return frames;
}

void
fuzz_sign_frames(GPtrArray *frames, const char *key)
{
  for (guint d = 0; d + 6 <= frames->len; d++) {
    gsize len;
    const void *bytes = g_bytes_get_data(frames->pdata[d], &len);
    if (len != strlen(JP_DELIMITER) || memcmp(bytes, JP_DELIMITER, len) != 0)
      continue;
    const GBytes *json[4];
    for (int i = 0; i < 4; i++)
      json[i] = frames->pdata[d + 2 + i];
    char *signature = jp_sign(key, json);
    g_bytes_unref(frames->pdata[d + 1]);
    frames->pdata[d + 1] = g_bytes_new_take(signature, strlen(signature));
    return;
  }
}
