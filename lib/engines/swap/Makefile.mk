# lib/engines/swap: swap-reduce (radix-k, shift, ring), its tuning file, and
# the all-to-all exchange over swap rounds.
lib_libbpc_internal_la_SOURCES += \
	lib/engines/swap/swap.c \
	lib/engines/swap/swap_radixk.c \
	lib/engines/swap/swap_shift.c \
	lib/engines/swap/swap_ring.c \
	lib/engines/swap/swap_tuning.c \
	lib/engines/swap/alltoall.c
noinst_HEADERS += lib/engines/swap/swap_internal.h
