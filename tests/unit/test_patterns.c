#include "unit_check.h"
static Suite *s(void){ return suite_create("placeholder"); }
BPC_T_UNIT_MAIN(s)
