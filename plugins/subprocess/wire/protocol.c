/* plugins/subprocess/wire/protocol.c: message payloads of the worker protocol. */
#define _GNU_SOURCE /* sigabbrev_np */
#include "config.h"

#include <string.h>
#include <sys/wait.h>

#include <cellexec/executor.h>

#include "plugins/subprocess/wire/protocol.h"

void
cx__wire_encode_output_header(guint8 header[CX__WIRE_OUTPUT_HEADER_SIZE], int stream,
                              guint64 omitted)
{
  header[0] = (guint8)stream;
  for (int i = 0; i < 8; i++)
    header[1 + i] = (guint8)(omitted >> (56 - 8 * i));
}

gboolean
cx__wire_decode_output(const guint8 *payload, gsize len, int *stream, guint64 *omitted,
                       const guint8 **data, gsize *data_len, GError **error)
{
  if (len < CX__WIRE_OUTPUT_HEADER_SIZE || (payload[0] != 1 && payload[0] != 2)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "malformed OUTPUT message from the worker (%" G_GSIZE_FORMAT " bytes)", len);
    return FALSE;
  }
  *stream = payload[0];
  *omitted = 0;
  for (int i = 0; i < 8; i++)
    *omitted = (*omitted << 8) | payload[1 + i];
  *data = payload + CX__WIRE_OUTPUT_HEADER_SIZE;
  *data_len = len - CX__WIRE_OUTPUT_HEADER_SIZE;
  return TRUE;
}

/* PAYLOAD as a JSON object; MUTABLE: nodes the caller may change.  A cell
 * can write frames to its channel itself, so the payload is hostile:
 * cx_json_from_string refuses the nesting that would overflow json-glib's
 * parser (CX_ERROR_BACKEND here) and the width that would exhaust memory
 * (CX_ERROR_TOO_LARGE kept), and reads \u0000 and lone surrogates as
 * U+FFFD.  Both ends link libcellexec (the plugin, as every plugin does,
 * and the worker), so this library reads JSON through the one public
 * entry point too. */
static JsonNode *
parse_object(const guint8 *payload, gsize len, const char *what, gboolean mutable,
             gboolean keeping_nul, GError **error)
{
  g_autoptr(GError) parse_error = NULL;
  g_autoptr(JsonNode) root =
    keeping_nul ? cx_json_from_string_keeping_nul((const char *)payload, (gssize)len, &parse_error)
                : NULL;
  /* Without KEEPING_NUL, or for the rare text that holds every stand-in
   * the keeping reader has (CX_ERROR_UNSUPPORTED): NUL as U+FFFD. */
  if (root == NULL && (!keeping_nul || g_error_matches(parse_error, CX_ERROR,
                                                       CX_ERROR_UNSUPPORTED))) {
    g_clear_error(&parse_error);
    root = cx_json_from_string((const char *)payload, (gssize)len, &parse_error);
  }
  if (root == NULL && g_error_matches(parse_error, CX_ERROR, CX_ERROR_TOO_LARGE)) {
    /* Valid, but more than the host reads: the cell's output, not a
     * broken protocol (cell_call.c stops the cell with OutputLimitExceeded). */
    g_set_error(error, CX_ERROR, CX_ERROR_TOO_LARGE,
                "the cell's %s message is too large to read: %s", what, parse_error->message);
    return NULL;
  }
  if (root == NULL) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND, "malformed %s message from the worker: %s",
                what, parse_error->message);
    return NULL;
  }
  if (!JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, CX_ERROR, CX_ERROR_BACKEND,
                "malformed %s message from the worker: not a JSON object", what);
    return NULL;
  }
  if (!mutable)
    json_node_seal(root); /* as json_parser_new_immutable() would have */
  return g_steal_pointer(&root);
}

JsonNode *
cx__wire_parse_object(const guint8 *payload, gsize len, const char *what, GError **error)
{
  return parse_object(payload, len, what, FALSE, FALSE, error);
}

JsonNode *
cx__wire_parse_result(const guint8 *payload, gsize len, GError **error)
{
  return parse_object(payload, len, "RESULT", FALSE, TRUE, error);
}

JsonNode *
cx__wire_parse_mutable_object(const guint8 *payload, gsize len, const char *what,
                              GError **error)
{
  return parse_object(payload, len, what, TRUE, FALSE, error);
}

gboolean
cx__wire_send_object(int socket, guint8 type, JsonObject *object, int fd_to_pass,
                     GError **error)
{
  g_autoptr(JsonNode) node = json_node_init_object(json_node_alloc(), object);
  json_object_unref(object);
  gsize len;
  g_autofree char *text = cx_json_to_string(node, FALSE);
  len = strlen(text);
  struct iovec part = { text, len };
  return cx__wire_sendv(socket, type, &part, 1, fd_to_pass, error);
}

char *
cx__wire_signal_name(int signal_number)
{
  const char *abbrev = sigabbrev_np(signal_number);
  if (abbrev != NULL)
    return g_strdup_printf("SIG%s", abbrev);
  return g_strdup_printf("signal %d", signal_number);
}

JsonObject *
cx__wire_exit_object(int wait_status)
{
  JsonObject *object = json_object_new();
  if (WIFSIGNALED(wait_status)) {
    json_object_set_int_member(object, "signal", WTERMSIG(wait_status));
    g_autofree char *name = cx__wire_signal_name(WTERMSIG(wait_status));
    json_object_set_string_member(object, "signal_name", name);
  } else {
    json_object_set_int_member(object, "exit_status", WEXITSTATUS(wait_status));
  }
  return object;
}

int
cx__wire_exit_signal(JsonObject *exited)
{
  return (int)json_object_get_int_member_with_default(exited, "signal", 0);
}

char *
cx__wire_describe_exit(JsonObject *exited)
{
  int signal_number = cx__wire_exit_signal(exited);
  if (signal_number > 0) {
    g_autofree char *name = cx__wire_signal_name(signal_number);
    return g_strdup_printf("was killed by signal %d (%s)", signal_number, name);
  }
  return g_strdup_printf("exited with status %" G_GINT64_FORMAT,
                         json_object_get_int_member_with_default(exited, "exit_status", -1));
}

gboolean
cx__wire_send_error(int socket, const char *message, GError **error)
{
  JsonObject *object = json_object_new();
  json_object_set_string_member(object, "message", message);
  return cx__wire_send_object(socket, CX__WIRE_MSG_ERROR, object, -1, error);
}

const char *
cx__wire_error_message(JsonObject *object)
{
  return cx__peer_get_string(object, "message", "unknown worker error");
}

gsize
cx__wire_json_size(JsonNode *node)
{
  g_autofree char *text = cx_json_to_string(node, FALSE);
  return strlen(text);
}
