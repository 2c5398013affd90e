# lib/datatype: contiguous and custom item types, and the built-in operators.
lib_libbpc_internal_la_SOURCES += lib/datatype/datatype.c lib/datatype/op.c
noinst_HEADERS += lib/datatype/datatype.h
