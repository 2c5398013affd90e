/*
 * tests/mpi/test_comm.c - block messaging under MPI: every block sends a
 * variable-size message to gid+1 and gid+7 (mod n) and receives from the
 * matching sources, with 1..4 blocks per process, fewer blocks than
 * processes, contiguous and round-robin assignments; receive orders that
 * differ from send orders; interleaved and back-to-back exchanges; messages
 * with parts; statistics against a reference count.
 */
#include "mpi_check.h"

#include <string.h>

#include "../common/comm_pattern.h"
#include "bpc.h"
#include "comm/comm.h"
#include "comm/tags.h"
#include "decomp/decomp.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

/* Send the pattern for all local blocks into `ex` (buffers kept in bufs). */
static void send_all(bpc__exch_t *ex, const bpc_assign_t *a, int n, int salt, unsigned char **bufs)
{
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  for (int i = 0; i < nl; i++) {
    for (int seq = 0; seq < 2; seq++) {
      int g = gids[i];
      size_t sz = cp_size(g, seq, salt);
      bufs[2 * i + seq] = malloc(sz ? sz : 1);
      cp_fill(bufs[2 * i + seq], g, seq, salt);
      int rc = bpc__exch_send(ex, g, cp_dst(g, seq, n), seq, bufs[2 * i + seq], sz, 0);
      T_CHECK(rc == BPC_OK, "send %d->%d: %s", g, cp_dst(g, seq, n), bpc_last_error(ctx));
    }
  }
}

/* Receive and verify everything addressed to local blocks; `reverse` waits
 * for seq 1 before seq 0 and for blocks in descending order. */
static void recv_all(bpc__exch_t *ex, const bpc_assign_t *a, int n, int salt, int reverse)
{
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  for (int ii = 0; ii < nl; ii++) {
    int i = reverse ? nl - 1 - ii : ii;
    for (int s = 0; s < 2; s++) {
      int seq = reverse ? 1 - s : s;
      int g = gids[i], src = cp_src(g, seq, n);
      bpc__msg_t *m = NULL;
      int rc = bpc__exch_wait(ex, g, src, seq, &m);
      T_CHECK(rc == BPC_OK && m != NULL, "wait %d<-%d seq %d: %s", g, src, seq,
              bpc_last_error(ctx));
      if (m) {
        T_CHECK(m->src_gid == src && m->dst_gid == g && m->seq == seq, "envelope %d %d %d",
                m->src_gid, m->dst_gid, m->seq);
        int v = cp_verify(m->data, m->bytes, src, seq, salt);
        T_CHECK(v == 0, "payload %d<-%d seq %d: %zu bytes, expected %zu (code %d)", g, src, seq,
                m->bytes, cp_size(src, seq, salt), v);
        bpc__msg_release(ex, m);
      }
    }
  }
}

static void free_bufs(unsigned char **bufs, int n)
{
  for (int i = 0; i < n; i++)
    free(bufs[i]);
}

/* Reference: payload bytes this rank sends to other ranks. */
static uint64_t remote_bytes(const bpc_assign_t *a, int n, int salt, uint64_t *msgs)
{
  const int *gids;
  int nl, me;
  uint64_t b = 0;
  *msgs = 0;
  bpc_assign_local(a, &gids, &nl);
  bpc_ctx_rank(ctx, &me);
  for (int i = 0; i < nl; i++)
    for (int seq = 0; seq < 2; seq++) {
      int r;
      bpc_assign_rank(a, cp_dst(gids[i], seq, n), &r);
      if (r != me) {
        b += cp_size(gids[i], seq, salt);
        (*msgs)++;
      }
    }
  return b;
}

/* Reference: MPI messages this rank posts for the pattern (wire_sent), from
 * the documented rules (lib/comm/comm.h, tags.h): without bundling one for
 * an inline payload, two for a larger one; with bundling the small ones to
 * a process share one message until a larger one to that process, a full
 * bundle (BPC__BUNDLE_MAX) or the first wait (after all sends) sends it. */
