# docs/: the manual page, the plugin writer's guide, the worker protocol,
# and serving at scale.
dist_man_MANS += docs/cellexec.1

# Installed under $(docdir) (the manual page names them): the guides, and
# each backend's README as backend-NAME.md.
dist_doc_DATA = README.md docs/plugin-guide.md docs/worker-protocol.md docs/serving.md
doc_DATA = docs/backend-local.md docs/backend-subprocess.md docs/backend-fake.md docs/backend-jupyter.md
CLEANFILES += $(doc_DATA)
EXTRA_DIST += plugins/local/README.md plugins/subprocess/README.md plugins/fake/README.md
docs/backend-local.md: $(srcdir)/plugins/local/README.md
	@$(MKDIR_P) docs
	cp $(srcdir)/plugins/local/README.md $@
docs/backend-subprocess.md: $(srcdir)/plugins/subprocess/README.md
	@$(MKDIR_P) docs
	cp $(srcdir)/plugins/subprocess/README.md $@
docs/backend-jupyter.md: $(srcdir)/plugins/jupyter/README.md
	@$(MKDIR_P) docs
	cp $(srcdir)/plugins/jupyter/README.md $@
docs/backend-fake.md: $(srcdir)/plugins/fake/README.md
	@$(MKDIR_P) docs
	cp $(srcdir)/plugins/fake/README.md $@

# The example third-party plugin, built against the installed library with
# nothing but pkg-config: installed under $(docdir)/examples/hello-plugin
# for plugin writers to copy (plugin-guide.md says so), and run by
# `make installcheck` (and so distcheck).
hellopluginexampledir = $(docdir)/examples/hello-plugin
dist_hellopluginexample_DATA = examples/hello-plugin/hello.c examples/hello-plugin/Makefile
installcheck-local:
	rm -rf installcheck-hello && mkdir installcheck-hello
	cp $(srcdir)/examples/hello-plugin/hello.c $(srcdir)/examples/hello-plugin/Makefile installcheck-hello/
	PKG_CONFIG_PATH='$(pkgconfigdir)' $(MAKE) -C installcheck-hello
	out=`CELLEXEC_PLUGIN_PATH=installcheck-hello $(bindir)/cellexec run -b hello -o greeting=hi --json -c 'x = 1'` && \
	  echo "$$out" && test "$$out" = '{"stdout":"hi\n","stderr":"","rich_outputs":[{"text/plain":"5"}],"success":true,"error":null,"outputs":[{"output_type":"stream","name":"stdout","text":"hi\n"},{"output_type":"display_data","data":{"text/plain":"5"},"metadata":{}}]}'
	rm -rf installcheck-hello
