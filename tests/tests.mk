# tests/: CUnit programs and test-only plugins.

# Test-only plugins, one per way a plugin can be right or wrong (see
# tests/plugins/case_plugin.c); built as modules into tests/plugins/.libs.
TEST_PLUGIN_LDFLAGS = $(PLUGIN_LDFLAGS) -rpath /nowhere
include $(srcdir)/tests/plugins/plugins.mk
EXTRA_DIST += tests/plugins/cases.list tests/plugins/generate-mk.sh
# After a change to tests/plugins/cases.list.
update-test-plugins:
	$(SHELL) $(srcdir)/tests/plugins/generate-mk.sh $(srcdir)/tests/plugins/cases.list \
	  >$(srcdir)/tests/plugins/plugins.mk
.PHONY: update-test-plugins

# The CUnit programs.  Each prints "NAME: N passed, N failed".
TEST_CFLAGS = $(AM_CFLAGS) $(CUNIT_CFLAGS)
TEST_LDADD = tests/libcxtest.la libcellexec.la $(CUNIT_LIBS) $(GLIB_LIBS) $(JSON_LIBS)
check_LTLIBRARIES += tests/libcxtest.la
if !HAVE_CUNIT
# Without CUnit, make check stops before building a test, saying why.
$(check_PROGRAMS) $(check_LTLIBRARIES): cunit-missing
cunit-missing:
	@echo "make check needs CUnit (Debian: libcunit1-dev): install it, then run configure again" >&2
	@exit 1
endif
.PHONY: cunit-missing
tests_libcxtest_la_SOURCES = tests/cx_test_main.c tests/cx_test.h tests/proc_table.c \
	tests/proc_table.h
tests_libcxtest_la_CFLAGS = $(TEST_CFLAGS)

CORE_TESTS = tests/test_result tests/test_options tests/test_registry tests/test_config \
	tests/test_backend tests/test_fake tests/test_cli tests/test_debug_export tests/test_executor \
	tests/test_lossless tests/test_json_limits
check_PROGRAMS += $(CORE_TESTS)
TESTS += $(CORE_TESTS)

tests_test_result_SOURCES = tests/test_result.c
tests_test_result_CFLAGS = $(TEST_CFLAGS)
tests_test_result_LDADD = $(TEST_LDADD)

tests_test_options_SOURCES = tests/test_options.c
tests_test_options_CFLAGS = $(TEST_CFLAGS)
tests_test_options_LDADD = $(TEST_LDADD)

tests_test_registry_SOURCES = tests/test_registry.c
tests_test_registry_CFLAGS = $(TEST_CFLAGS)
tests_test_registry_LDADD = $(TEST_LDADD)

tests_test_config_SOURCES = tests/test_config.c
tests_test_config_CFLAGS = $(TEST_CFLAGS)
tests_test_config_LDADD = $(TEST_LDADD)

tests_test_backend_SOURCES = tests/test_backend.c
tests_test_backend_CFLAGS = $(TEST_CFLAGS)
tests_test_backend_LDADD = $(TEST_LDADD)

tests_test_fake_SOURCES = tests/test_fake.c
tests_test_fake_CFLAGS = $(TEST_CFLAGS)
tests_test_fake_LDADD = $(TEST_LDADD)

tests_test_debug_export_SOURCES = tests/test_debug_export.c
tests_test_debug_export_CFLAGS = $(TEST_CFLAGS)
tests_test_debug_export_LDADD = $(TEST_LDADD)

tests_test_executor_SOURCES = tests/test_executor.c
tests_test_executor_CFLAGS = $(TEST_CFLAGS)
tests_test_executor_LDADD = tools/libconformance.la $(TEST_LDADD)

tests_test_cli_SOURCES = tests/test_cli.c
tests_test_cli_CFLAGS = $(TEST_CFLAGS)
tests_test_cli_LDADD = $(TEST_LDADD)

