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

#include "comm/coll.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
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

int bpc__io_spare_core(int mask_cores, int avail_cores, int local_procs)
{
  if (mask_cores < 2 || avail_cores < 1)
    return 0; /* bound to one core: the helper would share it */
  if (local_procs < 1) /* unknown: only a process bound to cores of its own */
    return mask_cores < avail_cores;
  /* the processes that share this process's cores, if the node's processes
   * are spread evenly over the cores the job may use */
  const long long share =
      ((long long)local_procs * mask_cores + avail_cores - 1) / (long long)avail_cores;
  return mask_cores >= 2 * (share > 1 ? share : 1);
}

/* Processes of this job on this node: the launcher's count (Open MPI's
 * mpirun, MPICH's Hydra), or 1 when the job is one process (a singleton);
 * 0 unknown. */
static int local_procs(void)
{
  static const char *const names[] = {"OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    long long v = bpc__env_ll(names[i], 0);
    if (v > 0 && v < (1 << 30))
      return (int)v;
  }
  return bpc__world_size() == 1;
}

#if defined(__linux__)
/* Each CPU's core, as the lowest-numbered CPU of its hardware threads
 * (sysfs thread_siblings_list; the CPU itself where that cannot be read),
 * read once per process. */
static int core_of[CPU_SETSIZE];
static pthread_once_t core_once = PTHREAD_ONCE_INIT;

static void core_read(void)
{
  long conf = sysconf(_SC_NPROCESSORS_CONF);
  if (conf <= 0) /* unknown: try every id */
    conf = CPU_SETSIZE;
  for (int c = 0; c < CPU_SETSIZE; c++) {
    core_of[c] = c;
    if (c >= conf) /* no such CPU: no file to try */
      continue;
    char path[96];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
    FILE *f = fopen(path, "r");
    int first = -1;
    if (f != NULL) {
      if (fscanf(f, "%d", &first) != 1)
        first = -1;
      fclose(f);
    }
    core_of[c] = first >= 0 && first < CPU_SETSIZE ? first : c;
  }
}

int bpc__io_cpus_parse(const char *s, cpu_set_t *set)
{
  CPU_ZERO(set);
  int any = 0;
  while (*s != '\0' && *s != '\n') {
    char *end = NULL;
    long a = strtol(s, &end, 10), b = a;
    if (end == s || a < 0)
      return -1;
    s = end;
    if (*s == '-') {
      b = strtol(s + 1, &end, 10);
      if (end == s + 1 || b < a)
        return -1;
      s = end;
    }
    for (long c = a; c <= b && c < CPU_SETSIZE; c++)
      CPU_SET((int)c, set);
    any = 1;
    if (*s == ',')
      s++;
  }
  return any ? 0 : -1;
}

/* Read a CPU list file into *set; 0 when it held one. */
static int cpus_file(const char *path, cpu_set_t *set)
{
  char line[4096];
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return -1;
  const int ok = fgets(line, sizeof line, f) != NULL && bpc__io_cpus_parse(line, set) == 0;
  fclose(f);
  return ok ? 0 : -1;
}

/* The CPUs this job may use: its cgroup's cpuset (v2, or v1's cpuset
 * controller: how Slurm and containers limit a job's CPUs), else every
 * online CPU. */
static void cpus_available(cpu_set_t *set)
{
  char v2[512] = "", v1[512] = "", path[600], line[1024];
  FILE *f = fopen("/proc/self/cgroup", "r");
  while (f != NULL && fgets(line, sizeof line, f) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    const char *c1 = strchr(line, ':'), *c2 = c1 != NULL ? strchr(c1 + 1, ':') : NULL;
    if (c2 == NULL || strlen(c2 + 1) >= sizeof v2 || strcmp(c2 + 1, "/") == 0)
      continue; /* the root: the files below */
    if (strncmp(line, "0::", 3) == 0)
      snprintf(v2, sizeof v2, "%s", c2 + 1);
    else if (c2 - c1 - 1 == 6 && strncmp(c1 + 1, "cpuset", 6) == 0)
      snprintf(v1, sizeof v1, "%s", c2 + 1);
  }
  if (f != NULL)
    fclose(f);
  static const char *const files[] = {"/sys/fs/cgroup%s/cpuset.cpus.effective",
                                      "/sys/fs/cgroup/cpuset%s/cpuset.effective_cpus"};
  for (int k = 0; k < 4; k++) { /* the own cgroup, then the namespace's root */
    snprintf(path, sizeof path, files[k % 2], k >= 2 ? "" : k == 0 ? v2 : v1);
    if (cpus_file(path, set) == 0)
      return;
  }
  CPU_ZERO(set);
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (long c = 0; c < online && c < CPU_SETSIZE; c++)
    CPU_SET((int)c, set);
}

/* The job's CPUs, read once per process (a cgroup's cpuset does not change
 * under a running job as a rule; the affinity is read on every call). */
static cpu_set_t avail_set;
static pthread_once_t avail_once = PTHREAD_ONCE_INIT;
static void avail_read(void) { cpus_available(&avail_set); }

/* Physical cores among the CPUs of `set` (hardware threads of one core
 * count once). */
static int cores_in(const cpu_set_t *set)
{
  pthread_once(&core_once, core_read);
  cpu_set_t seen;
  CPU_ZERO(&seen);
  for (int c = 0; c < CPU_SETSIZE; c++)
    if (CPU_ISSET(c, set))
      CPU_SET(core_of[c], &seen);
  return CPU_COUNT(&seen);
}
#endif

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
  pthread_once(&avail_once, avail_read); /* the cgroup's files, once */
  cpu_set_t avail;
  CPU_OR(&avail, &avail_set, &set); /* a mask outside the cpuset: count it in */
  return bpc__io_spare_core(cores_in(&set), cores_in(&avail), local_procs());
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

long bpc__crcq_started = 0;

bpc__crcq_t *bpc__crcq_start(int nblocks, size_t max_jobs)
{
  if (max_jobs > BPC__CRCQ_MAX_JOBS)
    return NULL;
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
  /* the helper takes no signals: they stay the application's threads' */
  sigset_t all, old;
  sigfillset(&all);
  const int masked = pthread_sigmask(SIG_SETMASK, &all, &old) == 0;
  const int made = pthread_create(&q->th, NULL, crcq_main, q) == 0;
  if (masked)
    pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (!made) {
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
    goto fail;
  }
  __atomic_fetch_add(&bpc__crcq_started, 1, __ATOMIC_RELAXED);
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
