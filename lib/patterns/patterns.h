/*
 * lib/patterns/patterns.h - communication-pattern math. Pure functions: no
 * MPI, no context, no allocation unless the name says so. Unit-tested
 * serially in tests/unit/test_patterns.c.
 *
 * Implemented in kvec.c (k-vectors), rounds.c (rounds, groups)
 * and pieces.c (piece ranges, radix-k ownership, ring partners,
 * permutations); see doc/patterns.md.
 *
 * Vocabulary. Blocks are placed at positions 0..n-1 of an order (identity by
 * default, or a visibility order: order[pos] = gid). A k-vector k[0..R-1]
 * with product n writes every position in mixed radix, one digit per round.
 *  - distance doubling (default): round r works on digit r counted from the
 *    least significant end; stride(r) = k[0]*...*k[r-1]. Groups of a round
 *    are contiguous runs of positions once the earlier rounds are done
 *    (16 blocks, k = {4, 2, 2}, first two rounds shown: round 0 groups
 *    {0,1,2,3},...; round 1 {0,4},{8,12},{1,5},...; round 2 {0,8},...).
 *  (Distance halving, the digits from the most significant end, is the
 *    merge engine's own schedule: lib/engines/merge/merge_halving.c.)
 * The group of position p in round r is the k[r] positions that
 * differ from p only in that digit, listed by increasing digit; p's index in
 * its group is its digit.
 */
#ifndef BPC_LIB_PATTERNS_H
#define BPC_LIB_PATTERNS_H

#include <stddef.h>
#include <stdint.h>

#define BPC__MAX_ROUNDS 64

/* Return codes are bpc error codes (BPC_OK, BPC_EKVEC, BPC_EPERM, ...). */

/*
 * Validate k[0..nrounds-1] against n blocks: nrounds in [0, 64] (0 only for
 * n == 1), every k >= 2, product == n. On failure writes a sentence to msg
 * (if msg != NULL), e.g. "k-vector 4x3 multiplies to 12, but there are 16
 * blocks", and returns BPC_EKVEC. Every failure (including n < 1 and k NULL
 * with nrounds > 0) is BPC_EKVEC; msg is "" on success.
 */
int bpc__kvec_check(int n, const int *k, int nrounds, char *msg, size_t msglen);

/*
 * Choose a k-vector for n blocks preferring factors near `target` (>= 2;
 * typically 4): n is factored into primes and primes are packed into rounds
 * of product at most `target` where possible (a prime above target is a
 * round of its own). Writes at most `cap` entries; *nrounds = 0 for n == 1.
 * Returns BPC_EINVAL for n < 1, target < 2 or too small cap (BPC_ENULL for
 * nrounds NULL, or k NULL with cap > 0). Deterministic: primes are packed
 * largest first, first fit, and rounds are listed by decreasing k
 * (12 -> 4x3, 576 -> 4x4x4x3x3 for target 4). See kvec.c.
 */
int bpc__kvec_auto(int n, int target, int *k, int cap, int *nrounds);

/*
 * The k-vector of one round per prime factor of n, ascending: binary swap
 * generalised to any n (n = 2^m * q, q odd: m rounds of 2, then one round
 * per odd prime factor of q, ascending; 12 -> 2x2x3, 6 -> 2x3, 7 -> 7; a
 * prime n is one round of direct send). Writes at most `cap` entries;
 * *nrounds = 0 for n == 1 (n < 2^31 has at most 30 prime factors). Returns
 * BPC_EINVAL for n < 1 or too small cap (BPC_ENULL for nrounds NULL, or k
 * NULL with cap > 0).
 */
int bpc__kvec_primes(int n, int *k, int cap, int *nrounds);

/* Format "4x4x2" (or "1" for zero rounds) into buf; always NUL-terminated
 * when len > 0; a string that does not fit ends in "...". */
void bpc__kvec_format(const int *k, int nrounds, char *buf, size_t len);

typedef struct bpc__rounds {
  int n;          /* positions */
  int nrounds;    /* R */
  int k[BPC__MAX_ROUNDS];
} bpc__rounds_t;

/* Fill *R after checking the k-vector (bpc__kvec_check's codes and msg;
 * BPC_ENULL if R is NULL). */
int bpc__rounds_init(bpc__rounds_t *R, int n, const int *k, int nrounds, char *msg, size_t msglen);

/* Arguments out of range (R NULL, r outside 0..R-1, p outside 0..n-1) give
 * -1 from the int functions below and leave `members` untouched. */
/* Distance between consecutive members of a group in round r. */
int bpc__round_stride(const bpc__rounds_t *R, int r);
/* Index of position p within its round-r group (its round-r digit). */
int bpc__round_index(const bpc__rounds_t *R, int r, int p);
/* The k[r] positions of p's round-r group, by increasing index. */
void bpc__round_group(const bpc__rounds_t *R, int r, int p, int *members);

