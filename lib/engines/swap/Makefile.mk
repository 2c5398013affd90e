# lib/engines/swap: swap-reduce: entry, table and plan (swap.c), the
# schedules' shared helpers (swap_common.c), one file per schedule, and
# its tuning file.
lib_libbpc_internal_la_SOURCES += \
	lib/engines/swap/swap.c \
	lib/engines/swap/swap_common.c \
	lib/engines/swap/swap_radixk.c \
	lib/engines/swap/swap_shift.c \
	lib/engines/swap/swap_ring.c \
	lib/engines/swap/swap_tuning.c
noinst_HEADERS += lib/engines/swap/swap_internal.h lib/engines/swap/swap_common.h
