# apps: installed programs.
APP_LDADD = lib/libbpc.la $(PNG_LIBS)

bin_PROGRAMS += apps/bpc-decomp apps/bpc-bench
apps_bpc_decomp_SOURCES = apps/bpc-decomp.c
apps_bpc_decomp_LDADD = $(APP_LDADD)

apps_bpc_bench_SOURCES = \
	apps/bench/bench.c \
	apps/bench/bench.h \
	apps/bench/bench_comm.c \
	apps/bench/bench_merge.c
apps_bpc_bench_LDADD = $(APP_LDADD)

# bpc-entropy: histograms and entropy of a 3-D field, full and partial merge-reduce.
bin_PROGRAMS += apps/bpc-entropy
apps_bpc_entropy_SOURCES = apps/bpc-entropy.c
apps_bpc_entropy_LDADD = $(APP_LDADD) -lm