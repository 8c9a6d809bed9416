/* cellexec record show|check: summarise and validate recordings. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "tools/commands.h"

/* Exit status of `record` when the file is not a valid recording. */
#define EXIT_INVALID 1

/* CODE's first line, cut to a width that fits a summary line. */
static char *
first_line(const char *code)
{
  const char *newline = strchr(code, '\n');
  gsize length = newline != NULL ? (gsize)(newline - code) : strlen(code);
  const gsize width = 60;
  if (length <= width)
    return newline != NULL ? g_strdup_printf("%.*s ...", (int)length, code) : g_strdup(code);
  gsize cut = width;
  while (cut > 0 && (code[cut] & 0xC0) == 0x80) /* inside a UTF-8 sequence */
    cut--;
  return g_strdup_printf("%.*s...", (int)cut, code);
}

static void
count_backend(GPtrArray *names, GArray *counts, const char *name)
{
  guint i = 0;
  while (i < names->len && strcmp(g_ptr_array_index(names, i), name) != 0)
    i++;
  if (i == names->len) {
    g_ptr_array_add(names, (gpointer)name);
    guint zero = 0;
    g_array_append_val(counts, zero);
  }
  g_array_index(counts, guint, i)++;
}

static int
record_show(const cx_recording *recording)
{
  guint n = cx_recording_get_n_records(recording), stateless = 0, failed = 0;
  g_autoptr(GHashTable) sessions = g_hash_table_new(g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func(g_free);
  g_autoptr(GPtrArray) names = g_ptr_array_new();
  g_autoptr(GArray) counts = g_array_new(FALSE, TRUE, sizeof(guint));
  for (guint i = 0; i < n; i++) {
    guint session = 0;
    const char *backend = cx_recording_get_backend(recording, i);
    count_backend(names, counts, backend);
    if (!cx_recording_get_session(recording, i, &session, NULL)) {
      stateless++;
    } else {
      char *key = g_strdup_printf("%s/%u", backend, session);
      g_ptr_array_add(keys, key);
      g_hash_table_add(sessions, key);
    }
    const cx_result *result = cx_recording_get_result(recording, i);
    if (result == NULL || !cx_result_get_success(result))
      failed++;
  }
  guint n_sessions = g_hash_table_size(sessions);
  printf("%s: %u cell%s (%u stateless, %u in %u session%s), %u failed\n",
         cx_recording_get_origin(recording), n, n == 1 ? "" : "s", stateless, n - stateless,
         n_sessions, n_sessions == 1 ? "" : "s", failed);
  printf("backends:");
  for (guint i = 0; i < names->len; i++)
    printf("%s %s (%u)", i > 0 ? "," : "", (const char *)g_ptr_array_index(names, i),
           g_array_index(counts, guint, i));
  printf("%s\n", names->len == 0 ? " none" : "");
  if (failed > 0)
    printf("failures:\n");
  for (guint i = 0; i < n; i++) {
    const cx_result *result = cx_recording_get_result(recording, i);
    if (result != NULL && cx_result_get_success(result))
      continue;
    g_autofree char *code = first_line(cx_recording_get_code(recording, i));
    guint line = cx_recording_get_line(recording, i);
    if (result == NULL)
      printf("  line %u: no result: %s (%s)\n", line,
             cx_recording_get_failure(recording, i)->message, code);
    else if (cx_result_has_error(result))
      printf("  line %u: %s: %s (%s)\n", line, cx_result_get_error_type(result),
             cx_result_get_error_message(result), code);
    else
      printf("  line %u: failed without an error (%s)\n", line, code);
  }
  return EXIT_CELL_OK;
}

int
cmd_record(int argc, char **argv)
{
  g_autoptr(GOptionContext) context = g_option_context_new("(show | check) FILE");
  g_option_context_set_summary(context,
    "Read a recording made with `cellexec run --record FILE`, [cellexec] record =\n"
    "FILE or cx_backend_record(), and which the fake backend replays\n"
    "(-b fake -o responses=FILE):\n"
    "  show FILE    print a summary: cells, backends, failures\n"
    "  check FILE   validate every line (for a CI step); print \"FILE: ok\"");
  g_option_context_set_description(context,
    "A recording is JSON Lines, one record per cell:\n"
    "  {\"backend\", \"session\", \"code\", \"options\", \"result\"}\n"
    "(see cellexec(1) and <cellexec/record.h>).  A line that is not one is\n"
    "reported as FILE:LINE: what is wrong.\n"
    "\n"
    "Examples:\n"
    "  cellexec run --record tests/cells.jsonl -c 'print(1)'\n"
    "  cellexec record show tests/cells.jsonl\n"
    "  cellexec record check tests/cells.jsonl\n"
    "\n"
    "Exit status: 0 a valid recording, 1 an invalid or unreadable one (the\n"
    "reason on stderr), 2 usage, 3 the output could not be written.");
  if (!parse_options(context, &argc, &argv))
    return EXIT_USAGE;
  if (argc < 2 || (strcmp(argv[1], "show") != 0 && strcmp(argv[1], "check") != 0))
    return fail_usage("usage: cellexec record (show | check) FILE");
  if (argc != 3)
    return fail_usage(argc < 3 ? "cellexec record %s: no FILE given"
                               : "cellexec record %s: give one FILE", argv[1]);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_recording) recording = cx_recording_load(argv[2], &error);
  if (recording == NULL) {
    fprintf(stderr, "cellexec: %s\n", error->message);
    return EXIT_INVALID;
  }
  if (strcmp(argv[1], "show") == 0)
    return record_show(recording);
  guint n = cx_recording_get_n_records(recording);
  printf("%s: ok (%u record%s)\n", argv[2], n, n == 1 ? "" : "s");
  return EXIT_CELL_OK;
}
