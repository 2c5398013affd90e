/*
 * lib/datatype/datatype.c - item types: constructors and checks, measuring,
 * packing and unpacking one item (public bpc_type_*), and the engines'
 * helpers: zero-copy send bytes, views onto received bytes, splitting of
 * divisible items, and bundles of several items in one message.
 *
 * Contiguous items (bpc_buf_t) are plain bytes: count * elem_size. Custom
 * items go through the user's callbacks; every nonzero callback return is
 * turned into BPC_ECALLBACK with the value in the message.
 */
#ifndef _DEFAULT_SOURCE /* SMPI's smpicc defines _GNU_SOURCE, and so this */
#define _DEFAULT_SOURCE /* madvise */
#endif
#include "datatype/datatype.h"

#include <limits.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "patterns/patterns.h"

/* ------------------------------------------------------------ construction */

bpc_type_t bpc_type_contiguous(size_t elem_size, MPI_Datatype mpi_type)
{
  bpc_type_t t;
  memset(&t, 0, sizeof t);
  t.kind = BPC_TYPE_CONTIGUOUS;
  t.elem_size = elem_size;
  t.mpi_type = mpi_type;
  t.user = NULL;
  return t;
}

bpc_type_t bpc_type_custom(const bpc_type_ops_t *ops, void *user)
{
  bpc_type_t t;
  memset(&t, 0, sizeof t);
  t.kind = BPC_TYPE_CUSTOM;
  t.elem_size = 0;
  t.mpi_type = MPI_DATATYPE_NULL;
  if (ops != NULL)
    t.ops = *ops;
  t.user = user;
  return t;
}

int bpc_type_check(bpc_ctx_t *ctx, const bpc_type_t *type)
{
  if (type == NULL)
    return bpc__err(ctx, BPC_ENULL, "item type is NULL");
  switch (type->kind) {
  case BPC_TYPE_CONTIGUOUS:
    if (type->elem_size == 0)
      return bpc__err(ctx, BPC_ETYPE, "contiguous type has elem_size 0 (must be > 0)");
    return BPC_OK;
  case BPC_TYPE_CUSTOM: {
    const char *missing[3];
    int nm = 0;
    if (type->ops.packed_size == NULL)
      missing[nm++] = "packed_size";
    if (type->ops.pack == NULL)
      missing[nm++] = "pack";
    if (type->ops.unpack == NULL)
      missing[nm++] = "unpack";
    if (nm == 0)
      return BPC_OK;
    return bpc__err(ctx, BPC_ETYPE, "custom type is missing the %s%s%s%s%s callback%s", missing[0],
                    nm > 1 ? ", " : "", nm > 1 ? missing[1] : "", nm > 2 ? ", " : "",
                    nm > 2 ? missing[2] : "", nm > 1 ? "s" : "");
  }
  default:
    return bpc__err(ctx, BPC_ETYPE,
                    "unknown item type kind %d (expected BPC_TYPE_CONTIGUOUS or BPC_TYPE_CUSTOM)",
                    (int)type->kind);
  }
}

/* ----------------------------------------------------------- one item */

/* Packed bytes of a (checked) type's item. */
static int item_size(bpc_ctx_t *ctx, const bpc_type_t *t, const void *item, size_t *bytes)
{
  *bytes = 0;
  if (t->kind == BPC_TYPE_CONTIGUOUS) {
    const bpc_buf_t *b = item;
    if (b == NULL || b->count == 0)
      return BPC_OK;
    if (b->data == NULL)
      return bpc__err(ctx, BPC_ENULL, "contiguous item has count %zu but data NULL", b->count);
    if (b->count > SIZE_MAX / t->elem_size)
      return bpc__err(ctx, BPC_ERANGE,
                      "contiguous item of %zu elements of %zu bytes overflows size_t", b->count,
                      t->elem_size);
    *bytes = b->count * t->elem_size;
    return BPC_OK;
  }
  size_t n = 0;
  int urc = t->ops.packed_size(item, &n, t->user);
  if (urc != 0)
    return bpc__err(ctx, BPC_ECALLBACK, "packed_size callback returned %d", urc);
  *bytes = n;
  return BPC_OK;
}

