# apps: installed programs.
APP_LDADD = lib/libbpc.la $(PNG_LIBS)

bin_PROGRAMS += apps/bpc-decomp apps/bpc-bench
apps_bpc_decomp_SOURCES = apps/bpc-decomp.c
apps_bpc_decomp_LDADD = $(APP_LDADD)

apps_bpc_bench_SOURCES = \
	apps/bench/bench.c \
	apps/bench/bench.h \
	apps/bench/bench_comm.c
apps_bpc_bench_LDADD = $(APP_LDADD)