# docs/: the manual page and the plugin writer's guide.
dist_man_MANS += docs/cellexec.1
EXTRA_DIST += docs/plugin-guide.md

# The example third-party plugin, built against the installed library with
# nothing but pkg-config: run by `make installcheck` (and so distcheck).
EXTRA_DIST += examples/hello-plugin/hello.c examples/hello-plugin/Makefile
installcheck-local:
	rm -rf installcheck-hello && mkdir installcheck-hello
	cp $(srcdir)/examples/hello-plugin/hello.c $(srcdir)/examples/hello-plugin/Makefile installcheck-hello/
	PKG_CONFIG_PATH='$(pkgconfigdir)' $(MAKE) -C installcheck-hello
	out=`CELLEXEC_PLUGIN_PATH=installcheck-hello $(bindir)/cellexec run -b hello -o greeting=hi --json -c 'x = 1'` && \
	  echo "$$out" && test "$$out" = '{"stdout":"hi\n","stderr":"","rich_outputs":[{"text/plain":"5"}],"success":true,"error":null,"outputs":[{"output_type":"stream","name":"stdout","text":"hi\n"},{"output_type":"display_data","data":{"text/plain":"5"},"metadata":{}}]}'
	rm -rf installcheck-hello
