# lib/core: context, errors, logging, statistics, timers.
lib_libbpc_internal_la_SOURCES += \
	lib/core/ctx.c \
	lib/core/error.c \
	lib/core/registry.c \
	lib/core/stats.c \
	lib/core/version.c
noinst_HEADERS += lib/core/core.h lib/core/registry.h
