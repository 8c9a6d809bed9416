# Generated from tests/plugins/cases.list by tests/plugins/generate-mk.sh: do not edit.
# (make update-test-plugins writes it again.)
check_LTLIBRARIES += tests/plugins/echo.la
check_LTLIBRARIES += tests/plugins/newer_minor.la
check_LTLIBRARIES += tests/plugins/newer_major.la
check_LTLIBRARIES += tests/plugins/older_major.la
check_LTLIBRARIES += tests/plugins/short_descriptor.la
check_LTLIBRARIES += tests/plugins/short_vtable.la
check_LTLIBRARIES += tests/plugins/null_method.la
check_LTLIBRARIES += tests/plugins/partial_sessions.la
check_LTLIBRARIES += tests/plugins/init_refused.la
check_LTLIBRARIES += tests/plugins/no_entry.la
check_LTLIBRARIES += tests/plugins/unresolved.la
check_LTLIBRARIES += tests/plugins/bad_default.la
check_LTLIBRARIES += tests/plugins/no_result.la
check_LTLIBRARIES += tests/plugins/entry_crash.la
check_LTLIBRARIES += tests/plugins/init_crash.la
check_LTLIBRARIES += tests/plugins/entry_exit.la
check_LTLIBRARIES += tests/plugins/init_exit.la
check_LTLIBRARIES += tests/plugins/init_hang.la
check_LTLIBRARIES += tests/plugins/huge_descriptor.la
check_LTLIBRARIES += tests/plugins/huge_vtable.la
check_LTLIBRARIES += tests/plugins/counting_init.la
check_LTLIBRARIES += tests/plugins/nonconforming.la
check_LTLIBRARIES += tests/plugins/null_version.la
check_LTLIBRARIES += tests/plugins/null_description.la
check_LTLIBRARIES += tests/plugins/bad_option_name.la
check_LTLIBRARIES += tests/plugins/needs_newer_core.la
check_LTLIBRARIES += tests/plugins/chatty_init.la
check_LTLIBRARIES += tests/plugins/run_cell_abort.la
check_LTLIBRARIES += tests/plugins/run_cell_exit.la
check_LTLIBRARIES += tests/plugins/run_cell_hang.la

tests_plugins_echo_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_echo_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_ECHO
tests_plugins_echo_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_echo_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_echo_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_newer_minor_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_newer_minor_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_NEWER_MINOR
tests_plugins_newer_minor_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_newer_minor_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_newer_minor_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_newer_major_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_newer_major_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_OTHER_MAJOR=2
tests_plugins_newer_major_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_newer_major_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_newer_major_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_older_major_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_older_major_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_OTHER_MAJOR=0
tests_plugins_older_major_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_older_major_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_older_major_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_short_descriptor_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_short_descriptor_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_SHORT_DESCRIPTOR
tests_plugins_short_descriptor_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_short_descriptor_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_short_descriptor_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_short_vtable_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_short_vtable_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_SHORT_VTABLE
tests_plugins_short_vtable_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_short_vtable_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_short_vtable_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_null_method_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_null_method_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_NULL_METHOD
tests_plugins_null_method_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_null_method_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_null_method_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_partial_sessions_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_partial_sessions_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_PARTIAL_SESSIONS
tests_plugins_partial_sessions_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_partial_sessions_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_partial_sessions_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_init_refused_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_init_refused_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_INIT_REFUSED
tests_plugins_init_refused_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_init_refused_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_init_refused_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_no_entry_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_no_entry_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_NO_ENTRY
tests_plugins_no_entry_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_no_entry_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_no_entry_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_unresolved_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_unresolved_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_UNRESOLVED
tests_plugins_unresolved_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_unresolved_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_unresolved_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_bad_default_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_bad_default_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_BAD_DEFAULT
tests_plugins_bad_default_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_bad_default_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_bad_default_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_no_result_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_no_result_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_NO_RESULT
tests_plugins_no_result_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_no_result_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_no_result_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_entry_crash_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_entry_crash_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_ENTRY_CRASH
tests_plugins_entry_crash_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_entry_crash_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_entry_crash_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_init_crash_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_init_crash_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_INIT_CRASH
tests_plugins_init_crash_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_init_crash_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_init_crash_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_entry_exit_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_entry_exit_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_ENTRY_EXIT
tests_plugins_entry_exit_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_entry_exit_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_entry_exit_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_init_exit_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_init_exit_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_INIT_EXIT
tests_plugins_init_exit_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_init_exit_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_init_exit_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_init_hang_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_init_hang_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_INIT_HANG
tests_plugins_init_hang_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_init_hang_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_init_hang_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_huge_descriptor_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_huge_descriptor_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_HUGE_DESCRIPTOR
tests_plugins_huge_descriptor_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_huge_descriptor_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_huge_descriptor_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_huge_vtable_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_huge_vtable_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_HUGE_VTABLE
tests_plugins_huge_vtable_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_huge_vtable_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_huge_vtable_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_counting_init_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_counting_init_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_COUNTING_INIT
tests_plugins_counting_init_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_counting_init_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_counting_init_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_nonconforming_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_nonconforming_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_NONCONFORMING
tests_plugins_nonconforming_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_nonconforming_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_nonconforming_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_null_version_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_null_version_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_NULL_VERSION
tests_plugins_null_version_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_null_version_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_null_version_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_null_description_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_null_description_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_NULL_DESCRIPTION
tests_plugins_null_description_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_null_description_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_null_description_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_bad_option_name_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_bad_option_name_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_BAD_OPTION_NAME
tests_plugins_bad_option_name_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_bad_option_name_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_bad_option_name_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_needs_newer_core_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_needs_newer_core_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_NEEDS_NEWER_CORE
tests_plugins_needs_newer_core_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_needs_newer_core_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_needs_newer_core_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_chatty_init_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_chatty_init_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_CHATTY_INIT
tests_plugins_chatty_init_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_chatty_init_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_chatty_init_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_run_cell_abort_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_run_cell_abort_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_RUN_CELL_ABORT
tests_plugins_run_cell_abort_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_run_cell_abort_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_run_cell_abort_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_run_cell_exit_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_run_cell_exit_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_RUN_CELL_EXIT
tests_plugins_run_cell_exit_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_run_cell_exit_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_run_cell_exit_la_LIBADD = $(PLUGIN_LIBADD)

tests_plugins_run_cell_hang_la_SOURCES = tests/plugins/case_plugin.c
tests_plugins_run_cell_hang_la_CPPFLAGS = $(AM_CPPFLAGS) -DCASE_RUN_CELL_HANG
tests_plugins_run_cell_hang_la_CFLAGS = $(PLUGIN_CFLAGS)
tests_plugins_run_cell_hang_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
tests_plugins_run_cell_hang_la_LIBADD = $(PLUGIN_LIBADD)
