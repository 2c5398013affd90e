# tests: serial Check suites (tests/unit) run directly, MPI Check suites
# (tests/mpi) run under mpirun at the process counts in tests/testlist (or
# in the list BPC_TESTLIST names, as .ci/run's distcheck does). Both go
# through tests/run-test.sh (the automake LOG_COMPILER).
LOG_COMPILER = $(SHELL) $(top_srcdir)/tests/run-test.sh
AM_TESTS_ENVIRONMENT = \
	MPIRUN='$(MPIRUN)'; export MPIRUN; \
	BPC_TESTLIST="$${BPC_TESTLIST:-$(top_srcdir)/tests/testlist}"; export BPC_TESTLIST; \
	BPC_LSAN_SUPP='$(abs_top_srcdir)/tests/lsan.supp'; export BPC_LSAN_SUPP;
EXTRA_DIST += tests/run-test.sh tests/testlist tests/lsan.supp tests/check_man.sh

# the man pages match the header comments (doc/man/mkman.sh)
TESTS += tests/check_man.sh
# libbpc.so exports every public call of include/bpc/*.h and no bpc__ internal
TESTS += tests/check_exports.sh
EXTRA_DIST += tests/check_exports.sh
# no algorithm id compared outside the tables (the rows carry traits)
TESTS += tests/check_rows.sh
EXTRA_DIST += tests/check_rows.sh
# every list of algorithm names in the docs, headers and help texts holds
# its whole table (tests/list_algorithms prints the tables)
check_PROGRAMS += tests/list_algorithms
TESTS += tests/check_names.sh
EXTRA_DIST += tests/check_names.sh

# The suites link the convenience library (internals visible, see
# Makefile.am); the doc examples link the installed one (public calls only).
TEST_LDADD = lib/libbpc_internal.la $(CHECK_LIBS)
TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# Every test program's defaults, in one place: it builds from <name>.c,
# links TEST_LDADD (LDADD: the apps and the doc examples, which link
# otherwise, set their own _LDADD) and compiles with Check's flags
# (AM_CFLAGS). A program lists only what differs: more sources, -lm, the
# allocation wrappers, an include folder.
LDADD = $(TEST_LDADD)
AM_CFLAGS += $(CHECK_CFLAGS)
noinst_HEADERS += tests/unit/unit_check.h tests/mpi/mpi_check.h tests/mpi/bad_rank.h tests/mpi/bad_case.h tests/common/comm_pattern.h

unit_tests = \
	tests/unit/test_core \
	tests/unit/test_patterns \
	tests/unit/test_decomp \
	tests/unit/test_datatype \
	tests/unit/test_comm_self
mpi_tests = \
	tests/mpi/test_core_mpi \
	tests/mpi/test_decomp_mpi \
	tests/mpi/test_comm
check_PROGRAMS += $(unit_tests) $(mpi_tests)
TESTS += $(unit_tests) $(mpi_tests)

# Documentation examples: built by make check so they stay true to the API.
check_PROGRAMS += doc/examples/blocks
doc_examples_blocks_SOURCES = doc/examples/blocks.c
doc_examples_blocks_LDADD = lib/libbpc.la

# merge-reduce engine (lib/engines/merge): serial suite, MPI suite, doc example.
noinst_HEADERS += tests/common/merge_items.h
check_PROGRAMS += tests/unit/test_merge_serial tests/mpi/test_merge doc/examples/merge
TESTS += tests/unit/test_merge_serial tests/mpi/test_merge
doc_examples_merge_SOURCES = doc/examples/merge.c
doc_examples_merge_LDADD = lib/libbpc.la

# all-reduce engine (lib/engines/allreduce): serial suite (its MPI cases run
# in tests/mpi/test_merge, which has the same item makers).
noinst_HEADERS += tests/common/allreduce_run.h
check_PROGRAMS += tests/unit/test_allreduce_serial
TESTS += tests/unit/test_allreduce_serial

# swap-reduce engine (lib/engines/swap), all-to-all, OpenMP tree (lib/threads):
# serial suites, MPI suites, doc example.
noinst_HEADERS += tests/common/swap_ops.h tests/common/swap_run.h tests/common/swap_sparse.h
check_PROGRAMS += tests/unit/test_threads tests/unit/test_swap_self tests/mpi/test_swap \
	tests/mpi/test_alltoall doc/examples/swap
TESTS += tests/unit/test_threads tests/unit/test_swap_self tests/mpi/test_swap \
	tests/mpi/test_alltoall
doc_examples_swap_SOURCES = doc/examples/swap.c
doc_examples_swap_LDADD = lib/libbpc.la

# neighbourhood exchange engine (lib/engines/neighbor): serial suite, MPI suite, doc example.
noinst_HEADERS += tests/common/neighbor_items.h
check_PROGRAMS += tests/unit/test_neighbor_serial tests/mpi/test_neighbor doc/examples/neighbor
TESTS += tests/unit/test_neighbor_serial tests/mpi/test_neighbor
doc_examples_neighbor_SOURCES = doc/examples/neighbor.c
doc_examples_neighbor_LDADD = lib/libbpc.la

# apps end to end: bpc-entropy, bpc-register, and bpc-tune's argument checks (the
# apps must be built: they are in bin_PROGRAMS).
TESTS += tests/apps/test_entropy.sh tests/apps/test_tune.sh tests/apps/test_register.sh
EXTRA_DIST += tests/apps/test_entropy.sh tests/apps/test_tune.sh tests/apps/app_env.sh \
	tests/apps/test_register.sh
