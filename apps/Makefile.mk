# apps: installed programs. They link the installed library (public calls
# only); bpc-bench also times internals, so it links the convenience library
# lib/libbpc_internal.la (see Makefile.am) instead.
APP_LDADD = lib/libbpc.la

bin_PROGRAMS += apps/bpc-decomp apps/bpc-bench
apps_bpc_decomp_SOURCES = apps/bpc-decomp.c
apps_bpc_decomp_LDADD = $(APP_LDADD)

apps_bpc_bench_SOURCES = \
	apps/bench/bench.c \
	apps/bench/bench.h \
	apps/bench/bench_comm.c \
	apps/bench/bench_merge.c \
	apps/bench/bench_swap.c \
	apps/bench/bench_tree.c \
	apps/bench/bench_alltoall.c \
	apps/bench/bench_allreduce.c \
	apps/bench/bench_neighbor.c \
	apps/bench/bench_composite.c \
	apps/bench/bench_bcast.c \
	apps/bench/bench_scan.c \
	apps/bench/bench_io.c \
	apps/bench/bench_agree.c
apps_bpc_bench_LDADD = lib/libbpc_internal.la
# the allocations of bpc's calls (bench.c, "allocs"): the library is linked
# in statically, so its malloc family goes through the wrappers (not under
# SMPI, whose smpicc has allocation macros of its own)
apps_bpc_bench_CPPFLAGS = $(AM_CPPFLAGS) $(BENCH_ALLOC_CPPFLAGS)
if !BPC_SMPI
BENCH_ALLOC_CPPFLAGS = -DBENCH_COUNT_ALLOCS
apps_bpc_bench_LDFLAGS = $(BPC_WRAP_ALLOC)
endif
# what the apps share (header-only): random numbers, the swap operators,
# number parsing
noinst_HEADERS += apps/common/app_mix.h apps/common/app_args.h
# the bpc-bench scan sweep of issue 12 (run from the source tree, not installed)
EXTRA_DIST += apps/bench/scan_sweep.sh

# bpc-entropy: histograms and entropy of a 3-D field, full and partial merge-reduce.
bin_PROGRAMS += apps/bpc-entropy
apps_bpc_entropy_SOURCES = apps/bpc-entropy.c
apps_bpc_entropy_LDADD = $(APP_LDADD) -lm

# bpc-tune: times swap-reduce schedules and k-vectors, writes BPC_TUNING_FILE.
bin_PROGRAMS += apps/bpc-tune
apps_bpc_tune_SOURCES = apps/bpc-tune.c
apps_bpc_tune_LDADD = $(APP_LDADD)

# The apps that write PNG images need libpng (configure: BPC_HAVE_PNG).
if BPC_HAVE_PNG
# bpc-trace: particle tracing with the neighbour exchange (VTK + PNG output).
bin_PROGRAMS += apps/bpc-trace
apps_bpc_trace_SOURCES = apps/bpc-trace.c apps/trace/trace.h apps/trace/trace_block.h \
	apps/trace/trace_field.c apps/trace/trace_ckpt.c \
	apps/trace/trace_run.c apps/trace/trace_out.c apps/common/png_out.h apps/common/png_out.c
apps_bpc_trace_CFLAGS = $(AM_CFLAGS) $(PNG_CFLAGS) -I$(top_srcdir)/apps
apps_bpc_trace_LDADD = $(APP_LDADD) $(PNG_LIBS) -lm

# bpc-render: sort-last volume rendering with the compositing plug-in (the demo).
bin_PROGRAMS += apps/bpc-render
apps_bpc_render_SOURCES = apps/bpc-render.c apps/render/render.h apps/render/render.c \
	apps/render/render_par.c apps/common/png_out.h apps/common/png_out.c
apps_bpc_render_CFLAGS = $(AM_CFLAGS) $(PNG_CFLAGS) -I$(top_srcdir)/apps
apps_bpc_render_LDADD = $(APP_LDADD) $(PNG_LIBS) -lm
endif

# bpc-register: series registration with the prefix scan. Builds without
# libpng too (then only the synthetic series, no PNG output).
bin_PROGRAMS += apps/bpc-register
apps_bpc_register_SOURCES = apps/bpc-register.c apps/register/register.h \
	apps/register/reg_frames.c apps/register/reg_align.c apps/register/reg_png.c
apps_bpc_register_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/apps
apps_bpc_register_LDADD = $(APP_LDADD) -lm
if BPC_HAVE_PNG
apps_bpc_register_SOURCES += apps/common/png_out.h apps/common/png_out.c
apps_bpc_register_CFLAGS += $(PNG_CFLAGS) -DREG_HAVE_PNG
apps_bpc_register_LDADD += $(PNG_LIBS)
endif

# the s-to-p broadcast sweep (doc/bcast.md "Benchmark")
EXTRA_DIST += apps/bench/bcast_sweep.sh

# bpc-ckpt: list a checkpoint's header and verify its checksums (lib/io).
bin_PROGRAMS += apps/bpc-ckpt
apps_bpc_ckpt_SOURCES = apps/bpc-ckpt.c
apps_bpc_ckpt_LDADD = $(APP_LDADD)

# bpc-mergetree: distributed merge trees and persistence pairs (merge-reduce of
# pruned trees as a custom item type).
bin_PROGRAMS += apps/bpc-mergetree
apps_bpc_mergetree_SOURCES = apps/bpc-mergetree.c apps/mergetree/mt.h \
	apps/mergetree/mt_sweep.c apps/mergetree/mt_run.c apps/mergetree/mt_field.c \
	apps/mergetree/mt_out.c
apps_bpc_mergetree_CFLAGS = $(AM_CFLAGS) -I$(top_srcdir)/apps
apps_bpc_mergetree_LDADD = $(APP_LDADD) -lm
if BPC_HAVE_PNG
apps_bpc_mergetree_SOURCES += apps/common/png_out.h apps/common/png_out.c
apps_bpc_mergetree_CFLAGS += $(PNG_CFLAGS) -DMT_HAVE_PNG
apps_bpc_mergetree_LDADD += $(PNG_LIBS)
endif
# the bpc-mergetree benchmark table (doc/apps/mergetree.md "Benchmark")
EXTRA_DIST += apps/mergetree/bench_mergetree.sh
# the simulated runs (SimGrid SMPI, doc/scale.md): launcher, platforms,
# sweep, plots and the suites on simulated processes (run from the source tree)
EXTRA_DIST += apps/bench/sim/bpc-smpirun apps/bench/sim/sweep.sh apps/bench/sim/plot.sh \
	apps/bench/sim/simcheck.sh apps/bench/sim/platforms/README.md \
	apps/bench/sim/platforms/fattree.xml apps/bench/sim/platforms/small.xml \
	apps/bench/sim/platforms/torus-bgp.xml apps/bench/sim/platforms/torus-cray.xml
