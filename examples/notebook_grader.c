/* A notebook grader: run every code cell of a notebook on the subprocess
 * backend (each cell with a time limit, a crash costing only that cell),
 * print one line per cell, and save the graded notebook.
 *
 *   cc -o notebook_grader notebook_grader.c $(pkg-config --cflags --libs cellexec)
 *   ./notebook_grader homework.ipynb graded.ipynb
 */
#include <stdio.h>

#include <cellexec/cellexec.h>

static void
print_cell(const cx_notebook_cell_report *cell, gpointer user_data)
{
  int *failures = user_data;
  if (cell->status == CX_NOTEBOOK_CELL_STARTED)
    return;
  if (cell->status == CX_NOTEBOOK_CELL_FAILED) {
    (*failures)++;
    printf("cell %u: failed, %s: %s\n", cell->code_index + 1,
           cx_result_get_error_type(cell->result), cx_result_get_error_message(cell->result));
  } else {
    printf("cell %u: %s\n", cell->code_index + 1,
           cell->status == CX_NOTEBOOK_CELL_OK ? "ok" : "skipped");
  }
}

int
main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: %s NOTEBOOK.ipynb GRADED.ipynb\n", argv[0]);
    return 2;
  }
  g_autoptr(GError) error = NULL;
  g_autoptr(cx_notebook) notebook = cx_notebook_load(argv[1], &error);
  g_autoptr(cx_backend) backend =
    notebook != NULL ? cx_backend_open_configured(NULL, "subprocess", &error) : NULL;
  if (backend == NULL) {
    fprintf(stderr, "%s\n", error->message);
    return 2;
  }
  g_autoptr(cx_run_options) run = cx_run_options_new();
  cx_run_options_set_timeout(run, 10);
  int failures = 0;
  if (!cx_notebook_run(notebook, backend, run, CX_NOTEBOOK_ALLOW_ERRORS, print_cell, &failures,
                       &error) ||
      !cx_notebook_save(notebook, argv[2], &error)) {
    fprintf(stderr, "%s\n", error->message);
    return 2;
  }
  printf("%d failed\n", failures);
  return failures == 0 ? 0 : 1;
}
