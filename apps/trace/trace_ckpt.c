/*
 * apps/trace/trace_ckpt.c - what a bpc-trace checkpoint holds: the item
 * type of a block (its particles in flight, recorded points and counters,
 * for bpc_io_write / bpc_io_read) and the metadata naming the problem, with
 * the check a restart makes against it.
 */
#include "trace_block.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ item type */

#define TRACE_CKPT_MAGIC INT64_C(0x314b5254) /* "TRK1" */
enum { HDR_WORDS = 8 };

void trace_block_free(tblock_t *b)
{
  if (b == NULL)
    return;
  trace_box_free(&b->box);
  free(b->act);
  free(b->out);
  free(b->pts);
  free(b);
}

static int ck_size(const void *item, size_t *bytes, void *user)
{
  (void)user;
  const tblock_t *b = item;
  *bytes = HDR_WORDS * sizeof(int64_t) + (size_t)b->nact * sizeof(trace_particle_t) +
           (size_t)b->npts * sizeof(trace_point_t);
  return 0;
}

static int ck_pack(const void *item, void *buf, size_t bytes, void *user)
{
  const tblock_t *b = item;
  size_t need;
  ck_size(item, &need, user);
  if (bytes != need)
    return 1;
  const int64_t h[HDR_WORDS] = {TRACE_CKPT_MAGIC, b->gid, b->seeded, b->nact,
                                b->npts,          b->steps, b->finished, b->left};
  char *c = buf;
  memcpy(c, h, sizeof h);
  c += sizeof h;
  if (b->nact > 0)
    memcpy(c, b->act, (size_t)b->nact * sizeof *b->act);
  c += (size_t)b->nact * sizeof *b->act;
  if (b->npts > 0)
    memcpy(c, b->pts, (size_t)b->npts * sizeof *b->pts);
  return 0;
}

static int ck_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  (void)user;
  int64_t h[HDR_WORDS];
  if (bytes < sizeof h)
    return 1;
  memcpy(h, buf, sizeof h);
  const int64_t nact = h[3], npts = h[4];
  if (h[0] != TRACE_CKPT_MAGIC || h[1] < 0 || h[1] > INT32_MAX || nact < 0 || npts < 0 ||
      (uint64_t)nact > (bytes - sizeof h) / sizeof(trace_particle_t) ||
      (uint64_t)npts > (bytes - sizeof h) / sizeof(trace_point_t) ||
      bytes != sizeof h + (size_t)nact * sizeof(trace_particle_t) +
                   (size_t)npts * sizeof(trace_point_t))
    return 1;
  tblock_t *b = calloc(1, sizeof *b);
  if (b == NULL)
    return 1;
  b->gid = (int)h[1];
  b->seeded = (int)h[2];
  b->steps = h[5];
  b->finished = h[6];
  b->left = h[7];
  b->act = malloc(sizeof *b->act * (size_t)(nact > 0 ? nact : 1));
  b->pts = malloc(sizeof *b->pts * (size_t)(npts > 0 ? npts : 1));
  if (b->act == NULL || b->pts == NULL) {
    trace_block_free(b);
    return 1;
  }
  b->nact = b->capact = nact;
  b->npts = b->cappts = npts;
  const char *c = (const char *)buf + sizeof h;
  if (nact > 0)
    memcpy(b->act, c, (size_t)nact * sizeof *b->act);
  c += (size_t)nact * sizeof *b->act;
  if (npts > 0)
    memcpy(b->pts, c, (size_t)npts * sizeof *b->pts);
  *item = b;
  return 0;
}

static void ck_destroy(void *item, void *user)
{
  (void)user;
  trace_block_free(item);
}

bpc_type_t trace_ckpt_type(void)
{
  bpc_type_ops_t ops;
  memset(&ops, 0, sizeof ops);
  ops.packed_size = ck_size;
  ops.pack = ck_pack;
  ops.unpack = ck_unpack;
  ops.destroy = ck_destroy;
  return bpc_type_custom(&ops, NULL);
}

/* ------------------------------------------------------------- metadata */

static const char *const first_line = "bpc-trace checkpoint 1";

/* The problem's keys, in the order written, and what to call them. */
static const struct {
  const char *key, *what;
} keys[] = {
    {"field", "--field"},
    {"dims", "--dims"},
    {"vmax", "the field's largest velocity component (its values)"},
    {"step", "--step (the RK4 step)"},
    {"max_steps", "--max-steps"},
    {"seeds", "the seed count (--seeds, --seed-file)"},
    {"seeds_hash", "the seeds' hash (--seed, --seed-box, --seed-file)"},
    {"record", "trajectory recording"},
};
enum { NKEYS = sizeof keys / sizeof keys[0] };