/* Write exactly `bytes` bytes (the item's measured size) to buf. */
static int item_pack(bpc_ctx_t *ctx, const bpc_type_t *t, const void *item, void *buf,
                     size_t bytes)
{
  if (t->kind == BPC_TYPE_CONTIGUOUS) {
    if (bytes > 0)
      memcpy(buf, ((const bpc_buf_t *)item)->data, bytes);
    return BPC_OK;
  }
  int urc = t->ops.pack(item, buf, bytes, t->user);
  if (urc != 0)
    return bpc__err(ctx, BPC_ECALLBACK, "pack callback returned %d (packing %zu bytes)", urc,
                    bytes);
  return BPC_OK;
}

static int check_multiple(bpc_ctx_t *ctx, const bpc_type_t *t, size_t bytes)
{
  if (bytes % t->elem_size != 0)
    return bpc__err(ctx, BPC_ETRUNC,
                    "%zu bytes of contiguous data are not a multiple of the element size %zu "
                    "(%zu bytes left over)",
                    bytes, t->elem_size, bytes % t->elem_size);
  return BPC_OK;
}

/* Custom unpack; *item stays NULL on failure. */
static int custom_unpack(bpc_ctx_t *ctx, const bpc_type_t *t, const void *buf, size_t bytes,
                         void **item)
{
  void *it = NULL;
  int urc = t->ops.unpack(buf, bytes, &it, t->user);
  if (urc != 0)
    return bpc__err(ctx, BPC_ECALLBACK, "unpack callback returned %d (unpacking %zu bytes)", urc,
                    bytes);
  *item = it;
  return BPC_OK;
}

int bpc_type_size(bpc_ctx_t *ctx, const bpc_type_t *type, const void *item, size_t *bytes)
{
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  if (bytes == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_type_size: bytes (output) is NULL");
  return item_size(ctx, type, item, bytes);
}

int bpc_type_pack(bpc_ctx_t *ctx, const bpc_type_t *type, const void *item, void *buf, size_t cap)
{
  size_t n = 0;
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  rc = item_size(ctx, type, item, &n);
  if (rc != BPC_OK)
    return rc;
  if (n > cap)
    return bpc__err(ctx, BPC_ERANGE, "item packs to %zu bytes but the buffer holds only %zu", n,
                    cap);
  if (buf == NULL && n > 0)
    return bpc__err(ctx, BPC_ENULL, "bpc_type_pack: buf is NULL for a %zu-byte item", n);
  return item_pack(ctx, type, item, buf, n);
}

/* Header of the one block holding a bpc_buf_t and its data, padded so the
 * data is aligned for any type. */
#define BUF_HDR ((sizeof(bpc_buf_t) + alignof(max_align_t) - 1) / alignof(max_align_t) * \
                 alignof(max_align_t))

