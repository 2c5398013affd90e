# lib/engines/alltoall: all-to-all exchange: entry and table (alltoall.c),
# the k-ary rounds routing (alltoall_rounds.c).
lib_libbpc_internal_la_SOURCES += \
	lib/engines/alltoall/alltoall.c \
	lib/engines/alltoall/alltoall_rounds.c
noinst_HEADERS += lib/engines/alltoall/alltoall_internal.h