tests_test_lossless_SOURCES = tests/test_lossless.c
tests_test_lossless_CFLAGS = $(TEST_CFLAGS)
tests_test_lossless_LDADD = $(TEST_LDADD)

tests_test_json_limits_SOURCES = tests/test_json_limits.c
tests_test_json_limits_CFLAGS = $(TEST_CFLAGS)
tests_test_json_limits_LDADD = $(TEST_LDADD)

# Recording on the real backends and replay with the fake (cellexec/record.h).
check_PROGRAMS += tests/test_record
TESTS += tests/test_record
tests_test_record_SOURCES = tests/test_record.c
tests_test_record_CFLAGS = $(TEST_CFLAGS)
tests_test_record_LDADD = $(TEST_LDADD)

# The exported surface of the library and the plugins.
TESTS += tests/check_symbols.sh tests/check_abi.sh tests/check_example.sh tests/check_conformance.sh
# The test programs' own verdicts: skipped is not passed; and the
# generated test-plugin rules follow their list.
TESTS += tests/check_harness.sh tests/check_generated.sh
TEST_EXTENSIONS = .sh
# Every test runs under tests/time_limit.sh: one that hangs fails alone
# (make check TEST_TIME_LIMIT=SECONDS to change the limit).
TEST_TIME_LIMIT = 600
TIME_LIMIT = $(SHELL) $(srcdir)/tests/time_limit.sh $(TEST_TIME_LIMIT)
SH_LOG_COMPILER = $(TIME_LIMIT) $(SHELL)
EXTRA_DIST += tests/check_symbols.sh tests/check_abi.sh tests/check_example.sh tests/check_conformance.sh tests/check_harness.sh tests/check_generated.sh tests/sanitized_run.sh tests/time_limit.sh examples/executor_demo.c examples/notebook_grader.c tests/lsan.supp tests/valgrind.supp \
	lib/libcellexec.abi

# Refresh the ABI baseline after an intended, compatible addition: the
# same dump (no source locations, no build paths) check_abi.sh compares.
update-abi: libcellexec.la
	CELLEXEC_BUILDDIR='$(abs_top_builddir)' CELLEXEC_SRCDIR='$(abs_top_srcdir)' \
	  $(SHELL) $(srcdir)/tests/check_abi.sh --update
.PHONY: update-abi

# Sanitizer builds: libpython's interpreter is never finalised, so what it
# holds at exit is not a leak of ours.
if ENABLE_SANITIZERS
# The test programs through tests/sanitized_run.sh, which runs one again
# only when LeakSanitizer's own tracer crashed at exit.
LOG_COMPILER = $(TIME_LIMIT) $(SHELL) $(srcdir)/tests/sanitized_run.sh
SANITIZER_TESTS_ENVIRONMENT = CELLEXEC_SANITIZED=1; export CELLEXEC_SANITIZED; \
	LSAN_OPTIONS='suppressions=$(abs_top_srcdir)/tests/lsan.supp:print_suppressions=0'; export LSAN_OPTIONS; \
	UBSAN_OPTIONS='print_stacktrace=1:halt_on_error=1'; export UBSAN_OPTIONS;
else
LOG_COMPILER = $(TIME_LIMIT)
endif

# make check-valgrind: the CUnit programs under valgrind (memcheck); any
# error or definite leak fails the test.  The shell tests are left out:
# they would run as in make check, not under valgrind.
VALGRIND_FLAGS = --quiet --error-exitcode=1 --leak-check=full \
	--errors-for-leak-kinds=definite --show-leak-kinds=definite --num-callers=30 \
	--suppressions=$(abs_top_srcdir)/tests/valgrind.supp \
	--suppressions=/usr/lib/valgrind/python3.supp
check-valgrind:
	$(MAKE) $(AM_MAKEFLAGS) check TESTS='$(filter-out %.sh,$(TESTS))' \
	  LOG_COMPILER='$(TIME_LIMIT) $(LIBTOOL) --mode=execute $(VALGRIND) $(VALGRIND_FLAGS)'
