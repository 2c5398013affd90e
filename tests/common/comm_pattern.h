/*
 * tests/common/comm_pattern.h - the message pattern of the messaging tests:
 * every block sends one variable-size message to gid+1 (seq 0) and one to
 * gid+7 (seq 1), mod n. Sizes cover empty, inline (< 8 KiB) and two-message
 * (large) payloads; contents depend on (source, seq, index) so a message
 * delivered to the wrong place, truncated or reordered is caught.
 */
#ifndef BPC_TESTS_COMM_PATTERN_H
#define BPC_TESTS_COMM_PATTERN_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const int cp_offsets[2] = {1, 7};

static inline size_t cp_size(int src, int seq, int salt)
{
  uint32_t h = (uint32_t)src * 2654435761u ^ (uint32_t)(seq + 1) * 40503u ^ (uint32_t)salt * 97u;
  switch (h % 5) {
  case 0: return 0;
  case 1: return 1 + h % 13;
  case 2: return 100 + h % 3000;
  case 3: return 8160 + h % 64; /* around the inline limit */
  default: return 20000 + h % 50000;
  }
}

static inline unsigned char cp_byte(int src, int seq, int salt, size_t j)
{
  return (unsigned char)((size_t)src * 131u + (size_t)seq * 17u + (size_t)salt * 7u + j * 13u +
                         (j >> 8));
}

static inline void cp_fill(unsigned char *buf, int src, int seq, int salt)
{
  size_t n = cp_size(src, seq, salt);
  for (size_t j = 0; j < n; j++)
    buf[j] = cp_byte(src, seq, salt, j);
}

/* 0 if data/bytes is exactly what src sent with seq and salt. */
static inline int cp_verify(const void *data, size_t bytes, int src, int seq, int salt)
{
  if (bytes != cp_size(src, seq, salt))
    return 1;
  const unsigned char *p = data;
  for (size_t j = 0; j < bytes; j++)
    if (p[j] != cp_byte(src, seq, salt, j))
      return 2;
  return 0;
}

static inline int cp_dst(int gid, int seq, int n) { return (gid + cp_offsets[seq]) % n; }
static inline int cp_src(int gid, int seq, int n)
{
  return ((gid - cp_offsets[seq]) % n + n) % n;
}

#endif /* BPC_TESTS_COMM_PATTERN_H */