int bpc_type_unpack(bpc_ctx_t *ctx, const bpc_type_t *type, const void *buf, size_t bytes,
                    void **item)
{
  int rc = bpc_type_check(ctx, type);
  if (rc != BPC_OK)
    return rc;
  if (item == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc_type_unpack: item (output) is NULL");
  *item = NULL;
  if (buf == NULL && bytes > 0)
    return bpc__err(ctx, BPC_ENULL, "bpc_type_unpack: buf is NULL but bytes is %zu", bytes);
  if (type->kind == BPC_TYPE_CUSTOM)
    return custom_unpack(ctx, type, buf, bytes, item);

  void *data = NULL;
  rc = bpc__type_buf_alloc(ctx, type, bytes, item, &data);
  if (rc == BPC_OK && bytes > 0)
    memcpy(data, buf, bytes);
  return rc;
}

/*
 * A fresh item of many MiB is filled once, right away (a receive, a file
 * read), and the first touch of each 4 KiB page is a page fault: 65536 of
 * them for 256 MiB cost more than the copy itself. Where Linux offers
 * transparent huge pages on request, ask for them on the 2 MiB-aligned
 * interior of such an item (512 times fewer faults). Only advice: when it
 * is refused or unsupported nothing changes.
 */
static void advise_huge(void *data, size_t bytes)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  const uintptr_t huge = (uintptr_t)2 << 20;
  if (bytes < 4 * huge)
    return;
  uintptr_t lo = ((uintptr_t)data + huge - 1) & ~(huge - 1);
  uintptr_t hi = ((uintptr_t)data + bytes) & ~(huge - 1);
  if (hi > lo)
    (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
  (void)data;
  (void)bytes;
#endif
}

int bpc__type_buf_alloc(bpc_ctx_t *ctx, const bpc_type_t *t, size_t bytes, void **item,
                        void **data)
{
  *item = NULL;
  *data = NULL;
  if (t->kind != BPC_TYPE_CONTIGUOUS)
    return bpc__err(ctx, BPC_ETYPE, "bpc__type_buf_alloc: not a contiguous type");
  int rc = check_multiple(ctx, t, bytes);
  if (rc != BPC_OK)
    return rc;
  if (bytes > SIZE_MAX - BUF_HDR)
    return bpc__err(ctx, BPC_ERANGE, "contiguous item of %zu bytes is too large to copy", bytes);
  unsigned char *block = bpc__malloc(BUF_HDR + bytes);
  if (block == NULL)
    return bpc__err(ctx, BPC_ENOMEM, "out of memory for a copy of a %zu-byte contiguous item",
                    bytes);
  bpc_buf_t *b = (bpc_buf_t *)block;
  b->data = block + BUF_HDR;
  b->count = bytes / t->elem_size;
  advise_huge(b->data, bytes);
  *item = b;
  *data = b->data;
  return BPC_OK;
}

int bpc_type_item_destroy(const bpc_type_t *type, void *item)
{
  if (item == NULL)
    return BPC_OK;
  if (type == NULL)
    return BPC_ENULL;
  if (type->kind == BPC_TYPE_CONTIGUOUS)
    free(item); /* the bpc_buf_t and its data are one block */
  else if (type->kind == BPC_TYPE_CUSTOM && type->ops.destroy != NULL)
    type->ops.destroy(item, type->user);
  return BPC_OK;
}

/* --------------------------------------------------------- engine helpers */

int bpc__type_divisible(const bpc_type_t *t)
{
  if (t == NULL)
    return 0;
  return t->kind == BPC_TYPE_CONTIGUOUS || (t->kind == BPC_TYPE_CUSTOM && t->ops.split != NULL);
}

int bpc__type_msg(bpc_ctx_t *ctx, const bpc_type_t *t, const void *item, const void **bytes_ptr,
                  size_t *nbytes, void **owned_buf)
{
  if (bytes_ptr == NULL || nbytes == NULL || owned_buf == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__type_msg: NULL output pointer");
  *bytes_ptr = NULL;
  *nbytes = 0;
  *owned_buf = NULL;
  size_t n = 0;
  void *tmp = NULL;
  int rc = bpc_type_check(ctx, t);
  if (rc != BPC_OK)
    goto cleanup;
  rc = item_size(ctx, t, item, &n);
  if (rc != BPC_OK || n == 0)
    goto cleanup;
  if (t->kind == BPC_TYPE_CONTIGUOUS) {
    *bytes_ptr = ((const bpc_buf_t *)item)->data;
    *nbytes = n;
    goto cleanup;
  }
  tmp = bpc__malloc(n);
  if (tmp == NULL) {
    rc = bpc__err(ctx, BPC_ENOMEM, "out of memory for %zu bytes to pack an item", n);
    goto cleanup;
  }
  rc = item_pack(ctx, t, item, tmp, n);
  if (rc != BPC_OK)
    goto cleanup;
  *bytes_ptr = tmp;
  *nbytes = n;
  *owned_buf = tmp;
  tmp = NULL;
cleanup:
  free(tmp);
  return rc;
}

int bpc__type_pack_exact(bpc_ctx_t *ctx, const bpc_type_t *t, const void *item, void *buf,
                         size_t bytes)
{
  size_t n = 0;
  int rc = bpc_type_check(ctx, t);
  if (rc != BPC_OK)
    return rc;
  rc = item_size(ctx, t, item, &n);
  if (rc != BPC_OK)
    return rc;
  if (n != bytes)
    return bpc__err(ctx, BPC_ETYPE,
                    "packed_size reports %zu bytes for this item, but it measured %zu bytes "
                    "before (the item changed, or packed_size is not deterministic)",
                    n, bytes);
  if (buf == NULL && n > 0)
    return bpc__err(ctx, BPC_ENULL, "bpc__type_pack_exact: buf is NULL for a %zu-byte item", n);
  return item_pack(ctx, t, item, buf, n);
}

int bpc__type_view(bpc_ctx_t *ctx, const bpc_type_t *t, void *bytes, size_t nbytes,
                   bpc_buf_t *view, void **item, int *owned)
{
  if (item == NULL || owned == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__type_view: NULL output pointer");
  *item = NULL;
  *owned = 0;
  int rc = bpc_type_check(ctx, t);
  if (rc != BPC_OK)
    return rc;
  if (bytes == NULL && nbytes > 0)
    return bpc__err(ctx, BPC_ENULL, "bpc__type_view: bytes is NULL but nbytes is %zu", nbytes);
  if (t->kind == BPC_TYPE_CUSTOM) {
    rc = custom_unpack(ctx, t, bytes, nbytes, item);
    if (rc == BPC_OK)
      *owned = 1;
    return rc;
  }
  if (view == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__type_view: view is NULL for a contiguous type");
  rc = check_multiple(ctx, t, nbytes);
  if (rc != BPC_OK)
    return rc;
  view->data = nbytes > 0 ? bytes : NULL;
  view->count = nbytes / t->elem_size;
  *item = view;
  return BPC_OK;
}

int bpc__type_split(bpc_ctx_t *ctx, const bpc_type_t *t, const void *item, int k, int i,
                    bpc_buf_t *view, void **piece, int *owned)
{
  if (piece == NULL || owned == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__type_split: NULL output pointer");
  *piece = NULL;
  *owned = 0;
  int rc = bpc_type_check(ctx, t);
  if (rc != BPC_OK)
    return rc;
  if (k < 1 || i < 0 || i >= k)
    return bpc__err(ctx, BPC_ERANGE, "split into piece %d of %d (need k >= 1 and 0 <= i < k)", i,
                    k);
  if (t->kind == BPC_TYPE_CUSTOM) {
    if (t->ops.split == NULL)
      return bpc__err(ctx, BPC_ETYPE,
                      "custom type has no split callback; items of this type are not divisible");
    void *p = NULL;
    int urc = t->ops.split(item, k, i, &p, t->user);
    if (urc != 0)
      return bpc__err(ctx, BPC_ECALLBACK, "split callback returned %d (piece %d of %d)", urc, i,
                      k);
    *piece = p;
    *owned = 1;
    return BPC_OK;
  }
  if (view == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__type_split: view is NULL for a contiguous type");
  const bpc_buf_t *b = item;
  size_t count = b != NULL ? b->count : 0;
  if (count > 0 && b->data == NULL)
    return bpc__err(ctx, BPC_ENULL, "contiguous item has count %zu but data NULL", count);
  if (count > (size_t)INT64_MAX)
    return bpc__err(ctx, BPC_ERANGE, "contiguous item of %zu elements is too long to split",
                    count);
  int64_t off = 0, len = 0;
  bpc__piece_range((int64_t)count, k, i, &off, &len);
  view->count = (size_t)len;
  view->data = len > 0 ? (unsigned char *)b->data + (size_t)off * t->elem_size : NULL;
  *piece = view;
  return BPC_OK;
}

void bpc__type_release(const bpc_type_t *t, void *item, int owned)
{
  if (owned)
    bpc_type_item_destroy(t, item);
}

/* ---------------------------------------------------------------- bundles */

#define IDX_COUNT 8u /* bytes of the count */
#define IDX_ENTRY 16u /* bytes per part in the index: size + key */

/* Round x up to a multiple of BPC__PACK_ALIGN; 0 on overflow (x > 0). */
static size_t align_up(size_t x)
{
  size_t a = BPC__PACK_ALIGN;
  if (x > SIZE_MAX - (a - 1))
    return 0;
  return (x + a - 1) / a * a;
}

/* Index bytes for n parts; 0 on overflow. */
static size_t index_bytes(size_t n)
{
  if (n > (SIZE_MAX - IDX_COUNT) / IDX_ENTRY)
    return 0;
  return IDX_COUNT + n * IDX_ENTRY;
}

/* Where a payload of `size` bytes starts and ends after a region ending at
 * `end`. Returns 0 on overflow. */
static int place(size_t end, size_t size, size_t *off, size_t *next_end)
{
  size_t o = align_up(end);
  if (o == 0 || size > SIZE_MAX - o)
    return 0;
  *off = o;
  *next_end = o + size;
  return 1;
}

static int many_args(bpc_ctx_t *ctx, const bpc_type_t *t, int n, const void *const *items)
{
  int rc = bpc_type_check(ctx, t);
  if (rc != BPC_OK)
    return rc;
  if (n < 0)
    return bpc__err(ctx, BPC_ERANGE, "bundle of %d items (must be >= 0)", n);
  if (items == NULL && n > 0)
    return bpc__err(ctx, BPC_ENULL, "bundle of %d items but items is NULL", n);
  if (index_bytes((size_t)n) == 0)
    return bpc__err(ctx, BPC_ERANGE, "index of a bundle of %d items overflows size_t", n);
  return BPC_OK;
}

int bpc__pack_many_size(bpc_ctx_t *ctx, const bpc_type_t *t, int n, const void *const *items,
                        size_t *bytes)
{
  if (bytes == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__pack_many_size: bytes (output) is NULL");
  *bytes = 0;
  int rc = many_args(ctx, t, n, items);
  if (rc != BPC_OK)
    return rc;
  size_t end = index_bytes((size_t)n);
  for (int i = 0; i < n; i++) {
    size_t s = 0, off = 0;
    rc = item_size(ctx, t, items[i], &s);
    if (rc != BPC_OK)
      return rc;
    if (!place(end, s, &off, &end))
      return bpc__err(ctx, BPC_ERANGE, "bundle of %d items overflows size_t at item %d", n, i);
  }
  *bytes = end;
  return BPC_OK;
}

int bpc__pack_many(bpc_ctx_t *ctx, const bpc_type_t *t, int n, const void *const *items,
                   const int64_t *keys, void *buf, size_t cap, size_t *used)
{
  if (used == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__pack_many: used (output) is NULL");
  *used = 0;
  int rc = many_args(ctx, t, n, items);
  if (rc != BPC_OK)
    return rc;
  unsigned char *out = buf;
  size_t idx = index_bytes((size_t)n);
  if (idx > cap)
    return bpc__err(ctx, BPC_ERANGE,
                    "the index of a bundle of %d items needs %zu bytes but the buffer holds "
                    "only %zu",
                    n, idx, cap);
  if (out == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__pack_many: buf is NULL");

  /* Pass 1: measure every item once, write the index, find the total. */
  uint64_t count = (uint64_t)n;
  memcpy(out, &count, sizeof count);
  size_t end = idx;
  for (int i = 0; i < n; i++) {
    size_t s = 0, off = 0;
    rc = item_size(ctx, t, items[i], &s);
    if (rc != BPC_OK)
      return rc;
    if (!place(end, s, &off, &end))
      return bpc__err(ctx, BPC_ERANGE, "bundle of %d items overflows size_t at item %d", n, i);
    uint64_t s64 = (uint64_t)s;
    int64_t key = keys != NULL ? keys[i] : 0;
    memcpy(out + IDX_COUNT + (size_t)i * 8u, &s64, sizeof s64);
    memcpy(out + IDX_COUNT + (size_t)n * 8u + (size_t)i * 8u, &key, sizeof key);
  }
  if (end > cap)
    return bpc__err(ctx, BPC_ERANGE,
                    "a bundle of %d items needs %zu bytes but the buffer holds only %zu", n, end,
                    cap);

  /* Pass 2: pack each item at its place, zeroing the padding before it. */
  end = idx;
  for (int i = 0; i < n; i++) {
    uint64_t s64 = 0;
    size_t off = 0;
    memcpy(&s64, out + IDX_COUNT + (size_t)i * 8u, sizeof s64);
    size_t prev = end;
    place(end, (size_t)s64, &off, &end); /* cannot overflow: checked in pass 1 */
    if (off > prev)
      memset(out + prev, 0, off - prev);
    rc = item_pack(ctx, t, items[i], out + off, (size_t)s64);
    if (rc != BPC_OK)
      return rc;
  }
  *used = end;
  return BPC_OK;
}

int bpc__unpack_many(bpc_ctx_t *ctx, void *buf, size_t bytes, int *n, bpc__part_t **parts)
{
  if (n == NULL || parts == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__unpack_many: NULL output pointer");
  *n = 0;
  *parts = NULL;
  if (buf == NULL)
    return bpc__err(ctx, BPC_ENULL, "bpc__unpack_many: buf is NULL");
  unsigned char *in = buf;
  bpc__part_t *p = NULL;
  int rc = BPC_OK;
  uint64_t count = 0;
  if (bytes < IDX_COUNT) {
    rc = bpc__err(ctx, BPC_ETRUNC, "bundle of %zu bytes is shorter than its 8-byte item count",
                  bytes);
    goto cleanup;
  }
  memcpy(&count, in, sizeof count);
  if (count > (uint64_t)((bytes - IDX_COUNT) / IDX_ENTRY) || count > (uint64_t)INT_MAX) {
    rc = bpc__err(ctx, BPC_ETRUNC,
                  "bundle of %zu bytes claims %llu items, more than its index can hold "
                  "(16 bytes per item after an 8-byte count)",
                  bytes, (unsigned long long)count);
    goto cleanup;
  }
  size_t nn = (size_t)count;
  if (nn > 0) {
    p = bpc__malloc(nn * sizeof *p);
    if (p == NULL) {
      rc = bpc__err(ctx, BPC_ENOMEM, "out of memory for the index of a bundle of %zu items", nn);
      goto cleanup;
    }
  }
  size_t end = index_bytes(nn);
  for (size_t i = 0; i < nn; i++) {
    uint64_t s64 = 0;
    int64_t key = 0;
    size_t off = 0;
    memcpy(&s64, in + IDX_COUNT + i * 8u, sizeof s64);
    memcpy(&key, in + IDX_COUNT + nn * 8u + i * 8u, sizeof key);
    if (s64 > (uint64_t)bytes || !place(end, (size_t)s64, &off, &end) || end > bytes) {
      rc = bpc__err(ctx, BPC_ETRUNC,
                    "item %zu of %zu in the bundle (%llu bytes) runs past the end of the "
                    "%zu-byte bundle",
                    i, nn, (unsigned long long)s64, bytes);
      goto cleanup;
    }
    p[i].key = key;
    p[i].bytes = (size_t)s64;
    p[i].data = s64 > 0 ? in + off : NULL;
  }
  if (end != bytes) {
    rc = bpc__err(ctx, BPC_ETRUNC,
                  "bundle of %zu items should be %zu bytes long but is %zu bytes", nn, end,
                  bytes);
    goto cleanup;
  }
  *n = (int)nn;
  *parts = p;
  p = NULL;
cleanup:
  free(p);
  return rc;
}
