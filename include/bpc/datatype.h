/*
 * bpc/datatype.h - item types: what engines move between blocks.
 *
 * Two kinds:
 *  - contiguous: an item is an array of `count` elements of `elem_size`
 *    bytes each (described to bpc as a bpc_buf_t). Sent straight from the
 *    user's memory (zero copy on the send path). `mpi_type` names the element
 *    for MPI baselines and reductions; bpc itself moves bytes.
 *  - custom: an item is an opaque `void *` the user's callbacks know how to
 *    measure, pack, unpack, destroy and (optionally) split.
 *
 * Ownership: a type value holds no memory; `user` stays the caller's. Items
 * unpacked by bpc are new allocations of the user's unpack callback; bpc
 * frees items it owns only through `destroy`.
 */
#ifndef BPC_DATATYPE_H
#define BPC_DATATYPE_H

#include "bpc/core.h"
#include "bpc/op.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A contiguous item: `count` elements at `data`. */
typedef struct bpc_buf {
  void *data;
  size_t count;
} bpc_buf_t;

typedef struct bpc_type_ops {
  /* Bytes `pack` will write for `item` (item may be NULL: an empty item). */
  int (*packed_size)(const void *item, size_t *bytes, void *user);
  /* Write exactly `bytes` bytes describing `item` to `buf`. */
  int (*pack)(const void *item, void *buf, size_t bytes, void *user);
  /* Make a new item from `bytes` bytes (bytes may be 0); *item is owned by
   * the caller of unpack and is freed with destroy. */
  int (*unpack)(const void *buf, size_t bytes, void **item, void *user);
  /* Free an item made by unpack or split (NULL allowed). */
  void (*destroy)(void *item, void *user);
  /* Optional (divisible items): make piece i of k of `item`, a new item. */
  int (*split)(const void *item, int k, int i, void **piece, void *user);
} bpc_type_ops_t;

typedef enum bpc_type_kind { BPC_TYPE_CONTIGUOUS = 1, BPC_TYPE_CUSTOM = 2 } bpc_type_kind_t;

typedef struct bpc_type {
  bpc_type_kind_t kind;
  size_t elem_size;      /* contiguous: bytes per element (> 0) */
  MPI_Datatype mpi_type; /* contiguous: the element's MPI type (may be MPI_BYTE) */
  bpc_type_ops_t ops;    /* custom: callbacks (packed_size, pack, unpack required) */
  void *user;            /* passed to every callback */
} bpc_type_t;

/* A contiguous type of elements of `elem_size` bytes. */
bpc_type_t bpc_type_contiguous(size_t elem_size, MPI_Datatype mpi_type);
/* A custom type; `ops` is copied. */
bpc_type_t bpc_type_custom(const bpc_type_ops_t *ops, void *user);

/* Check a type: BPC_ETYPE with a message for an unknown kind, elem_size 0,
 * or a custom type missing packed_size, pack or unpack. */
int bpc_type_check(bpc_ctx_t *ctx, const bpc_type_t *type);

/*
 * Serialise / deserialise one item, for code that moves items itself.
 * For a contiguous type `item` points to a bpc_buf_t.
 *  - bpc_type_size: bytes of the packed form.
 *  - bpc_type_pack: write them to buf (capacity `cap`; BPC_ERANGE if short).
 *  - bpc_type_unpack: custom: *item is a new item; contiguous: *item is a
 *    new bpc_buf_t whose data is a copy. Free either with
 *    bpc_type_item_destroy. Contiguous data whose length is not a multiple
 *    of elem_size is BPC_ETRUNC.
 *  - bpc_type_item_destroy: free an item made by bpc_type_unpack (custom:
 *    the type's destroy; contiguous: the bpc_buf_t with its data), or a
 *    custom item an engine handed to the caller. item NULL is a no-op.
 *    Errors: BPC_ENULL (type NULL with an item).
 * Callback failures return BPC_ECALLBACK with the callback's value in the
 * message.
 */
int bpc_type_size(bpc_ctx_t *ctx, const bpc_type_t *type, const void *item, size_t *bytes);
int bpc_type_pack(bpc_ctx_t *ctx, const bpc_type_t *type, const void *item, void *buf, size_t cap);
int bpc_type_unpack(bpc_ctx_t *ctx, const bpc_type_t *type, const void *buf, size_t bytes,
                    void **item);
int bpc_type_item_destroy(const bpc_type_t *type, void *item);

#ifdef __cplusplus
}
#endif
#endif /* BPC_DATATYPE_H */