static uint64_t wire_msgs(const bpc_assign_t *a, int n, int salt, int bundle)
{
  const int *gids;
  int nl, me;
  bpc_assign_local(a, &gids, &nl);
  bpc_ctx_rank(ctx, &me);
  size_t *used = calloc((size_t)t_size, sizeof *used);
  int *count = calloc((size_t)t_size, sizeof *count);
  uint64_t wire = 0;
  for (int i = 0; i < nl; i++)
    for (int seq = 0; seq < 2; seq++) {
      int r;
      bpc_assign_rank(a, cp_dst(gids[i], seq, n), &r);
      if (r == me)
        continue;
      const size_t sz = cp_size(gids[i], seq, salt);
      if (!bundle) {
        wire += sz <= BPC__INLINE_MAX ? 1 : 2;
        continue;
      }
      if (sz > BPC__INLINE_MAX) {
        wire += 2 + (count[r] > 0);
        count[r] = 0;
        continue;
      }
      const size_t room = sizeof(bpc__bundle_desc_t) + ((sz + 7) & ~(size_t)7);
      if (count[r] > 0 && used[r] + room > BPC__BUNDLE_MAX) {
        wire++;
        count[r] = 0;
      }
      if (count[r]++ == 0)
        used[r] = sizeof(bpc__hdr_t);
      used[r] += room;
    }
  for (int r = 0; r < t_size; r++)
    wire += count[r] > 0;
  free(used);
  free(count);
  return wire;
}

