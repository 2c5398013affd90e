# lib/datatype: contiguous and custom item types.
lib_libbpc_internal_la_SOURCES += lib/datatype/datatype.c
noinst_HEADERS += lib/datatype/datatype.h
