/*
 * tests/common/neighbor_items.h - items for the neighbour-exchange tests:
 * a deterministic pattern of variable-size items (empty ones included) per
 * (source gid, link index, item index, round), in two kinds - a contiguous
 * type of int64 elements and a custom type whose pack writes the values in
 * reverse (so a missing unpack or a raw copy is caught) - and a comparison.
 * Header-only; every function is static.
 */
#ifndef BPC_TESTS_NEIGHBOR_ITEMS_H
#define BPC_TESTS_NEIGHBOR_ITEMS_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"

static inline uint64_t ni_mix(uint64_t x)
{
  x ^= x >> 31;
  x *= 0x7fb5d329728ea185ull;
  x ^= x >> 27;
  x *= 0x81dadef4bc2dd44dull;
  x ^= x >> 33;
  return x;
}

static inline uint64_t ni_hash(uint64_t a, uint64_t b, uint64_t c, uint64_t d)
{
  return ni_mix(a * 0x9e3779b97f4a7c15ull ^ ni_mix(b + 0x632be59bd9b4e019ull) ^
                ni_mix(c * 31 + 7) * 3 ^ ni_mix(d + 1234567));
}

/* How many items src enqueues on its link j in round r (0..2). */
static inline int ni_count(int src, int j, int r, int salt)
{
  return (int)(ni_hash((uint64_t)src, (uint64_t)j, (uint64_t)r, (uint64_t)salt + 11) % 3u);
}

/* Length multiplier: 1 gives small items; larger values give items of tens
 * of KiB (e.g. to exercise the by-reference path, which copies items under
 * 16 KiB). */
static size_t ni_scale = 1;

/* Elements of item t (0..23 times ni_scale; 0 is an empty item). */
static inline size_t ni_len(int src, int j, int t, int r, int salt)
{
  return ni_scale * (size_t)(ni_hash((uint64_t)src << 20 | (uint64_t)j, (uint64_t)t,
                                     (uint64_t)r, (uint64_t)salt) %
                             24u);
}

/* Element i of item (src, j, t, r): element 0 carries the round, so late
 * deliveries can be told apart. */
static inline int64_t ni_val(int src, int j, int t, int r, int salt, size_t i)
{
  if (i == 0)
    return (int64_t)r * 1000003 + src;
  return (int64_t)(ni_hash((uint64_t)src * 977 + (uint64_t)j, (uint64_t)t * 131 + i,
                           (uint64_t)r, (uint64_t)salt) >> 2);
}

/* ---------------------------------------------------------- custom type */

typedef struct ni_item {
  size_t n;
  int64_t v[];
} ni_item_t;

static inline ni_item_t *ni_item_new(size_t n)
{
  ni_item_t *it = malloc(sizeof *it + n * sizeof(int64_t));
  if (it != NULL)
    it->n = n;
  return it;
}

static int ni_packed_size(const void *item, size_t *bytes, void *user)
{
  (void)user;
  const ni_item_t *it = item;
  *bytes = it ? it->n * sizeof(int64_t) : 0;
  return 0;
}

static int ni_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)user;
  const ni_item_t *it = item;
  if (it == NULL || bytes != it->n * sizeof(int64_t))
    return bytes == 0 ? 0 : 7;
  int64_t *out = buf;
  for (size_t i = 0; i < it->n; i++) {
    int64_t x = it->v[it->n - 1 - i];
    memcpy(&out[i], &x, sizeof x);
  }
  return 0;
}

static int ni_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  (void)user;
  if (bytes % sizeof(int64_t) != 0)
    return 9;
  size_t n = bytes / sizeof(int64_t);
  ni_item_t *it = ni_item_new(n);
  if (it == NULL)
    return 8;
  const int64_t *in = buf;
  for (size_t i = 0; i < n; i++)
    memcpy(&it->v[n - 1 - i], &in[i], sizeof(int64_t));
  *item = it;
  return 0;
}

static void ni_destroy(void *item, void *user)
{
  (void)user;
  free(item);
}