.PHONY: check-valgrind

# A staged install for tests/check_example.sh, made before any test runs:
# installing relinks libtool libraries in place, which a test running at
# the same moment would see half written.
check_DATA = tests/stage.stamp
tests/stage.stamp: $(lib_LTLIBRARIES) $(plugins_LTLIBRARIES) $(bin_PROGRAMS) $(pkglibexec_PROGRAMS)
	$(AM_V_GEN)rm -rf tests/stage && \
	  $(MAKE) $(AM_MAKEFLAGS) install DESTDIR='$(abs_builddir)/tests/stage' >tests/stage.log 2>&1 && \
	  touch $@

# The plugin probes' cache of the test runs, the staged install, and the
# kernelspecs, Jupyter runtime files and sanitizer reports of
# tests/check_kernel.sh.
clean-local:
	rm -rf tests/cache tests/stage tests/stage.stamp tests/stage.log \
	  tests/kernel-prefix tests/kernel-runtime tests/kernel-sanitizer

# The IPython behaviour table (tests/ipython/README.md): every case a real
# kernel recorded in expected.json, on the local and subprocess backends.
check_PROGRAMS += tests/test_ipython_table
TESTS += tests/test_ipython_table
tests_test_ipython_table_SOURCES = tests/test_ipython_table.c
tests_test_ipython_table_CFLAGS = $(TEST_CFLAGS)
tests_test_ipython_table_LDADD = $(TEST_LDADD)
EXTRA_DIST += tests/ipython/README.md tests/ipython/cases.py \
	tests/ipython/generate_expectations.py tests/ipython/expected.json

# The adversarial table (tests/test_adversarial.c): hostile cells and the
# outcome each must have, on the local and subprocess backends.
check_PROGRAMS += tests/test_adversarial
TESTS += tests/test_adversarial
tests_test_adversarial_SOURCES = tests/test_adversarial.c
tests_test_adversarial_CFLAGS = $(TEST_CFLAGS)
tests_test_adversarial_LDADD = $(TEST_LDADD)

# make distcheck-quick: make distcheck (the tarball builds in a VPATH build
# of itself, every test program included, installs and uninstalls), with
# only the tests that read the source tree at run time (their source, or
# the script made from it, names srcdir): a file missing from
# the tarball fails the build or one of them.  The other tests run the same
# programs on the same sources make check already ran them on, and would
# double the stage's time.  setup.sh test runs this one after make check.
#
# Four of them take minutes (or, for check_clients.sh and check_browser.sh,
# npm packages the tarball does not carry) and read files of the tree,
# their own drivers: distcheck-hook checks that the tarball has those files
# instead of running them again.
DISTCHECK_BY_FILE = tests/test_jupyter$(EXEEXT) tests/check_kernel.sh tests/check_clients.sh \
	tests/check_browser.sh
DISTCHECK_FILES = tests/hostile_kernel.py tests/kernel/test_kernel.py tests/kernelspecs.sh \
	$(NODE_CLIENT_FILES)
distcheck-hook:
	@for f in $(DISTCHECK_FILES); do \
	  test -f "$(distdir)/$$f" || { echo "distcheck: $$f is not in the tarball: add it to EXTRA_DIST"; exit 1; }; \
	done
distcheck-quick:
	@tests=; for t in $(TESTS); do \
	  case " $(DISTCHECK_BY_FILE) " in *" $$t "*) continue ;; esac; \
	  case $$t in *.sh) src=$$t ;; *) src=$${t%$(EXEEXT)}.c ;; esac; \
	  if [ -f "$(srcdir)/$$src" ]; then src="$(srcdir)/$$src"; else src=$$t; fi; \
	  if grep -qi srcdir "$$src"; then tests="$$tests $$t"; fi; \
	done; \
	echo "distcheck-quick: the tests that read the source tree:$$tests"; \
	$(MAKE) $(AM_MAKEFLAGS) distcheck TESTS="$$tests"
.PHONY: distcheck-quick
