/*
 * lib/engines/scan/scan_serial.c - global stage "serial": the chain.
 *
 * Schedule: P - 1 rounds; in round r position r + 1 receives the inclusive
 * prefix of position r and combines it on its left (x = v op x); then the
 * runner's shift round gives every position its predecessor's inclusive
 * prefix (its exclusive one). Operator calls: P - 1 (Table 3.1,
 * "sequential"), depth P - 1. Cost (one block per process, value of m
 * bytes, operator time gamma): (P - 1)(alpha + beta m + gamma) on the
 * critical path, plus the shift (alpha + beta m). Any P (nothing depends on
 * powers of two); P = 1: no round.
 */
#include "engines/scan/scan_internal.h"

static int serial_nrounds(int P)
{
  return P > 1 ? P - 1 : 0;
}

static int serial_step(int P, int r, int p, bpc__scan_step_t *kind)
{
  (void)P;
  if (p == r + 1) {
    *kind = BPC__SCAN_LEFT;
    return r;
  }
  *kind = BPC__SCAN_NONE;
  return -1;
}

static void serial_recvs(int P, int r, int s, int c[4])
{
  (void)r;
  c[0] = bpc__scan_clamp((long long)s + 1, P);
  c[1] = bpc__scan_clamp((long long)s + 2, P);
  c[2] = c[3] = 0;
}

/* Position s receives in round s - 1 and sends in round s. */
static void serial_sends(int P, int s, int r[2])
{
  (void)P;
  r[0] = s - 1;
  r[1] = s + 1;
}

const bpc__scan_sched_t bpc__scan_sched_serial = {serial_nrounds, serial_step, serial_recvs,
                                                   serial_sends, 0, NULL};

int bpc__scan_serial(void *call)
{
  return bpc__scan_run((bpc__scan_call_t *)call, &bpc__scan_sched_serial);
}

/* The row's cost model (bpc__scan_row_t.model). */
void bpc__scan_model_serial(int P, double *rounds, double *depth, double *calls)
{
  *rounds = P > 1 ? P : 0;
  *depth = P - 1;
  *calls = P - 1;
}
