/* tests/fuzz/fuzz_wire.c: libFuzzer target for the subprocess backend's
 * wire: the frame decoder (length-prefixed frames read from a socket, as
 * both ends read them) and the decoding of each message's payload. */
#include "config.h"

#include <sys/socket.h>
#include <unistd.h>

#include "plugins/subprocess/wire/output_limit.h"
#include "plugins/subprocess/wire/protocol.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void
decode_payload(guint8 type, const guint8 *payload, gsize len)
{
  int stream;
  guint64 omitted;
  const guint8 *bytes;
  gsize bytes_len;
  (void)cx__wire_decode_output(payload, len, &stream, &omitted, &bytes, &bytes_len, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(JsonNode) node = cx__wire_parse_mutable_object(payload, len, "fuzz", &error);
  if (node == NULL)
    return;
  JsonObject *object = json_node_get_object(node);
  (void)cx__wire_error_message(object);
  (void)cx__peer_reply_check(object, "fuzz", NULL);
  (void)cx__peer_reply_check(object, NULL, NULL);
  (void)cx__peer_get_array(object, "outputs");
  (void)cx__peer_get_object(object, "limits");
  (void)cx__peer_get_string(object, "kind", NULL);
  g_autofree char *described = cx__wire_describe_exit(object);
  (void)cx__wire_exit_signal(object);
  g_autoptr(JsonArray) truncated = json_array_new();
  cx__wire_bound_event(object, 1 + type % 64, truncated);
  (void)cx__wire_json_size(node);
}

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  int sockets[2];
  if (size > 200000 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) < 0)
    return 0;
  int buffer = 1 << 20;
  setsockopt(sockets[0], SOL_SOCKET, SO_SNDBUF, &buffer, sizeof buffer);
  setsockopt(sockets[1], SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer);
  gsize written = 0;
  while (written < size) {
    gssize n = write(sockets[0], data + written, size - written);
    if (n <= 0)
      break;
    written += n;
  }
  close(sockets[0]);
  g_autoptr(cx__wire_reader) reader = cx__wire_reader_new(sockets[1]);
  for (;;) {
    guint8 type;
    const guint8 *payload;
    gsize len;
    g_autoptr(GError) error = NULL;
    if (!cx__wire_read_blocking(reader, &type, &payload, &len, &error))
      break;
    int fd = cx__wire_reader_take_fd(reader);
    if (fd >= 0)
      close(fd);
    decode_payload(type, payload, len);
  }
  close(sockets[1]);
  /* The text helpers the decoder's results go through. */
  g_autofree char *text = g_strndup((const char *)data, MIN(size, 4096));
  guint64 omitted = 0;
  g_autofree char *cut = cx__output_cut_text(text, strlen(text), 1 + size % 97, &omitted);
  return 0;
}
