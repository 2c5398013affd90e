/*
 * tests/common/io_items.h - block items for the checkpoint tests (test_io,
 * io_step): contiguous arrays of doubles and custom strings whose sizes and
 * contents follow from (gid, generation), so a reader on any process count
 * checks each block against the formula (the serial reference). Sizes vary
 * widely, and some blocks are empty.
 */
#ifndef BPC_TESTS_IO_ITEMS_H
#define BPC_TESTS_IO_ITEMS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bpc.h"
#include "str_type.h"

/* Elements of block gid: empty every 4th gid, one large block, the rest
 * 1..300. */
static inline size_t io_ref_count(int gid, int gen)
{
  if (gid % 4 == 3)
    return 0;
  if (gid == 1)
    return 20000;
  return 1 + (size_t)((gid * 7919 + gen * 13) % 300);
}

static inline double io_ref_value(int gid, size_t i, int gen)
{
  return gid * 1000.0 + (double)i * 0.5 + gen;
}

/* The string of block gid: "g<gen>b<gid>;" repeated gid % 6 times (empty
 * for multiples of 6). */
static inline char *io_ref_string(int gid, int gen)
{
  char unit[48];
  snprintf(unit, sizeof unit, "g%db%d;", gen, gid);
  size_t reps = (size_t)(gid % 6), ul = strlen(unit);
  char *s = malloc(reps * ul + 1);
  if (s == NULL)
    return NULL;
  for (size_t r = 0; r < reps; r++)
    memcpy(s + r * ul, unit, ul);
  s[reps * ul] = '\0';
  return s;
}

typedef struct io_gen {
  int gen;
  int custom; /* 1: strings, 0: doubles */
} io_gen_t;

static inline void *io_create(int gid, void *user)
{
  const io_gen_t *G = user;
  if (G->custom)
    return io_ref_string(gid, G->gen);
  size_t n = io_ref_count(gid, G->gen);
  bpc_buf_t *b = malloc(sizeof *b + n * sizeof(double));
  if (b == NULL)
    return NULL;
  b->data = n > 0 ? (void *)(b + 1) : NULL;
  b->count = n;
  for (size_t i = 0; i < n; i++)
    ((double *)b->data)[i] = io_ref_value(gid, i, G->gen);
  return b;
}

static inline void io_destroy(void *block, int gid, void *user)
{
  (void)gid;
  (void)user;
  free(block);
}

static inline bpc_type_t io_type(int custom)
{
  bpc_type_ops_t ops = str_ops();
  return custom ? bpc_type_custom(&ops, NULL) : bpc_type_contiguous(sizeof(double), MPI_DOUBLE);
}

/* Number of local blocks of `b` whose item is not the reference of
 * generation gen (0: all right). */
static inline int io_count_wrong(const bpc_blocks_t *b, int custom, int gen)
{
  int n = 0, wrong = 0;
  bpc_blocks_count(b, &n);
  for (int i = 0; i < n; i++) {
    void *item = NULL;
    int gid = -1;
    bpc_blocks_at(b, i, &item, &gid);
    if (custom) {
      char *ref = io_ref_string(gid, gen);
      wrong += item == NULL || ref == NULL || strcmp(item, ref) != 0;
      free(ref);
      continue;
    }
    const bpc_buf_t *buf = item;
    size_t cnt = io_ref_count(gid, gen);
    if (buf == NULL || buf->count != cnt) {
      wrong++;
      continue;
    }
    for (size_t j = 0; j < cnt; j++)
      if (((const double *)buf->data)[j] != io_ref_value(gid, j, gen)) {
        wrong++;
        break;
      }
  }
  return wrong;
}

#endif /* BPC_TESTS_IO_ITEMS_H */
