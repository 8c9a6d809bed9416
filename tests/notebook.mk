# tests/: notebooks (cellexec/notebook.h, `cellexec notebook run`) and
# streaming output, which the notebook runner and `run` show progress with.
check_PROGRAMS += tests/test_notebook
TESTS += tests/test_notebook
tests_test_notebook_SOURCES = tests/test_notebook.c
tests_test_notebook_CFLAGS = $(TEST_CFLAGS)
tests_test_notebook_LDADD = $(TEST_LDADD)

# The same notebooks under nbclient and cellexec (tests/notebooks/).
NOTEBOOK_FILES = tests/notebooks/basics.ipynb tests/notebooks/display.ipynb \
	tests/notebooks/errors.ipynb tests/notebooks/magics.ipynb \
	tests/notebooks/parameters.ipynb tests/notebooks/tags.ipynb \
	tests/notebooks/tools.ipynb
TESTS += tests/check_notebooks.sh
EXTRA_DIST += tests/check_notebooks.sh tests/notebooks/check_nbclient.py \
	tests/notebooks/make_notebooks.py $(NOTEBOOK_FILES)

# Output as it happens (cx_run_options_set_output_callback).
check_PROGRAMS += tests/test_streaming
TESTS += tests/test_streaming
tests_test_streaming_SOURCES = tests/test_streaming.c
tests_test_streaming_CFLAGS = $(TEST_CFLAGS)
tests_test_streaming_LDADD = $(TEST_LDADD)
