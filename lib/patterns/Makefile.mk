# lib/patterns: pure communication-pattern math (no MPI).
lib_libbpc_internal_la_SOURCES += \
	lib/patterns/kvec.c \
	lib/patterns/rounds.c \
	lib/patterns/pieces.c \
	lib/patterns/bcast_dist.c
noinst_HEADERS += lib/patterns/patterns.h
