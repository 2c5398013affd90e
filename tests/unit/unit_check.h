/*
 * tests/unit/unit_check.h - main for serial Check suites.
 * BPC_T_UNIT_MAIN(suite_function) runs the suite (fork mode from CK_FORK)
 * and exits nonzero if any test failed.
 */
#ifndef BPC_TESTS_UNIT_CHECK_H
#define BPC_TESTS_UNIT_CHECK_H

#include <check.h>
#include <stdlib.h>

static inline int t_unit_main(Suite *(*make)(void))
{
  SRunner *sr = srunner_create(make());
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

#define BPC_T_UNIT_MAIN(make) \
  int main(void) { return t_unit_main(make); }

#endif /* BPC_TESTS_UNIT_CHECK_H */
