# lib/engines/bcast: s-to-p broadcast: entry and table (bcast.c), auto's
# cost model (bcast_model.c) and decision cache (bcast_cache.c), the shared
# schedule builder and executor (bcast_exec.c), the process-level plan the
# executor and the cost model query (bcast_plan.c), one file per algorithm.
lib_libbpc_internal_la_SOURCES += \
	lib/engines/bcast/bcast.c \
	lib/engines/bcast/bcast_model.c \
	lib/engines/bcast/bcast_cache.c \
	lib/engines/bcast/bcast_exec.c \
	lib/engines/bcast/bcast_plan.c \
	lib/engines/bcast/bcast_br_lin.c \
	lib/engines/bcast/bcast_br_xy_source.c \
	lib/engines/bcast/bcast_br_xy_dim.c \
	lib/engines/bcast/bcast_2step.c \
	lib/engines/bcast/bcast_xor.c \
	lib/engines/bcast/bcast_mpi.c
noinst_HEADERS += lib/engines/bcast/bcast_internal.h