static void run_pattern_b(int n, bpc_assign_mode_t mode, int reverse, int bundle)
{
  bpc_assign_t *a = NULL;
  int rc = bpc_assign_create(ctx, n, mode, NULL, &a);
  T_CHECK(rc == BPC_OK, "assign: %s", bpc_last_error(ctx));
  if (rc != BPC_OK)
    return;
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  unsigned char **bufs = calloc((size_t)(2 * nl + 1), sizeof *bufs);
  bpc__exch_t *ex = NULL;
  rc = bpc__exch_open(ctx, "test", bpc__assign_rank_cb, a, &ex);
  T_CHECK(rc == BPC_OK, "open: %s", bpc_last_error(ctx));
  if (ex != NULL && bundle)
    bpc__exch_bundle(ex, 1);
  int salt = n * 3 + (int)mode + reverse;
  send_all(ex, a, n, salt, bufs);
  recv_all(ex, a, n, salt, reverse);
  rc = bpc__exch_close(&ex);
  T_CHECK(rc == BPC_OK, "close: %s", bpc_last_error(ctx));
  bpc_call_stats_t cs;
  bpc_stats_last_call(ctx, &cs);
  uint64_t msgs, bytes = remote_bytes(a, n, salt, &msgs);
  T_CHECK(cs.total.bytes_sent == bytes, "bytes_sent %llu, expected %llu",
          (unsigned long long)cs.total.bytes_sent, (unsigned long long)bytes);
  T_CHECK(cs.total.msgs_sent == msgs, "msgs_sent %llu, expected %llu",
          (unsigned long long)cs.total.msgs_sent, (unsigned long long)msgs);
  T_CHECK(cs.total.msgs_sent + cs.total.local_msgs == (uint64_t)(2 * nl), "all sends counted");
  const uint64_t wire = wire_msgs(a, n, salt, bundle);
  T_CHECK(cs.total.wire_sent == wire, "%d blocks%s: wire_sent %llu, expected %llu", n,
          bundle ? " bundled" : "", (unsigned long long)cs.total.wire_sent,
          (unsigned long long)wire);
  /* bytes received summed over ranks equals bytes sent summed over ranks */
  unsigned long long s[2] = {cs.total.bytes_sent, cs.total.bytes_recv}, g[2];
  MPI_Allreduce(s, g, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
  T_CHECK(g[0] == g[1], "sent %llu != received %llu over all ranks", g[0], g[1]);
  free_bufs(bufs, 2 * nl);
  free(bufs);
  bpc_assign_destroy(&a);
}

static void run_pattern(int n, bpc_assign_mode_t mode, int reverse)
{
  run_pattern_b(n, mode, reverse, 0);
}

START_TEST(test_bundled)
{
  /* the pattern with bundling on: every message delivered whole, in its
   * place, counted once in msgs_sent; fewer MPI messages (wire_sent as the
   * rules say); 256 blocks per process overfill the bundles (split) */
  int P = t_size;
  for (int bpp = 1; bpp <= 4; bpp++) {
    run_pattern_b(bpp * P, BPC_ASSIGN_CONTIGUOUS, bpp & 1, 1);
    run_pattern_b(bpp * P + (bpp == 3), BPC_ASSIGN_ROUND_ROBIN, !(bpp & 1), 1);
  }
  run_pattern_b(256 * P, BPC_ASSIGN_ROUND_ROBIN, 0, 1);
  run_pattern_b(256 * P + 1, BPC_ASSIGN_ROUND_ROBIN, 1, 1);
  T_SYNC();
}
END_TEST

START_TEST(test_neighbours_contiguous)
{
  int P = t_size;
  for (int bpp = 1; bpp <= 4; bpp++)
    run_pattern(bpp * P, BPC_ASSIGN_CONTIGUOUS, 0);
  T_SYNC();
}
END_TEST

START_TEST(test_neighbours_round_robin_reverse)
{
  int P = t_size;
  for (int bpp = 1; bpp <= 4; bpp++)
    run_pattern(bpp * P + (bpp == 3), BPC_ASSIGN_ROUND_ROBIN, 1);
  T_SYNC();
}
END_TEST

START_TEST(test_fewer_blocks_than_ranks)
{
  /* 1, 2, 3 and a prime count of blocks, whatever P is */
  int counts[] = {1, 2, 3, 13};
  for (int i = 0; i < 4; i++)
    run_pattern(counts[i], BPC_ASSIGN_CONTIGUOUS, i & 1);
  T_SYNC();
}
END_TEST

START_TEST(test_interleaved_exchanges)
{
  /* two exchanges open at once, same envelopes, different payloads: each
   * receives only its own messages; then back-to-back reuse */
  int n = 2 * t_size + 1;
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  for (int rep = 0; rep < 3; rep++) {
    unsigned char **b1 = calloc((size_t)(2 * nl + 1), sizeof *b1);
    unsigned char **b2 = calloc((size_t)(2 * nl + 1), sizeof *b2);
    bpc__exch_t *e1 = NULL, *e2 = NULL;
    T_CHECK(bpc__exch_open(ctx, "one", bpc__assign_rank_cb, a, &e1) == BPC_OK, "open 1");
    T_CHECK(bpc__exch_open(ctx, "two", bpc__assign_rank_cb, a, &e2) == BPC_OK, "open 2");
    send_all(e1, a, n, 1000 + rep, b1);
    send_all(e2, a, n, 2000 + rep, b2);
    recv_all(e2, a, n, 2000 + rep, 0);
    recv_all(e1, a, n, 1000 + rep, 1);
    T_CHECK(bpc__exch_close(&e2) == BPC_OK, "close 2: %s", bpc_last_error(ctx));
    T_CHECK(bpc__exch_close(&e1) == BPC_OK, "close 1: %s", bpc_last_error(ctx));
    free_bufs(b1, 2 * nl);
    free_bufs(b2, 2 * nl);
    free(b1);
    free(b2);
  }
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

START_TEST(test_take_any_order)
{
  /* receive with take/progress in whatever order messages arrive */
  int n = 3 * t_size;
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_ROUND_ROBIN, NULL, &a), BPC_OK);
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  unsigned char **bufs = calloc((size_t)(2 * nl + 1), sizeof *bufs);
  bpc__exch_t *ex = NULL;
  T_CHECK(bpc__exch_open(ctx, "any", bpc__assign_rank_cb, a, &ex) == BPC_OK, "open");
  send_all(ex, a, n, 77, bufs);
  int want = 2 * nl, got = 0;
  double t0 = MPI_Wtime();
  while (got < want && MPI_Wtime() - t0 < 60) {
    bpc__exch_progress(ex);
    for (int i = 0; i < nl; i++) {
      bpc__msg_t *m = NULL;
      bpc__exch_take(ex, gids[i], -1, -1, &m);
      if (m) {
        int seq = m->seq;
        T_CHECK(m->src_gid == cp_src(gids[i], seq, n), "source %d for %d seq %d", m->src_gid,
                gids[i], seq);
        T_CHECK(cp_verify(m->data, m->bytes, m->src_gid, seq, 77) == 0, "payload");
        bpc__msg_release(ex, m);
        got++;
      }
    }
  }
  T_CHECK(got == want, "took %d of %d messages", got, want);
  T_CHECK(bpc__exch_close(&ex) == BPC_OK, "close: %s", bpc_last_error(ctx));
  free_bufs(bufs, 2 * nl);
  free(bufs);
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

START_TEST(test_untaken_message_is_reported)
{
  /* every block sends to gid+1 but nobody receives: close reports ESTATE on
   * every rank that got a message, and nothing hangs */
  int n = t_size;
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  bpc__exch_t *ex = NULL;
  T_CHECK(bpc__exch_open(ctx, NULL, bpc__assign_rank_cb, a, &ex) == BPC_OK, "open");
  const int *gids;
  int nl;
  bpc_assign_local(a, &gids, &nl);
  char payload[16] = "hello";
  for (int i = 0; i < nl; i++)
    bpc__exch_send(ex, gids[i], (gids[i] + 1) % n, 0, payload, sizeof payload, 0);
  /* make sure our incoming message has arrived before closing */
  MPI_Barrier(MPI_COMM_WORLD);
  bpc__msg_t *m = NULL;
  for (int i = 0; i < nl; i++) {
    int rc = bpc__exch_wait(ex, gids[i], -1, 0, &m);
    T_CHECK(rc == BPC_OK, "wait");
    /* put it back untaken by not releasing? no: take it, then send one more
     * to ourselves that nobody takes */
    bpc__msg_release(ex, m);
    bpc__exch_send(ex, gids[i], gids[i], 9, payload, 3, 0);
  }
  int rc = bpc__exch_close(&ex);
  T_CHECK(nl == 0 || rc == BPC_ESTATE, "close returned %d (%s)", rc, bpc_last_error(ctx));
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* A large message then small ones with the same (src, dst, seq): they are
 * taken in send order although the small ones arrive complete first; with
 * bundling, small ones in a bundle before and after large ones. */
static void same_envelope_fifo(int bundle)
{
  int n = t_size;
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  bpc__exch_t *ex = NULL;
  T_CHECK(bpc__exch_open(ctx, NULL, bpc__assign_rank_cb, a, &ex) == BPC_OK, "open");
  if (ex != NULL && bundle)
    bpc__exch_bundle(ex, 1);
  size_t sizes[6] = {300000, 5, 40000, 0, 3, 9000};
  if (bundle) { /* small first */
    sizes[0] = 7;
    sizes[1] = 300000;
  }
  unsigned char *bufs[6];
  int me = t_rank, dst = (me + 1) % n, src = (me + n - 1) % n;
  for (int i = 0; i < 6; i++) {
    bufs[i] = malloc(sizes[i] + 1);
    memset(bufs[i], i + 1, sizes[i]);
    T_CHECK(bpc__exch_send(ex, me, dst, 3, bufs[i], sizes[i], 0) == BPC_OK, "send %d", i);
  }
  for (int i = 0; i < 6; i++) {
    bpc__msg_t *m = NULL;
    T_CHECK(bpc__exch_wait(ex, me, src, 3, &m) == BPC_OK && m, "wait %d", i);
    if (m) {
      T_CHECK(m->bytes == sizes[i], "message %d has %zu bytes, expected %zu", i, m->bytes,
              sizes[i]);
      T_CHECK(m->bytes == 0 || ((unsigned char *)m->data)[m->bytes - 1] == i + 1, "content %d",
              i);
      bpc__msg_release(ex, m);
    }
  }
  T_CHECK(bpc__exch_close(&ex) == BPC_OK, "close: %s", bpc_last_error(ctx));
  for (int i = 0; i < 6; i++)
    free(bufs[i]);
  bpc_assign_destroy(&a);
  T_SYNC();
}

START_TEST(test_same_envelope_fifo) { same_envelope_fifo(0); }
END_TEST

START_TEST(test_same_envelope_fifo_bundled) { same_envelope_fifo(1); }
END_TEST

/* Two blocks a rank (contiguous): this rank's two gids, the next rank's
 * first block (dst) and the previous rank's (src). */
static bpc_assign_t *two_a_rank(int *me, int *mine2, int *dst, int *src)
{
  const int n = 2 * t_size;
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  const int *gids = NULL;
  int nl = 0;
  bpc_assign_local(a, &gids, &nl);
  *me = gids[0];
  *mine2 = gids[1];
  *dst = (*me + 2) % n;
  *src = (*me + n - 2) % n;
  return a;
}

/* Messages land in the receiver's own buffers (bpc__exch_recv_into):
 * large (payload message), inline and empty ones (with bundling: in a
 * bundle), from the ring neighbour and from a local block; a destination
 * that is too small is not used (pool buffer as usual); several for one
 * envelope go in order. */
static void recv_into(int bundle)
{
  int me, mine2, dst, src;
  bpc_assign_t *a = two_a_rank(&me, &mine2, &dst, &src);
  size_t sizes[4] = {300000, 100, 0, 70000};
  unsigned char *out[4], *in[4];
  bpc__exch_t *ex = NULL;
  T_CHECK(bpc__exch_open(ctx, NULL, bpc__assign_rank_cb, a, &ex) == BPC_OK, "open");
  if (ex != NULL && bundle)
    bpc__exch_bundle(ex, 1);
  for (int i = 0; i < 4; i++) {
    out[i] = malloc(sizes[i] + 1);
    in[i] = malloc(sizes[i] + 1);
    memset(out[i], 7 * i + 1, sizes[i]);
    /* the last one's destination is too small */
    T_CHECK(bpc__exch_recv_into(ex, me, src, 4, in[i], i == 3 ? sizes[i] - 1 : sizes[i]) ==
                BPC_OK, "recv_into %d", i);
  }
  /* and one from the local second block */
  unsigned char *lin = malloc(5000), *lout = malloc(5000);
  memset(lout, 9, 5000);
  T_CHECK(bpc__exch_recv_into(ex, me, mine2, 1, lin, 5000) == BPC_OK, "recv_into local");
  for (int i = 0; i < 4; i++)
    T_CHECK(bpc__exch_send(ex, me, dst, 4, out[i], sizes[i], 0) == BPC_OK, "send %d", i);
  T_CHECK(bpc__exch_send(ex, mine2, me, 1, lout, 5000, 0) == BPC_OK, "send local");
  for (int i = 0; i < 4; i++) {
    bpc__msg_t *m = NULL;
    T_CHECK(bpc__exch_wait(ex, me, src, 4, &m) == BPC_OK && m, "wait %d", i);
    if (m) {
      T_CHECK(m->bytes == sizes[i], "message %d: %zu bytes, expected %zu", i, m->bytes, sizes[i]);
      if (sizes[i] > 0)
        T_CHECK((m->data == in[i]) == (i != 3), "message %d at %p, its destination %p", i,
                m->data, (void *)in[i]);
      T_CHECK(m->bytes == 0 || ((unsigned char *)m->data)[m->bytes - 1] == 7 * i + 1,
              "content %d", i);
      bpc__msg_release(ex, m);
    }
  }
  bpc__msg_t *m = NULL;
  T_CHECK(bpc__exch_wait(ex, me, mine2, 1, &m) == BPC_OK && m, "wait local");
  if (m) {
    T_CHECK(m->data == lin && m->bytes == 5000 && lin[4999] == 9, "local message not in place");
    bpc__msg_release(ex, m);
  }
  T_CHECK(bpc__exch_close(&ex) == BPC_OK, "close: %s", bpc_last_error(ctx));
  for (int i = 0; i < 4; i++) {
    free(out[i]);
    free(in[i]);
  }
  free(lin);
  free(lout);
  bpc_assign_destroy(&a);
  T_SYNC();
}

START_TEST(test_recv_into) { recv_into(0); }
END_TEST

START_TEST(test_recv_into_bundled) { recv_into(1); }
END_TEST

/* Many destinations (the gather rank of bpc_composite posts one per block):
 * 3000 envelopes from the ring neighbour (seqs 0..2999, every 7th posted
 * twice, two messages sent for it) and as many from the local second
 * block, posted in two halves (the table grows while half of it has
 * already been used; every rank posts before any sends), sent in a
 * shuffled order and waited for in another:
 * every message lands in its own destination, the two of one envelope in
 * posting order. */
START_TEST(test_recv_into_many)
{
  const int N = 3000;
  int me, mine2, dst, src;
  bpc_assign_t *a = two_a_rank(&me, &mine2, &dst, &src);
  long long (*in)[2][2] = calloc((size_t)N, sizeof *in); /* [seq][source][post] */
  long long *out = malloc(sizeof(long long) * 2 * (size_t)N);
  bpc__exch_t *ex = NULL;
  T_CHECK(bpc__exch_open(ctx, NULL, bpc__assign_rank_cb, a, &ex) == BPC_OK, "open");
  int bad = 0;
  for (int half = 0; half < 2 && ex != NULL; half++) {
    const int k0 = half * N / 2, k1 = (half + 1) * N / 2;
    for (int k = k0; k < k1; k++)
      for (int s = 0; s < 2; s++)
        for (int d = 0; d < 1 + (k % 7 == 0); d++)
          bad += bpc__exch_recv_into(ex, me, s ? mine2 : src, k, &in[k][s][d], sizeof(long long)) !=
                 BPC_OK;
    /* every rank has posted before any sends (a message that comes first
     * lands in a pool buffer) */
    MPI_Barrier(MPI_COMM_WORLD);
    /* each seq's value: who sent it, which seq, and which of its two */
    for (int j = k0; j < k1; j++) {
      const int k = k0 + (int)(((long long)(j - k0) * 1237 + 11) % (k1 - k0)); /* 1237: prime to 1500 */
      for (int d = 0; d < 1 + (k % 7 == 0); d++) {
        out[2 * k + d] = 1000000LL * (t_rank + 1) + 10 * k + d;
        bad += bpc__exch_send(ex, me, dst, k, &out[2 * k + d], sizeof(long long), 0) != BPC_OK;
        bad += bpc__exch_send(ex, mine2, me, k, &out[2 * k + d], sizeof(long long), 0) != BPC_OK;
      }
    }
    for (int j = k1 - 1; j >= k0; j--) /* waited for backwards */
      for (int s = 0; s < 2; s++)
        for (int d = 0; d < 1 + (j % 7 == 0); d++) {
          bpc__msg_t *m = NULL;
          const int from = s ? t_rank : (t_rank + t_size - 1) % t_size;
          const long long want = 1000000LL * (from + 1) + 10 * j + d;
          int wrc = bpc__exch_wait(ex, me, s ? mine2 : src, j, &m);
          if (wrc != BPC_OK || m == NULL || m->data != &in[j][s][d] || in[j][s][d] != want) {
            if (bad++ < 3)
              fprintf(stderr, "[rank %d] seq %d source %d post %d: rc %d, at %p (its own %p), "
                      "value %lld, want %lld\n", t_rank, j, s, d, wrc, m ? m->data : NULL,
                      (void *)&in[j][s][d], in[j][s][d], want);
          }
          bpc__msg_release(ex, m);
        }
  }
  T_CHECK(bad == 0, "%d wrong destination(s) or value(s)", bad);
  T_CHECK(bpc__exch_close(&ex) == BPC_OK, "close: %s", bpc_last_error(ctx));
  free(in);
  free(out);
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

/* Messages of test_send_parts: the pattern's bytes (comm_pattern.h) for
 * (sending rank, message id), of any size. */
static void parts_fill(unsigned char *b, size_t n, int sender, int id)
{
  for (size_t i = 0; i < n; i++)
    b[i] = cp_byte(sender, id, 5, i);
}

static int parts_ok(const bpc__msg_t *m, size_t n, int sender, int id)
{
  if (m->bytes != n || (n > 0 && m->data == NULL))
    return 0;
  const unsigned char *b = m->data;
  for (size_t i = 0; i < n; i++)
    if (b[i] != cp_byte(sender, id, 5, i))
      return 0;
  return 1;
}

START_TEST(test_send_parts)
{
  /* messages with parts, to the next rank and to this rank (local): an
   * inline head and a large head, parts empty, small and large, part seqs
   * shared with plain messages sent before and after (taken in send order),
   * and a group without parts; every message checked byte for byte and the
   * statistics against the count of messages and bytes */
  int n = t_size;
  bpc_assign_t *a = NULL;
  ck_assert_int_eq(bpc_assign_create(ctx, n, BPC_ASSIGN_CONTIGUOUS, NULL, &a), BPC_OK);
  bpc__exch_t *ex = NULL;
  T_CHECK(bpc__exch_open(ctx, "test", bpc__assign_rank_cb, a, &ex) == BPC_OK, "open");
  enum { NMSG = 12 };
  /* id: seq, size; groups: [0] plain; [1 | 2 3 4 5] inline head + 4 parts;
   * [6] plain; [7 | 8 9] large head + 2 parts; [10 |] no parts; [11] plain */
  static const int seqs[NMSG] = {5, 1, 5, 6, 5, 7, 5, 2, 6, 8, 3, 6};
  static const size_t sizes[NMSG] = {40000, 100, 300000, 0, 7, 70000, 3,
                                     20000, 0, 9000, 0, 50000};
  unsigned char *bufs[NMSG];
  for (int i = 0; i < NMSG; i++) {
    bufs[i] = malloc(sizes[i] + 1);
    parts_fill(bufs[i], sizes[i], t_rank, i);
  }
  int me = t_rank, dsts[2] = {(me + 1) % n, me};
  uint64_t want_bytes = 0, want_msgs = 0;
  for (int d = 0; d < (n > 1 ? 2 : 1); d++) {
    int dst = dsts[d];
    bpc__msgpart_t p1[4], p2[2];
    for (int i = 0; i < 4; i++)
      p1[i] = (bpc__msgpart_t){bufs[2 + i], sizes[2 + i], seqs[2 + i]};
    for (int i = 0; i < 2; i++)
      p2[i] = (bpc__msgpart_t){bufs[8 + i], sizes[8 + i], seqs[8 + i]};
    T_CHECK(bpc__exch_send(ex, me, dst, seqs[0], bufs[0], sizes[0], 0) == BPC_OK, "send 0");
    T_CHECK(bpc__exch_send_parts(ex, me, dst, seqs[1], bufs[1], sizes[1], p1, 4) == BPC_OK,
            "send 1: %s", bpc_last_error(ctx));
    T_CHECK(bpc__exch_send(ex, me, dst, seqs[6], bufs[6], sizes[6], 0) == BPC_OK, "send 6");
    T_CHECK(bpc__exch_send_parts(ex, me, dst, seqs[7], bufs[7], sizes[7], p2, 2) == BPC_OK,
            "send 7: %s", bpc_last_error(ctx));
    T_CHECK(bpc__exch_send_parts(ex, me, dst, seqs[10], bufs[10], sizes[10], NULL, 0) == BPC_OK,
            "send 10");
    T_CHECK(bpc__exch_send(ex, me, dst, seqs[11], bufs[11], sizes[11], 0) == BPC_OK, "send 11");
    if (dst != me)
      for (int i = 0; i < NMSG; i++) {
        want_bytes += sizes[i];
        want_msgs++;
      }
  }
  /* bad input: a non-empty part without a buffer */
  bpc__msgpart_t bad = {NULL, 10, 4};
  T_CHECK(bpc__exch_send_parts(ex, me, dsts[0], 4, bufs[0], 1, &bad, 1) == BPC_ENULL,
          "a NULL part buffer is refused");
  for (int d = 0; d < (n > 1 ? 2 : 1); d++) {
    int src = d == 0 ? (me + n - 1) % n : me;
    /* take later groups first (every message is in the mailbox or on its
     * way once its group's header has arrived); messages of one seq in
     * send order */
    static const int order[NMSG] = {10, 9, 7, 3, 5, 8, 1, 0, 11, 2, 4, 6};
    for (int k = 0; k < NMSG; k++) {
      int i = order[k];
      bpc__msg_t *m = NULL;
      T_CHECK(bpc__exch_wait(ex, me, src, seqs[i], &m) == BPC_OK && m, "wait %d from %d", i,
              src);
      if (m) {
        T_CHECK(parts_ok(m, sizes[i], src, i),
                "message %d from %d: %zu bytes, expected %zu with its pattern", i, src, m->bytes,
                sizes[i]);
        bpc__msg_release(ex, m);
      }
    }
  }
  /* more parts than a send keeps requests for in place: 12 of 20000 bytes
   * (ids 100..111), seq 9 */
  enum { NBIG = 12 };
  unsigned char *big[NBIG];
  bpc__msgpart_t bp[NBIG];
  for (int i = 0; i < NBIG; i++) {
    big[i] = malloc(20000);
    parts_fill(big[i], 20000, t_rank, 100 + i);
    bp[i] = (bpc__msgpart_t){big[i], 20000, 9};
  }
  T_CHECK(bpc__exch_send_parts(ex, me, dsts[0], 9, NULL, 0, bp, NBIG) == BPC_OK, "send 12 parts");
  for (int i = -1; i < NBIG; i++) {
    bpc__msg_t *m = NULL;
    T_CHECK(bpc__exch_wait(ex, me, (me + n - 1) % n, 9, &m) == BPC_OK && m, "wait part %d", i);
    if (m) {
      int okp = i < 0 ? m->bytes == 0 : parts_ok(m, 20000, (me + n - 1) % n, 100 + i);
      T_CHECK(okp, "part %d of 12: %zu bytes", i, m->bytes);
      bpc__msg_release(ex, m);
    }
  }
  if (dsts[0] != me) {
    want_bytes += NBIG * 20000;
    want_msgs += NBIG + 1;
  }
  int rc = bpc__exch_close(&ex);
  T_CHECK(rc == BPC_ENULL, "close returned %d, not the refused send's BPC_ENULL", rc);
  for (int i = 0; i < NBIG; i++)
    free(big[i]);
  bpc_call_stats_t cs;
  bpc_stats_last_call(ctx, &cs);
  T_CHECK(cs.total.bytes_sent == want_bytes && cs.total.msgs_sent == want_msgs,
          "sent %llu bytes in %llu messages, expected %llu in %llu",
          (unsigned long long)cs.total.bytes_sent, (unsigned long long)cs.total.msgs_sent,
          (unsigned long long)want_bytes, (unsigned long long)want_msgs);
  T_CHECK(cs.total.bytes_recv == want_bytes && cs.total.msgs_recv == want_msgs,
          "received %llu bytes in %llu messages, expected %llu in %llu",
          (unsigned long long)cs.total.bytes_recv, (unsigned long long)cs.total.msgs_recv,
          (unsigned long long)want_bytes, (unsigned long long)want_msgs);
  for (int i = 0; i < NMSG; i++)
    free(bufs[i]);
  bpc_assign_destroy(&a);
  T_SYNC();
}
END_TEST

static Suite *comm_suite(void)
{
  Suite *s = suite_create("comm_mpi");
  TCase *tc = tcase_create("exchange");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 0);
  tcase_add_test(tc, test_neighbours_contiguous);
  tcase_add_test(tc, test_neighbours_round_robin_reverse);
  tcase_add_test(tc, test_fewer_blocks_than_ranks);
  tcase_add_test(tc, test_interleaved_exchanges);
  tcase_add_test(tc, test_take_any_order);
  tcase_add_test(tc, test_untaken_message_is_reported);
  tcase_add_test(tc, test_same_envelope_fifo);
  tcase_add_test(tc, test_send_parts);
  tcase_add_test(tc, test_recv_into);
  tcase_add_test(tc, test_recv_into_bundled);
  tcase_add_test(tc, test_recv_into_many);
  tcase_add_test(tc, test_same_envelope_fifo_bundled);
  tcase_add_test(tc, test_bundled);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(comm_suite)
