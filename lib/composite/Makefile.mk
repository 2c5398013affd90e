# lib/composite: the image-compositing plug-in on the swap engine.
lib_libbpc_internal_la_SOURCES += \
	lib/composite/composite.c \
	lib/composite/strategy.c \
	lib/composite/operators.c \
	lib/composite/layout.c \
	lib/composite/active.c \
	lib/composite/order.c \
	lib/composite/strategies/composite_radixk.c \
	lib/composite/strategies/composite_binary_swap.c \
	lib/composite/strategies/composite_direct_send.c \
	lib/composite/strategies/composite_shift.c \
	lib/composite/strategies/composite_pipeline.c
noinst_HEADERS += lib/composite/composite_internal.h