static uint64_t seeds_hash(const double *s, int64_t n)
{
  uint64_t h = UINT64_C(1469598103934665603); /* FNV-1a, 64 bits */
  const unsigned char *c = (const unsigned char *)s;
  for (size_t i = 0; i < (size_t)n * 3 * sizeof(double); i++) {
    h ^= c[i];
    h *= UINT64_C(1099511628211);
  }
  return h;
}

/* The value of key k for P, in *v (NUL-terminated). */
static void value_of(const trace_params_t *P, int k, char *v, size_t len)
{
  const trace_field_t *f = &P->field;
  switch (k) {
  case 0:
    snprintf(v, len, "%s", f->kind == TRACE_FIELD_TORNADO ? "tornado"
                           : f->kind == TRACE_FIELD_ABC   ? "abc"
                                                          : (f->path ? f->path : ""));
    break;
  case 1:
    snprintf(v, len, "%lld,%lld,%lld", (long long)f->dims[0], (long long)f->dims[1],
             (long long)f->dims[2]);
    break;
  case 2:
    snprintf(v, len, "%.17g", P->vmax);
    break;
  case 3:
    snprintf(v, len, "%.17g", P->h);
    break;
  case 4:
    snprintf(v, len, "%d", P->max_steps);
    break;
  case 5:
    snprintf(v, len, "%lld", (long long)P->nseeds);
    break;
  case 6:
    snprintf(v, len, "%016" PRIx64, seeds_hash(P->seeds, P->nseeds));
    break;
  default:
    snprintf(v, len, "%d", P->record ? 1 : 0);
    break;
  }
}

int trace_ckpt_meta(const trace_params_t *P, long long round, char **out, size_t *len)
{
  size_t cap = 256 + (P->field.path ? strlen(P->field.path) : 0), n = 0;
  char *m = malloc(cap);
  if (m == NULL)
    return -1;
  n += (size_t)snprintf(m + n, cap - n, "%s\n", first_line);
  for (int k = 0; k < NKEYS; k++) {
    char v[128 + 4096];
    value_of(P, k, v, sizeof v);
    size_t need = strlen(keys[k].key) + strlen(v) + 2;
    if (n + need + 64 > cap) {
      cap = 2 * (n + need + 64);
      char *q = realloc(m, cap);
      if (q == NULL) {
        free(m);
        return -1;
      }
      m = q;
    }
    n += (size_t)snprintf(m + n, cap - n, "%s %s\n", keys[k].key, v);
  }
  n += (size_t)snprintf(m + n, cap - n, "round %lld\n", round);
  *out = m;
  *len = n;
  return 0;
}

/* The value of `key` in metadata m (a line "key value"), copied into v. */
static int lookup(const char *m, size_t len, const char *key, char *v, size_t vlen)
{
  const size_t kl = strlen(key);
  const char *p = m, *end = m + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *le = nl ? nl : end;
    if ((size_t)(le - p) > kl && memcmp(p, key, kl) == 0 && p[kl] == ' ') {
      size_t n = (size_t)(le - p) - kl - 1;
      if (n >= vlen)
        n = vlen - 1;
      memcpy(v, p + kl + 1, n);
      v[n] = '\0';
      return 0;
    }
    p = le + 1;
  }
  return -1;
}

int trace_ckpt_check(const trace_params_t *P, const char *m, size_t len, long long *round,
                     char *err, size_t errlen)
{
  const size_t fl = strlen(first_line);
  if (m == NULL || len <= fl || memcmp(m, first_line, fl) != 0 || m[fl] != '\n') {
    snprintf(err, errlen, "not a bpc-trace checkpoint (its metadata does not start with '%s')",
             first_line);
    return -1;
  }
  for (int k = 0; k < NKEYS; k++) {
    char want[4096], got[4096];
    value_of(P, k, want, sizeof want);
    if (lookup(m, len, keys[k].key, got, sizeof got) != 0) {
      snprintf(err, errlen, "not a bpc-trace checkpoint ('%s' missing from its metadata)",
               keys[k].key);
      return -1;
    }
    if (strcmp(want, got) != 0) {
      snprintf(err, errlen,
               "the checkpoint is of another problem: %s is %.200s in it, %.200s here (restart "
               "with the problem options of the run that wrote it)",
               keys[k].what, got, want);
      return -1;
    }
  }
  char r[64], *e;
  if (lookup(m, len, "round", r, sizeof r) != 0 || (*round = strtoll(r, &e, 10)) < 0 || *e) {
    snprintf(err, errlen, "not a bpc-trace checkpoint (no valid 'round' in its metadata)");
    return -1;
  }
  return 0;
}