/*
 * Piece ranges: split `count` elements into k contiguous ranges; range i is
 * [floor(i*count/k), floor((i+1)*count/k)). Counts smaller than k and zero
 * are valid (some ranges are empty). k >= 1, 0 <= i < k. Exact for every
 * count in [0, INT64_MAX] (no 128-bit arithmetic needed); sizes differ by
 * at most 1. Invalid arguments give *off = *len = 0.
 */
void bpc__piece_range(int64_t count, int k, int i, int64_t *off, int64_t *len);
/* The piece index that element e (0 <= e < count) falls in (never an empty
 * piece); -1 for invalid arguments. O(log k). */
int bpc__piece_of(int64_t count, int k, int64_t e);

/* The same for size_t counts (count <= INT64_MAX): the flat split that
 * the shift and ring swap schedules use (piece p of n). */
void bpc__flat_piece(size_t count, int n, int p, size_t *off, size_t *len);

/* Nested floor splits by the digits of position p (radix-k swap ownership):
 * start from [0, count) and for r = 0 .. rounds-1 cut the current range
 * into R->k[r] pieces (bpc__piece_range) and keep piece
 * bpc__round_index(R, r, p). rounds = R->nrounds gives the final piece;
 * with every k = 2 this is binary swap's bit-reversed ownership, with one
 * round the flat split. Invalid arguments (R NULL, rounds outside
 * 0..R->nrounds, p outside 0..n-1) give *off = *len = 0. */
void bpc__radixk_piece(const bpc__rounds_t *R, int rounds, size_t count, int p, size_t *off,
                       size_t *len);

/* Ring partners: the position d steps from p on a ring of n positions
 * (d of any sign; (p + d) mod n in 0..n-1). d = 1 is the next position,
 * d = -1 the previous one; the shift schedule's stage-s partners are
 * d = s (send) and d = -s (receive). -1 for n < 1 or p outside 0..n-1. */
int bpc__ring_pos(int n, int p, int d);

/* Permutations: order[pos] = gid. check: every gid 0..n-1 exactly once
 * (else BPC_EPERM with msg, e.g. "order[5] = 3 repeats order[2]; ...";
 * BPC_ENULL for order NULL with n > 0, BPC_EINVAL for n < 0, BPC_ENOMEM if
 * the temporary bitmap for n > 65536 cannot be allocated: check uses an
 * n-bit bitmap, on the stack up to 65536 entries, else malloc'd and freed
 * before returning). invert: pos_of[gid] = pos; order must be valid. */
int bpc__perm_check(const int *order, int n, char *msg, size_t msglen);
void bpc__perm_invert(const int *order, int n, int *pos_of);

/* ceil(log2 n) (0 for n <= 1): the rounds of a binomial tree or of
 * recursive doubling over n participants. */
static inline int bpc__log2_ceil(long long n)
{
  int k = 0;
  while ((1LL << k) < n)
    k++;
  return k;
}

/* Source distributions of the s-to-p broadcast (doc/bcast.md, after the
 * paper's section 4) on a rows x cols mesh, gid = row * cols + col:
 *  ROW     whole rows, evenly spaced, filled left to right (the last one
 *          partly);            COL    the same with columns;
 *  EQUAL   every (p/s)-th block (gid floor(k p / s));
 *  RDIAG   right diagonals (i, (i + d) mod cols), diagonals evenly spaced,
 *          the first through (0, 0);  LDIAG  left diagonals
 *          (i, (cols - 1 - i - d) mod cols);
 *  BAND    bands of w = ceil(sqrt(diagonals)) adjacent right diagonals,
 *          evenly spaced;
 *  CROSS   alternately cells of evenly spaced rows and columns (a union
 *          of a row and a column distribution);
 *  BLOCK   a square of side ceil(sqrt(s)) at the top left (clipped to the
 *          mesh), row-major;
 *  RANDOM  s distinct gids drawn with `seed` (xorshift; same seed, same
 *          set on every machine).
 * A pattern that yields fewer than s distinct blocks (clipping,
 * collisions) is completed with the free blocks in gid order, so there
 * are always exactly s. out gets s gids in ascending order. Errors:
 * BPC_EINVAL (rows or cols < 1, s outside 0..rows*cols, unknown kind),
 * BPC_ENULL (out NULL with s > 0), BPC_ENOMEM. */
typedef enum bpc__bdist {
  BPC__BDIST_ROW = 0,
  BPC__BDIST_COL,
  BPC__BDIST_EQUAL,
  BPC__BDIST_RDIAG,
  BPC__BDIST_LDIAG,
  BPC__BDIST_BAND,
  BPC__BDIST_CROSS,
  BPC__BDIST_BLOCK,
  BPC__BDIST_RANDOM,
  BPC__BDIST_COUNT
} bpc__bdist_t;
int bpc__bcast_dist(int kind, int rows, int cols, int s, unsigned seed, int *out);
/* "row", "col", "equal", "rdiag", "ldiag", "band", "cross", "block",
 * "random"; "?" for an unknown kind. */
const char *bpc__bcast_dist_name(int kind);

#endif /* BPC_LIB_PATTERNS_H */
