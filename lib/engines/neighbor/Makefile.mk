# lib/engines/neighbor: neighbourhood exchange with adjustable synchrony and
# the iterate-until-done driver (DIY Algorithm 3).
lib_libbpc_internal_la_SOURCES += \
	lib/engines/neighbor/neighbor.c \
	lib/engines/neighbor/neighbor_queue.c \
	lib/engines/neighbor/neighbor_round.c \
	lib/engines/neighbor/neighbor_iterate.c
noinst_HEADERS += lib/engines/neighbor/neighbor_internal.h
