# lib/io: block checkpoint and restart (file I/O itself is in lib/comm/fileio.c).
lib_libbpc_internal_la_SOURCES += \
	lib/io/crcq.c \
	lib/io/format.c \
	lib/io/io.c
noinst_HEADERS += lib/io/io.h
