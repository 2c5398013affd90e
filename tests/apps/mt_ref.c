/*
 * tests/apps/mt_ref.c - the serial reference of test_mergetree.sh: 0-dim
 * persistence of a whole .npy field by one union-find over every vertex,
 * written apart from bpc-mergetree (it shares none of its code).
 *
 *   mt_ref FIELD.npy [--sublevel] [--wrap] [--thresholds T1,T2,...]
 *          [--labels FILE [--persistence T]]
 *
 * Prints the pairs "birth death birth_vertex death_vertex" sorted by the
 * birth in sweep order, and "# components >= T: N" (sublevel "<=") for each
 * threshold, counted directly on the thresholded grid. --labels writes the
 * segmentation as raw little-endian int64, x fastest: the label of a vertex
 * is the elder birth of its component right after it is swept. Vertex ids are
 * x + X * (y + Y * z); ties in value are ordered by id (superlevel: larger
 * value first, then larger id; sublevel: smaller value, then smaller id).
 * --persistence T simplifies the labels (not the printed pairs): a branch
 * whose pair has |death - birth| < T takes the label its death vertex got
 * (the branch it dies into), repeatedly while that one is below T too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static long long X, Y, Z, N;
static double *F;
static int sub, wrap, dbl;

static long long *par, *sz, *eld;

static long long root(long long a)
{
  while (par[a] != a)
    a = par[a] = par[par[a]];
  return a;
}

/* is vertex a earlier in the sweep than b? */
static int earlier(long long a, long long b)
{
  if (F[a] != F[b])
    return sub ? F[a] < F[b] : F[a] > F[b];
  return sub ? a < b : a > b;
}

static int by_sweep(const void *p, const void *q)
{
  long long a = *(const long long *)p, b = *(const long long *)q;
  return earlier(a, b) ? -1 : earlier(b, a) ? 1 : 0;
}

static int neighbours(long long v, long long *out)
{
  long long c[3] = {v % X, v / X % Y, v / X / Y}, n[3] = {X, Y, Z};
  int k = 0;
  for (int d = 0; d < 3; d++)
    for (int s = -1; s <= 1; s += 2) {
      long long q[3] = {c[0], c[1], c[2]};
      q[d] += s;
      if (q[d] < 0 || q[d] >= n[d]) {
        if (!wrap)
          continue;
        q[d] = (q[d] + n[d]) % n[d];
      }
      out[k++] = q[0] + X * (q[1] + Y * q[2]);
    }
  return k;
}

static void print_value(double v)
{
  if (isinf(v))
    printf(v > 0 ? "inf" : "-inf");
  else
    printf(dbl ? "%.17g" : "%.9g", v);
}

typedef struct {
  long long b, d, into; /* into: the label of the death vertex */
} pair_t;

static int by_birth(const void *p, const void *q)
{
  const pair_t *a = p, *b = q;
  return earlier(a->b, b->b) ? -1 : earlier(b->b, a->b) ? 1 : 0;
}

static int load(const char *path)
{
  FILE *f = fopen(path, "rb");
  unsigned char pre[10];
  if (f == NULL || fread(pre, 1, 10, f) != 10 || pre[6] != 1)
    return -1;
  size_t hl = pre[8] | (size_t)pre[9] << 8;
  char *h = calloc(hl + 1, 1);
  if (fread(h, 1, hl, f) != hl)
    return -1;
  dbl = strstr(h, "<f8") != NULL;
  char *s = strstr(h, "'shape': (");
  if (s == NULL || sscanf(s + 10, "%lld, %lld, %lld", &Z, &Y, &X) != 3)
    return -1;
  free(h);
  N = X * Y * Z;
  F = malloc(sizeof *F * (size_t)N);
  for (long long i = 0; i < N; i++) {
    if (dbl) {
      if (fread(&F[i], 8, 1, f) != 1)
        return -1;
    } else {
      float v;
      if (fread(&v, 4, 1, f) != 1)
        return -1;
      F[i] = v;
    }
  }
  fclose(f);
  return 0;
}

