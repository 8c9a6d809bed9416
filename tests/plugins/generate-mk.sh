#!/bin/sh
# generate-mk.sh CASES.LIST: the automake rules of the test-only plugins
# (tests/plugins/plugins.mk) on stdout, one module per line of CASES.LIST.
set -eu
list=${1:?usage: generate-mk.sh tests/plugins/cases.list}
cases=$(grep -v -e '^#' -e '^[[:space:]]*$' "$list")
echo "# Generated from tests/plugins/cases.list by tests/plugins/generate-mk.sh: do not edit."
echo "# (make update-test-plugins writes it again.)"
printf '%s\n' "$cases" | awk '{ printf "check_LTLIBRARIES += tests/plugins/%s.la\n", $1 }'
printf '%s\n' "$cases" | while read -r name define; do
  echo
  echo "tests_plugins_${name}_la_SOURCES = tests/plugins/case_plugin.c"
  echo "tests_plugins_${name}_la_CPPFLAGS = \$(AM_CPPFLAGS) -D${define}"
  echo "tests_plugins_${name}_la_CFLAGS = \$(PLUGIN_CFLAGS)"
  echo "tests_plugins_${name}_la_LDFLAGS = \$(TEST_PLUGIN_LDFLAGS)"
  echo "tests_plugins_${name}_la_LIBADD = \$(PLUGIN_LIBADD)"
done