# bpc-bench scan end to end: every line right, MPI_Scan's algorithm verified
TESTS += tests/apps/test_bench_scan.sh
EXTRA_DIST += tests/apps/test_bench_scan.sh
# bpc-bench composite end to end: the --active sweep's lines and fields, bad values
TESTS += tests/apps/test_bench_composite.sh
EXTRA_DIST += tests/apps/test_bench_composite.sh
# every app with bad arguments at 1 and 3 processes: exit 2, the argument named
TESTS += tests/apps/test_badargs.sh
EXTRA_DIST += tests/apps/test_badargs.sh
# bpc-mergetree against its own serial union-find reference (tests/apps/mt_ref)
check_PROGRAMS += tests/apps/mt_ref
tests_apps_mt_ref_LDADD = -lm
TESTS += tests/apps/test_mergetree.sh tests/apps/test_mergetree_io.sh
EXTRA_DIST += tests/apps/test_mergetree.sh tests/apps/test_mergetree_io.sh

# particle tracer core (apps/trace) against a serial single-block reference.
check_PROGRAMS += tests/mpi/test_trace
TESTS += tests/mpi/test_trace
tests_mpi_test_trace_SOURCES = tests/mpi/test_trace.c apps/trace/trace_field.c \
	apps/trace/trace_run.c apps/trace/trace_ckpt.c apps/trace/trace_block.h
tests_mpi_test_trace_CFLAGS = $(TEST_CFLAGS) -I$(top_srcdir)/apps
tests_mpi_test_trace_LDADD = $(TEST_LDADD) -lm
# bpc-trace --checkpoint-every / --restart: restarted runs (other process
# counts too) give the uninterrupted run's output byte for byte; bad
# restarts fail on every rank (uses tests/apps/io_step for a foreign file).
TESTS += tests/apps/test_trace_ckpt.sh
EXTRA_DIST += tests/apps/test_trace_ckpt.sh

# image-compositing plug-in (lib/composite): serial suite, MPI suite, doc example.
noinst_HEADERS += tests/common/composite_run.h
check_PROGRAMS += tests/unit/test_composite_serial tests/mpi/test_composite doc/examples/composite
TESTS += tests/unit/test_composite_serial tests/mpi/test_composite
tests_unit_test_composite_serial_LDADD = $(TEST_LDADD) -lm
tests_mpi_test_composite_LDADD = $(TEST_LDADD) -lm
# out of memory on one rank inside a call (every allocation in turn): the
# library's allocations go through the suite's wrappers (-Wl,--wrap)
check_PROGRAMS += tests/mpi/test_faults
TESTS += tests/mpi/test_faults
tests_mpi_test_faults_LDFLAGS = $(BPC_WRAP_ALLOC)
tests_mpi_test_faults_LDADD = $(TEST_LDADD) -lm
# a call in steady state allocates nothing: the library's allocations go
# through the suite's counting wrappers (-Wl,--wrap, as test_faults)
check_PROGRAMS += tests/mpi/test_alloc
TESTS += tests/mpi/test_alloc
tests_mpi_test_alloc_LDFLAGS = $(BPC_WRAP_ALLOC)
tests_mpi_test_alloc_LDADD = $(TEST_LDADD) -lm
doc_examples_composite_SOURCES = doc/examples/composite.c
doc_examples_composite_LDADD = lib/libbpc.la -lm

# bpc-render's pipeline (apps/render) against a single-block serial render.
check_PROGRAMS += tests/mpi/test_render
TESTS += tests/mpi/test_render
tests_mpi_test_render_SOURCES = tests/mpi/test_render.c apps/render/render.c \
	apps/render/render_par.c
tests_mpi_test_render_CFLAGS = $(TEST_CFLAGS) -I$(top_srcdir)/apps
tests_mpi_test_render_LDADD = $(TEST_LDADD) -lm

# s-to-p broadcast engine (lib/engines/bcast): serial suite, MPI suite, doc example.
noinst_HEADERS += tests/common/bcast_run.h tests/common/str_type.h
check_PROGRAMS += tests/unit/test_bcast_serial tests/mpi/test_bcast doc/examples/bcast
TESTS += tests/unit/test_bcast_serial tests/mpi/test_bcast
doc_examples_bcast_SOURCES = doc/examples/bcast.c
doc_examples_bcast_LDADD = lib/libbpc.la

# prefix-scan engine (lib/engines/scan): serial suite, MPI suite, doc example.
noinst_HEADERS += tests/common/scan_run.h
check_PROGRAMS += tests/unit/test_scan_serial tests/mpi/test_scan doc/examples/scan
TESTS += tests/unit/test_scan_serial tests/mpi/test_scan
doc_examples_scan_SOURCES = doc/examples/scan.c
doc_examples_scan_LDADD = lib/libbpc.la -lm

# thousands of blocks per process, every engine (tests/testlist: 2 and 4 only)
check_PROGRAMS += tests/mpi/test_scale
TESTS += tests/mpi/test_scale
tests_mpi_test_scale_LDADD = $(TEST_LDADD) -lm

# block checkpoint and restart (lib/io): MPI suite; io_step writes and checks
# checkpoints for the shell test of other process counts and a killed writer.
noinst_HEADERS += tests/common/io_items.h
check_PROGRAMS += tests/mpi/test_io tests/apps/io_step
TESTS += tests/mpi/test_io tests/apps/test_io_restart.sh
EXTRA_DIST += tests/apps/test_io_restart.sh
tests_apps_io_step_LDADD = lib/libbpc.la