int main(int argc, char **argv)
{
  double th[64], pers = 0;
  int nth = 0;
  const char *labpath = NULL;
  if (argc < 2 || load(argv[1]) != 0) {
    fprintf(stderr, "mt_ref: cannot read the field\n");
    return 1;
  }
  for (int i = 2; i < argc; i++) {
    if (strcmp(argv[i], "--sublevel") == 0)
      sub = 1;
    else if (strcmp(argv[i], "--wrap") == 0)
      wrap = 1;
    else if (strcmp(argv[i], "--labels") == 0 && i + 1 < argc)
      labpath = argv[++i];
    else if (strcmp(argv[i], "--persistence") == 0 && i + 1 < argc)
      pers = strtod(argv[++i], NULL);
    else if (strcmp(argv[i], "--thresholds") == 0 && i + 1 < argc) {
      for (char *t = strtok(argv[++i], ","); t && nth < 64; t = strtok(NULL, ","))
        th[nth++] = strtod(t, NULL);
    }
  }
  long long *order = malloc(sizeof *order * (size_t)N), nb[6];
  par = malloc(sizeof *par * (size_t)N);
  sz = malloc(sizeof *sz * (size_t)N);
  eld = malloc(sizeof *eld * (size_t)N);
  char *seen = calloc((size_t)N, 1);
  long long *lab = malloc(sizeof *lab * (size_t)N);
  pair_t *pairs = malloc(sizeof *pairs * (size_t)(N + 1));
  long long np = 0;
  for (long long i = 0; i < N; i++)
    order[i] = i;
  qsort(order, (size_t)N, sizeof *order, by_sweep);
  for (long long s = 0; s < N; s++) {
    long long v = order[s];
    par[v] = v;
    sz[v] = 1;
    eld[v] = v;
    seen[v] = 1;
    long long np0 = np;
    int k = neighbours(v, nb);
    for (int j = 0; j < k; j++) {
      if (!seen[nb[j]])
        continue;
      long long a = root(v), b = root(nb[j]);
      if (a == b)
        continue;
      /* the component born later dies here, unless it is v's own new one */
      long long young = earlier(eld[a], eld[b]) ? eld[b] : eld[a];
      long long old = young == eld[a] ? eld[b] : eld[a];
      if (young != v)
        pairs[np++] = (pair_t){young, v, -1};
      if (sz[a] < sz[b]) {
        long long t = a;
        a = b;
        b = t;
      }
      par[b] = a;
      sz[a] += sz[b];
      eld[a] = old;
    }
    lab[v] = eld[root(v)];
    for (long long q = np0; q < np; q++)
      pairs[q].into = lab[v];
  }
  if (labpath != NULL && pers > 0) {
    /* up[b]: the branch b dies into, when b's persistence is below T */
    long long *up = malloc(sizeof *up * (size_t)N);
    for (long long i = 0; i < N; i++)
      up[i] = -1;
    for (long long q = 0; q < np; q++)
      if (!(fabs(F[pairs[q].d] - F[pairs[q].b]) >= pers))
        up[pairs[q].b] = pairs[q].into;
    for (long long i = 0; i < N; i++)
      while (up[lab[i]] >= 0)
        lab[i] = up[lab[i]];
    free(up);
  }
  if (labpath != NULL) {
    FILE *lf = fopen(labpath, "wb");
    for (long long i = 0; lf && i < N; i++) {
      unsigned char b[8];
      for (int q = 0; q < 8; q++)
        b[q] = (unsigned char)((unsigned long long)lab[i] >> (8 * q));
      fwrite(b, 1, 8, lf);
    }
    if (lf == NULL || fclose(lf) != 0)
      return 1;
  }
  pairs[np++] = (pair_t){eld[root(0)], -1, -1};
  qsort(pairs, (size_t)np, sizeof *pairs, by_birth);
  /* components of each thresholded set, counted directly */
  for (int t = 0; t < nth; t++) {
    long long c = 0;
    for (long long i = 0; i < N; i++)
      par[i] = i;
    for (long long i = 0; i < N; i++) {
      int in = sub ? F[i] <= th[t] : F[i] >= th[t];
      if (!in)
        continue;
      c++;
      int k = neighbours(i, nb);
      for (int j = 0; j < k; j++) {
        int in2 = sub ? F[nb[j]] <= th[t] : F[nb[j]] >= th[t];
        long long a = root(i), b = root(nb[j]);
        if (in2 && a != b) {
          par[a] = b;
          c--;
        }
      }
    }
    printf("# components %s ", sub ? "<=" : ">=");
    printf("%.15g: %lld\n", th[t], c);
  }
  for (long long i = 0; i < np; i++) {
    print_value(F[pairs[i].b]);
    printf(" ");
    print_value(pairs[i].d < 0 ? (sub ? INFINITY : -INFINITY) : F[pairs[i].d]);
    printf(" %lld %lld\n", pairs[i].b, pairs[i].d);
  }
  free(order);
  free(par);
  free(sz);
  free(eld);
  free(seen);
  free(lab);
  free(pairs);
  free(F);
  return 0;
}
