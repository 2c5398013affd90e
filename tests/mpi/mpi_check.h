/*
 * tests/mpi/mpi_check.h - support for Check suites that run under mpirun.
 *
 * Rule: inside an MPI test, never ck_assert on a value that may differ
 * between ranks before every collective of the test is done (a rank leaving
 * early hangs the others). Record failures with T_CHECK (any rank, any time),
 * then call T_SYNC() at the end of the test: it sums the failures over all
 * ranks and fails the test on every rank if any rank failed.
 *
 * main: BPC_T_MPI_MAIN(suite_function) runs the suite with CK_NOFORK on
 * every rank, sums the failed-test counts over ranks, and exits nonzero on
 * every rank if any test failed on any rank. Rank 0 prints Check's summary
 * line; other ranks print their failures only.
 */
#ifndef BPC_TESTS_MPI_CHECK_H
#define BPC_TESTS_MPI_CHECK_H

#include <check.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int t_rank __attribute__((unused)) = 0, t_size __attribute__((unused)) = 1;
static int t_fail_local __attribute__((unused)) = 0;

#define T_CHECK(cond, ...)                                                      \
  do {                                                                          \
    if (!(cond)) {                                                              \
      t_fail_local++;                                                           \
      fprintf(stderr, "[rank %d] %s:%d: check '%s' failed: ", t_rank, __FILE__, \
              __LINE__, #cond);                                                 \
      fprintf(stderr, __VA_ARGS__);                                             \
      fputc('\n', stderr);                                                      \
    }                                                                           \
  } while (0)

#define T_SYNC()                                                                   \
  do {                                                                             \
    int t_l_ = t_fail_local, t_g_ = 0;                                             \
    t_fail_local = 0;                                                              \
    MPI_Allreduce(&t_l_, &t_g_, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);              \
    ck_assert_msg(t_g_ == 0, "%d check(s) failed across ranks (%d on rank %d)", t_g_, \
                  t_l_, t_rank);                                                   \
  } while (0)

static inline int t_mpi_main(int argc, char **argv, Suite *(*make)(void))
{
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &t_size);
  SRunner *sr = srunner_create(make());
  srunner_set_fork_status(sr, CK_NOFORK);
  srunner_run_all(sr, t_rank == 0 ? CK_NORMAL : CK_SILENT);
  int failed = srunner_ntests_failed(sr);
  if (t_rank != 0 && failed > 0) {
    fprintf(stderr, "[rank %d] failures:\n", t_rank);
    srunner_print(sr, CK_NORMAL);
  }
  srunner_free(sr);
  int total = 0;
  MPI_Allreduce(&failed, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
  if (t_rank == 0)
    printf("MPI suite on %d ranks: %d failed test(s) summed over ranks\n", t_size, total);
  MPI_Finalize();
  return total == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#define BPC_T_MPI_MAIN(make) \
  int main(int argc, char **argv) { return t_mpi_main(argc, argv, make); }

#endif /* BPC_TESTS_MPI_CHECK_H */
