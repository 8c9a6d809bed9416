/* tests/fuzz/fuzz_result_json.c: libFuzzer target for cx_result_from_json,
 * then a round trip: what was accepted must serialise and parse again. */
#include "config.h"

#include <string.h>

#include <cellexec/cellexec.h>

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int
LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
  g_autofree char *text = g_strndup((const char *)data, size);
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_result) result = cx_result_from_json(text, &error);
  if (result == NULL)
    return 0;
  g_autofree char *again = cx_result_to_json(result, FALSE);
  g_autoptr(cx_result) reparsed = cx_result_from_json(again, &error);
  /* Whatever was accepted must come back (regressions/result_json/
   * inf-number: 1e999 was accepted as infinity and written as `inf.0`,
   * which is not JSON; such a number is refused now). */
  if (reparsed == NULL)
    __builtin_trap(); /* a result it wrote that it cannot read */
  return 0;
}
