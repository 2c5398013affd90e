# lib/engines/scan: prefix scan: entry, table and runner (scan.c), one
# file per global algorithm.
lib_libbpc_internal_la_SOURCES += \
	lib/engines/scan/scan.c \
	lib/engines/scan/scan_serial.c \
	lib/engines/scan/scan_kogge_stone.c \
	lib/engines/scan/scan_sklansky.c \
	lib/engines/scan/scan_brent_kung.c \
	lib/engines/scan/scan_blelloch.c \
	lib/engines/scan/scan_mpi.c
noinst_HEADERS += lib/engines/scan/scan_internal.h
