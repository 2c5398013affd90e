# lib/engines/allreduce: all-reduce over blocks: entry, table, cost rule and
# the helpers the schedules share (allreduce.c), one file per algorithm.
lib_libbpc_internal_la_SOURCES += \
	lib/engines/allreduce/allreduce.c \
	lib/engines/allreduce/allreduce_doubling.c \
	lib/engines/allreduce/allreduce_reduce_bcast.c \
	lib/engines/allreduce/allreduce_swap_allgather.c
noinst_HEADERS += lib/engines/allreduce/allreduce_internal.h
