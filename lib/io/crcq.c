/*
 * lib/io/crcq.c - the payload checksums on a helper thread (doc/io.md,
 * "Checksums on a spare core").
 *
 * A checkpoint's payload CRC-32C reads every byte once more than the plain
 * MPI-IO call does. Where the data is written to (or read from) the page
 * cache at memory speed that pass alone costs about half of the write, but
 * it needs no result until the table entries are written (or the blocks
 * are checked at the end of the read), so it can run beside the MPI calls
 * on another core: the calling thread queues pieces (block, address,
 * bytes), one helper thread chains each block's CRC over its pieces in
 * queue order. Only memory that stays valid until the end of the call is
 * queued (the user's contiguous items on write, the new items on read).
 *
 * The helper is used only where it has a core of its own (see
 * bpc__io_spare_core): beside another busy process it would only take
 * turns with the MPI calls and slow both. The decision is each rank's own:
 * it changes no communication, only where the checksum is computed.
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "io/io.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#if defined(__linux__)
#include <sched.h>
#endif

typedef struct crcq_job {
  int blk;
  const unsigned char *p;
  size_t n;
} crcq_job_t;

struct bpc__crcq {
  pthread_t th;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  crcq_job_t *jobs; /* room for every job the caller said it may push */
  size_t cap, head, tail;
  int closed, abandon, joined;
  int nblocks;
  uint32_t *crc; /* by block, chained over its pieces */
};

int bpc__io_spare_core(int mask_cpus, int online_cpus, int local_procs)
{
  if (mask_cpus < 2 || online_cpus < 1)
    return 0; /* bound to one core: the helper would share it */
  if (local_procs < 1) /* unknown: only a process bound to cores of its own */
    return mask_cpus < online_cpus;
  /* the processes that share this process's cores, if the node's processes
   * are spread evenly over its cores */
  const long long share =
      ((long long)local_procs * mask_cpus + online_cpus - 1) / (long long)online_cpus;
  return mask_cpus >= 2 * (share > 1 ? share : 1);
}

/* Processes of this job on this node, from the launcher's environment; 0
 * when none says. */
static int local_procs(void)
{
  /* Open MPI's mpirun, MPICH's Hydra */
  static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    long long v = bpc__env_ll(names[i], 0);
    if (v > 0 && v < (1 << 30))
      return (int)v;
  }
  return 0;
}

int bpc__io_crc_thread_wanted(uint64_t bytes)
{
  const long long e = bpc__env_ll("BPC_IO_CRC_THREAD", -1);
  if (e == 0 || e == 1)
    return (int)e;
  if (bytes < BPC__IO_CRC_THREAD_MIN)
    return 0; /* the thread's start would cost more than it saves */
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0)
    return 0;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  return bpc__io_spare_core(CPU_COUNT(&set), online > 0 && online < (1L << 30) ? (int)online : 1,
                            local_procs());
#else
  return 0;
#endif
}

static void *crcq_main(void *arg)
{
  bpc__crcq_t *q = arg;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    while (q->head == q->tail && !q->closed)
      pthread_cond_wait(&q->cv, &q->mu);
    if (q->head == q->tail || q->abandon)
      break; /* closed and drained, or told to stop */
    const crcq_job_t j = q->jobs[q->head++];
    pthread_mutex_unlock(&q->mu);
    q->crc[j.blk] = bpc__crc32c(q->crc[j.blk], j.p, j.n);
    pthread_mutex_lock(&q->mu);
  }
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

bpc__crcq_t *bpc__crcq_start(int nblocks, size_t max_jobs)
{
  bpc__crcq_t *q = bpc__calloc(1, sizeof *q);
  if (q == NULL)
    return NULL;
  q->nblocks = nblocks;
  q->cap = max_jobs;
  q->jobs = bpc__malloc((max_jobs > 0 ? max_jobs : 1) * sizeof *q->jobs);
  q->crc = bpc__malloc((size_t)(nblocks > 0 ? nblocks : 1) * sizeof *q->crc);
  if (q->jobs == NULL || q->crc == NULL)
    goto fail;
  for (int i = 0; i < nblocks; i++)
    q->crc[i] = bpc__crc32c(0, NULL, 0);
  if (pthread_mutex_init(&q->mu, NULL) != 0)
    goto fail;
  if (pthread_cond_init(&q->cv, NULL) != 0) {
    pthread_mutex_destroy(&q->mu);
    goto fail;
  }
  if (pthread_create(&q->th, NULL, crcq_main, q) != 0) {
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    goto fail;
  }
  return q;
fail:
  free(q->jobs);
  free(q->crc);
  free(q);
  return NULL;
}

int bpc__crcq_push(bpc__crcq_t *q, int blk, const void *p, size_t n)
{
  if (blk < 0 || blk >= q->nblocks)
    return -1;
  pthread_mutex_lock(&q->mu);
  const int full = q->tail == q->cap;
  if (!full) {
    q->jobs[q->tail++] = (crcq_job_t){blk, p, n};
    pthread_cond_signal(&q->cv);
  }
  pthread_mutex_unlock(&q->mu);
  return full ? -1 : 0;
}

void bpc__crcq_join(bpc__crcq_t *q, int abandon)
{
  if (q == NULL || q->joined)
    return;
  pthread_mutex_lock(&q->mu);
  q->closed = 1;
  q->abandon = abandon;
  pthread_cond_signal(&q->cv);
  pthread_mutex_unlock(&q->mu);
  pthread_join(q->th, NULL);
  q->joined = 1;
}

uint32_t bpc__crcq_crc(const bpc__crcq_t *q, int blk)
{
  return q->crc[blk];
}

void bpc__crcq_free(bpc__crcq_t *q)
{
  if (q == NULL)
    return;
  bpc__crcq_join(q, 1);
  pthread_cond_destroy(&q->cv);
  pthread_mutex_destroy(&q->mu);
  free(q->jobs);
  free(q->crc);
  free(q);
}
