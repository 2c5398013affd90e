/*
 * tests/common/str_type.h - a custom variable-size item type for tests:
 * NUL-terminated strings (packed without the NUL; an empty or NULL string
 * packs to 0 bytes; unpack mallocs, destroy frees).
 */
#ifndef BPC_TESTS_STR_TYPE_H
#define BPC_TESTS_STR_TYPE_H

#include <stdlib.h>
#include <string.h>

#include "bpc.h"

static inline int str_size(const void *item, size_t *bytes, void *user)
{
  (void)user;
  *bytes = item ? strlen(item) : 0;
  return 0;
}

static inline int str_pack(const void *item, void *buf, size_t bytes, void *user)
{
  (void)user;
  memcpy(buf, item, bytes);
  return 0;
}

static inline int str_unpack(const void *buf, size_t bytes, void **item, void *user)
{
  (void)user;
  char *s = malloc(bytes + 1);
  if (s == NULL)
    return 1;
  if (bytes)
    memcpy(s, buf, bytes);
  s[bytes] = '\0';
  *item = s;
  return 0;
}

static inline void str_destroy(void *item, void *user)
{
  (void)user;
  free(item);
}

/* The ops of the string type, for bpc_type_custom. */
static inline bpc_type_ops_t str_ops(void)
{
  bpc_type_ops_t ops = {str_size, str_pack, str_unpack, str_destroy, NULL};
  return ops;
}

#endif /* BPC_TESTS_STR_TYPE_H */
