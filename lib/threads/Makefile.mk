# lib/threads: OpenMP helpers (ordered local tree reduction).
lib_libbpc_internal_la_SOURCES += lib/threads/tree.c
noinst_HEADERS += lib/threads/threads.h
