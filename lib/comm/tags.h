/*
 * lib/comm/tags.h - the wire format and tag use of the MPI transport.
 *
 * Tags: every engine call opens one exchange, which takes the next tag epoch
 * of the context (bpc__next_tag, identical on all ranks because calls are
 * collective and ordered). All messages of an exchange carry its tag, so
 * back-to-back and interleaved calls never match each other's messages;
 * epochs cycle through [16, MPI_TAG_UB].
 *
 * Messages: a bpc message is a 32-byte header, then the payload:
 *  - inline (payload <= BPC__INLINE_MAX): one MPI message, header and payload
 *    copied into one pool buffer;
 *  - large: two MPI messages with the exchange's tag, the header and then the
 *    payload, sent straight from the sender's memory (no copy). The receiver
 *    probes the header (MPI_Improbe/MPI_Mrecv), then at once posts an
 *    MPI_Irecv for the payload from the same source and tag into a pool
 *    buffer; MPI's non-overtaking rule guarantees that this receive matches
 *    the payload and that a probe never does. The payload is placed at the
 *    same offset within a page as the sender's data (the header carries it):
 *    Open MPI's single-copy transfer (CMA) runs about 20% slower for 16 MiB
 *    when source and destination page offsets differ.
 *  - with parts (bpc__exch_send_parts): the header's flags carry
 *    BPC__HDR_PARTS and the number of parts (bits 8..31); the header message
 *    is the header, the head payload if inline, then one bpc__part_desc_t per
 *    part. Then come, with the same tag, the head payload if large and the
 *    payload of every non-empty part, in order, each from the sender's memory.
 *    The receiver posts all those receives as soon as it has the header
 *    (each part at its sender's page offset), so again no probe can match a
 *    payload, and a part costs one MPI message, not two plus a probe.
 *  - bundles (exchanges with bundling on, bpc__exch_bundle): small messages
 *    (payload <= BPC__INLINE_MAX) to blocks of one process are copied into
 *    one buffer per destination process and leave as ONE MPI message: a
 *    header with flag BPC__HDR_BUNDLE (src_gid = dst_gid = -1, seq = the
 *    number of messages, bytes = the body's size), then per message a
 *    bpc__bundle_desc_t and its payload padded to 8 bytes. The receiver
 *    delivers them in order, their payloads read in place in the one
 *    receive buffer (back to the pool when the last of them is released).
 *    A bundle holds at most BPC__BUNDLE_MAX bytes; a fuller one is sent
 *    and a new one begun.
 */
#ifndef BPC_LIB_COMM_TAGS_H
#define BPC_LIB_COMM_TAGS_H

#include <stdint.h>

#define BPC__MSG_MAGIC 0x42504331u /* "BPC1" */
#define BPC__HDR_INLINE 1u
#define BPC__HDR_PARTS 2u
#define BPC__HDR_BUNDLE 4u
/* A rank that failed inside the exchange tells every other rank so (header
 * only; bpc__exch_end): their waits return instead of waiting for messages
 * the failed rank will never send. */
#define BPC__HDR_ABORT 8u
#define BPC__HDR_NPARTS_SHIFT 8
#define BPC__MAX_PARTS ((1 << 24) - 1)
/* Largest payload sent inline with its header (one message, one copy). */
#define BPC__INLINE_MAX (8192 - 32)
/* Largest bundle (header, descriptors and payloads). */
#define BPC__BUNDLE_MAX ((size_t)256 << 10)

typedef struct bpc__hdr {
  uint32_t magic;
  uint32_t flags;
  int32_t src_gid;
  int32_t dst_gid;
  int32_t seq;
  uint32_t page_off; /* large payloads: the sender's address mod 4096 */
  uint64_t bytes; /* payload bytes */
} bpc__hdr_t;

/* One part of a message with parts, as listed after its header. */
typedef struct bpc__part_desc {
  uint64_t bytes;
  int32_t seq;
  uint32_t page_off;
} bpc__part_desc_t;

/* One message of a bundle, followed by its payload padded to 8 bytes. */
typedef struct bpc__bundle_desc {
  int32_t src_gid;
  int32_t dst_gid;
  int32_t seq;
  uint32_t bytes;
} bpc__bundle_desc_t;

_Static_assert(sizeof(bpc__bundle_desc_t) == 16, "bundle descriptors must be 16 bytes");
_Static_assert(sizeof(bpc__part_desc_t) == 16, "part descriptors must be 16 bytes");
_Static_assert(sizeof(bpc__hdr_t) == 32, "bpc message header must be 32 bytes");

#endif /* BPC_LIB_COMM_TAGS_H */
