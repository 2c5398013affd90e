# lib/engines/scan: prefix scan: entry, table and cost model (scan.c), the
# driver (scan_values.c, scan_steps.c, scan_flow.c), one file per global
# algorithm.
lib_libbpc_internal_la_SOURCES += \
	lib/engines/scan/scan.c \
	lib/engines/scan/scan_values.c \
	lib/engines/scan/scan_steps.c \
	lib/engines/scan/scan_flow.c \
	lib/engines/scan/scan_serial.c \
	lib/engines/scan/scan_kogge_stone.c \
	lib/engines/scan/scan_sklansky.c \
	lib/engines/scan/scan_brent_kung.c \
	lib/engines/scan/scan_blelloch.c \
	lib/engines/scan/scan_mpi.c
noinst_HEADERS += lib/engines/scan/scan_internal.h
