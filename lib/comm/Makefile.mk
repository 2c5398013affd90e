# lib/comm: block-addressed messaging over a transport table (mpi, self).
lib_libbpc_internal_la_SOURCES += \
	lib/comm/coll.c \
	lib/comm/coll_mpi.c \
	lib/comm/coll_self.c \
	lib/comm/agree.c \
	lib/comm/exchange.c \
	lib/comm/fileio.c \
	lib/comm/pool.c \
	lib/comm/transport_mpi.c \
	lib/comm/transport_self.c
noinst_HEADERS += lib/comm/coll.h lib/comm/comm.h lib/comm/transport.h lib/comm/tags.h lib/comm/fileio.h
