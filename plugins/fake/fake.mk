# plugins/fake: records calls and replays scripted results (test injection).
plugins_LTLIBRARIES += plugins/fake.la
plugins_fake_la_SOURCES = plugins/fake/fake.c plugins/fake/script.c plugins/fake/script.h \
	plugins/fake/recording.c plugins/fake/recording.h
plugins_fake_la_CFLAGS = $(PLUGIN_CFLAGS)
plugins_fake_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_fake_la_LIBADD = $(PLUGIN_LIBADD)
