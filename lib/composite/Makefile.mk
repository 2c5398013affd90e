# lib/composite: the image-compositing plug-in on the swap engine.
lib_libbpc_internal_la_SOURCES += \
	lib/composite/composite.c \
	lib/composite/strategy.c \
	lib/composite/operators.c \
	lib/composite/layout.c \
	lib/composite/active.c \
	lib/composite/order.c \
	lib/composite/strategies/radixk.c \
	lib/composite/strategies/binary_swap.c \
	lib/composite/strategies/direct_send.c \
	lib/composite/strategies/shift.c \
	lib/composite/strategies/pipeline.c
noinst_HEADERS += lib/composite/composite_internal.h
