#include "mpi_check.h"
static Suite *s(void){ return suite_create("placeholder"); }
BPC_T_MPI_MAIN(s)
