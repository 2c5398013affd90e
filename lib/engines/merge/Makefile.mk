# lib/engines/merge: merge-reduce (DIY Algorithm 1), partial reductions.
lib_libbpc_internal_la_SOURCES += \
	lib/engines/merge/merge.c \
	lib/engines/merge/merge_executor.c \
	lib/engines/merge/merge_doubling.c \
	lib/engines/merge/merge_halving.c
noinst_HEADERS += lib/engines/merge/merge_internal.h
