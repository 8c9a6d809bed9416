/* "Did you mean ...?": the closest candidate by edit distance. */
#include "config.h"

#include <string.h>

#include "lib/internal.h"

/* Optimal string alignment distance (Levenshtein plus transpositions, the
 * commonest typo: "timoeut"). */
static guint
edit_distance(const char *a, const char *b)
{
  gsize n = strlen(a), m = strlen(b);
  g_autofree guint *d = g_new(guint, (n + 1) * (m + 1));
#define D(i, j) d[(i) * (m + 1) + (j)]
  for (gsize i = 0; i <= n; i++)
    D(i, 0) = i;
  for (gsize j = 0; j <= m; j++)
    D(0, j) = j;
  for (gsize i = 1; i <= n; i++)
    for (gsize j = 1; j <= m; j++) {
      guint cost = a[i - 1] == b[j - 1] ? 0 : 1;
      guint best = MIN(D(i - 1, j) + 1, D(i, j - 1) + 1);
      best = MIN(best, D(i - 1, j - 1) + cost);
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        best = MIN(best, D(i - 2, j - 2) + 1);
      D(i, j) = best;
    }
  guint result = D(n, m);
#undef D
  return result;
}

const char *
cx_suggest(const char *word, const char *const *candidates)
{
  g_return_val_if_fail(word != NULL, NULL);
  const char *best = NULL;
  guint best_distance = G_MAXUINT;
  for (const char *const *c = candidates; c != NULL && *c != NULL; c++) {
    guint distance = edit_distance(word, *c);
    if (distance < best_distance) {
      best_distance = distance;
      best = *c;
    }
  }
  /* A third of the word may be wrong, and always at least one character. */
  guint allowed = MAX(1, (guint)strlen(word) / 3);
  return best_distance <= allowed ? best : NULL;
}