static inline bpc_type_t ni_type(int custom)
{
  if (!custom)
    return bpc_type_contiguous(sizeof(int64_t), MPI_INT64_T);
  bpc_type_ops_t ops;
  memset(&ops, 0, sizeof ops);
  ops.packed_size = ni_packed_size;
  ops.pack = ni_pack;
  ops.unpack = ni_unpack;
  ops.destroy = ni_destroy;
  return bpc_type_custom(&ops, NULL);
}

/* Buffers of items enqueued by reference, kept until the exchange is done. */
static void **ni_kept;
static size_t *ni_kept_bytes;
static int ni_nkept, ni_capkept;

/* The exchange has returned: the caller may change referenced data now.
 * Overwrite it before freeing it, so that an engine still reading it (rather
 * than its own copy) fails the checks even without a sanitizer. */
static inline void ni_free_kept(void)
{
  for (int i = 0; i < ni_nkept; i++) {
    memset(ni_kept[i], 0xA5, ni_kept_bytes[i]);
    free(ni_kept[i]);
  }
  ni_nkept = 0;
}

/* Enqueue item (src, j, t, r) from src to dst by reference (contiguous): the
 * buffer is kept until ni_free_kept. */
static inline int ni_enqueue_ref(bpc_neighbor_t *nb, int src, int dst, int j, int t, int r,
                                 int salt)
{
  size_t n = ni_len(src, j, t, r, salt);
  int64_t *v = malloc((n ? n : 1) * sizeof *v);
  if (v == NULL)
    return BPC_ENOMEM;
  for (size_t i = 0; i < n; i++)
    v[i] = ni_val(src, j, t, r, salt, i);
  if (ni_nkept == ni_capkept) {
    ni_capkept = ni_capkept ? 2 * ni_capkept : 64;
    ni_kept = realloc(ni_kept, sizeof *ni_kept * (size_t)ni_capkept);
    ni_kept_bytes = realloc(ni_kept_bytes, sizeof *ni_kept_bytes * (size_t)ni_capkept);
  }
  ni_kept_bytes[ni_nkept] = n * sizeof *v;
  ni_kept[ni_nkept++] = v;
  bpc_buf_t b = {v, n};
  return bpc_neighbor_enqueue_ref(nb, src, dst, &b);
}

/* Enqueue item (src, j, t, r) from src to dst. */
static inline int ni_enqueue(bpc_neighbor_t *nb, int custom, int src, int dst, int j, int t, int r,
                             int salt)
{
  size_t n = ni_len(src, j, t, r, salt);
  int64_t *v = malloc((n ? n : 1) * sizeof *v);
  ni_item_t *it = custom ? ni_item_new(n) : NULL;
  int rc;
  if (v == NULL || (custom && it == NULL)) {
    rc = BPC_ENOMEM;
    goto done;
  }
  for (size_t i = 0; i < n; i++)
    v[i] = ni_val(src, j, t, r, salt, i);
  if (custom) {
    memcpy(it->v, v, n * sizeof *v);
    rc = bpc_neighbor_enqueue(nb, src, dst, it);
  } else {
    bpc_buf_t b = {v, n};
    rc = bpc_neighbor_enqueue(nb, src, dst, &b);
  }
done:
  free(v);
  free(it);
  return rc;
}

/* Compare a dequeued item with (src, j, t, r); 0 if equal. Frees custom
 * items. */
static inline int ni_check(const bpc_type_t *type, int custom, void *item, int src, int j, int t,
                           int r, int salt)
{
  size_t n = ni_len(src, j, t, r, salt), got;
  const int64_t *v;
  int bad = 0;
  if (custom) {
    ni_item_t *it = item;
    got = it ? it->n : 0;
    v = it ? it->v : NULL;
  } else {
    bpc_buf_t *b = item;
    got = b ? b->count : (size_t)-1;
    v = b ? b->data : NULL;
  }
  if (got != n) {
    bad = 1;
  } else {
    for (size_t i = 0; i < n && !bad; i++)
      bad = v[i] != ni_val(src, j, t, r, salt, i);
  }
  if (custom)
    bpc_type_item_destroy(type, item);
  return bad;
}

#endif /* BPC_TESTS_NEIGHBOR_ITEMS_H */
