# lib/decomp: assignment of gids to ranks, regular decomposition, block store.
lib_libbpc_internal_la_SOURCES += \
	lib/decomp/assign.c \
	lib/decomp/decomp.c \
	lib/decomp/blocks.c
noinst_HEADERS += lib/decomp/decomp.h
