/*
 * apps/register/reg_frames.c - frames of bpc-register: the synthetic series
 * (a textured scene seen through a drifting, slightly rotating window, plus
 * noise), loading a frame (synthetic or PNG) and bilinear sampling.
 */
#include <math.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>

#include "register/register.h"

#include "../common/app_mix.h"

/* one splitmix64 step from x */
static uint64_t mix(uint64_t x) { return app_splitmix(&x); }

/* uniform in [0, 1) from (seed, a, b, c) */
static double unit(uint64_t seed, uint64_t a, uint64_t b, uint64_t c)
{
  return app_unit(mix(seed ^ mix(a ^ mix(b ^ mix(c)))));
}

#define NWAVES 10
#define NBLOBS 14

/* The scene: waves of wavelength 5..20 pixels in random directions and
 * Gaussian blobs spread over twice the frame, around grey 0.5. */
typedef struct scene {
  double wkx[NWAVES], wky[NWAVES], wph[NWAVES];
  double bx[NBLOBS], by[NBLOBS], br[NBLOBS], ba[NBLOBS];
} scene_t;

static void scene_init(const reg_source_t *s, scene_t *sc)
{
  const double pi = 3.14159265358979323846;
  for (int k = 0; k < NWAVES; k++) {
    double dir = 2.0 * pi * unit(s->seed, 1, (uint64_t)k, 0);
    double f = 2.0 * pi / (5.0 + 15.0 * unit(s->seed, 1, (uint64_t)k, 1));
    sc->wkx[k] = f * cos(dir);
    sc->wky[k] = f * sin(dir);
    sc->wph[k] = 2.0 * pi * unit(s->seed, 1, (uint64_t)k, 2);
  }
  for (int k = 0; k < NBLOBS; k++) {
    sc->bx[k] = (unit(s->seed, 2, (uint64_t)k, 0) - 0.5) * 2.0 * s->W;
    sc->by[k] = (unit(s->seed, 2, (uint64_t)k, 1) - 0.5) * 2.0 * s->H;
    double r = 4.0 + 0.08 * (s->W < s->H ? s->W : s->H) * unit(s->seed, 2, (uint64_t)k, 2);
    sc->br[k] = 1.0 / (2.0 * r * r);
    sc->ba[k] = unit(s->seed, 2, (uint64_t)k, 3) < 0.5 ? -0.3 : 0.3;
  }
}

static double scene(const scene_t *sc, double x, double y)
{
  double v = 0.5;
  for (int k = 0; k < NWAVES; k++)
    v += 0.025 * sin(sc->wkx[k] * x + sc->wky[k] * y + sc->wph[k]);
  for (int k = 0; k < NBLOBS; k++) {
    double dx = x - sc->bx[k], dy = y - sc->by[k];
    v += sc->ba[k] * exp(-(dx * dx + dy * dy) * sc->br[k]);
  }
  return v;
}

void reg_synthetic_truth(const reg_source_t *s, int i, reg_xf_t *out)
{
  /* a slow drift (0.25 px per frame along a seeded direction), slow
   * oscillations and a jitter of +-0.5 px and +-0.003 rad; frame 0 is the
   * identity */
  const double pi = 3.14159265358979323846;
  double dir = 2.0 * pi * unit(s->seed, 3, 0, 0), ph[3];
  for (int k = 0; k < 3; k++)
    ph[k] = 2.0 * pi * unit(s->seed, 3, 1, (uint64_t)k);
  double jit[3] = {0.0, 0.0, 0.0};
  if (i > 0)
    for (int k = 0; k < 3; k++)
      jit[k] = unit(s->seed, 4, (uint64_t)i, (uint64_t)k) - 0.5;
  *out = (reg_xf_t){0};
  out->angle = 0.02 * (sin(0.23 * i + ph[0]) - sin(ph[0])) + 0.006 * jit[0];
  out->tx = 0.25 * i * cos(dir) + 4.0 * (sin(0.19 * i + ph[1]) - sin(ph[1])) + jit[1];
  out->ty = 0.25 * i * sin(dir) + 4.0 * (sin(0.17 * i + ph[2]) - sin(ph[2])) + jit[2];
  out->to = 0;
  out->from = i;
}

float *reg_frame_load(const reg_source_t *s, int i, char *err, size_t errlen)
{
  const int W = s->W, H = s->H;
  float *img = malloc(sizeof(float) * (size_t)W * (size_t)H);
  if (img == NULL) {
    snprintf(err, errlen, "out of memory for a %dx%d frame", W, H);
    return NULL;
  }
  if (s->paths != NULL) {
    if (reg_png_read(s->paths[i], img, W, H, err, errlen) != 0) {
      free(img);
      return NULL;
    }
    return img;
  }
  reg_xf_t m;
  scene_t sc;
  scene_init(s, &sc);
  reg_synthetic_truth(s, i, &m);
  const double c = cos(m.angle), sn = sin(m.angle);
  const double cx = 0.5 * (W - 1), cy = 0.5 * (H - 1);
  for (int y = 0; y < H; y++)
    for (int x = 0; x < W; x++) {
      double qx = x - cx, qy = y - cy;
      double v = scene(&sc, c * qx - sn * qy + m.tx, sn * qx + c * qy + m.ty);
      v += s->noise * (unit(s->seed, 5 + (uint64_t)i, (uint64_t)x, (uint64_t)y) - 0.5);
      img[(size_t)y * W + x] = (float)(v < 0.0 ? 0.0 : v > 1.0 ? 1.0 : v);
    }
  return img;
}

float reg_sample(const float *img, int W, int H, double qx, double qy, int *inside)
{
  double x = qx + 0.5 * (W - 1), y = qy + 0.5 * (H - 1);
  if (!(x >= 0.0 && y >= 0.0 && x <= W - 1 && y <= H - 1)) {
    *inside = 0;
    return 0.0f;
  }
  *inside = 1;
  int x0 = (int)x, y0 = (int)y;
  if (x0 > W - 2)
    x0 = W > 1 ? W - 2 : 0;
  if (y0 > H - 2)
    y0 = H > 1 ? H - 2 : 0;
  double fx = x - x0, fy = y - y0;
  int x1 = W > 1 ? x0 + 1 : x0, y1 = H > 1 ? y0 + 1 : y0;
  const float *r0 = img + (size_t)y0 * W, *r1 = img + (size_t)y1 * W;
  double top = r0[x0] + fx * (r0[x1] - r0[x0]);
  double bot = r1[x0] + fx * (r1[x1] - r1[x0]);
  return (float)(top + fy * (bot - top));
}

/* ------------------------------------------------------------ the cache */

typedef struct reg_slot {
  int frame; /* -1: empty */
  int refs;
  long long used; /* tick of the last get */
  float *img;
} reg_slot_t;

struct reg_cache {
  const reg_source_t *src;
  int nslots;
  reg_slot_t *slot;
  long long tick, loads, hits;
  pthread_mutex_t lock;
};

reg_cache_t *reg_cache_new(const reg_source_t *s, int nslots)
{
  reg_cache_t *c = calloc(1, sizeof *c);
  if (c == NULL)
    return NULL;
  c->slot = calloc((size_t)(nslots > 0 ? nslots : 1), sizeof *c->slot);
  if (c->slot == NULL || pthread_mutex_init(&c->lock, NULL) != 0) {
    free(c->slot);
    free(c);
    return NULL;
  }
  c->src = s;
  c->nslots = nslots > 0 ? nslots : 0;
  for (int k = 0; k < c->nslots; k++)
    c->slot[k].frame = -1;
  return c;
}

/* The slot holding frame i, or -1 (under the lock). */
static int find_slot(const reg_cache_t *c, int i)
{
  for (int k = 0; k < c->nslots; k++)
    if (c->slot[k].frame == i && c->slot[k].img != NULL)
      return k;
  return -1;
}

const float *reg_cache_get(reg_cache_t *c, int i, char *err, size_t errlen)
{
  pthread_mutex_lock(&c->lock);
  int k = find_slot(c, i);
  if (k >= 0) {
    c->slot[k].refs++;
    c->slot[k].used = ++c->tick;
    c->hits++;
    pthread_mutex_unlock(&c->lock);
    return c->slot[k].img;
  }
  c->loads++;
  pthread_mutex_unlock(&c->lock);
  /* load outside the lock: other threads go on meanwhile */
  float *img = reg_frame_load(c->src, i, err, errlen);
  if (img == NULL)
    return NULL;
  pthread_mutex_lock(&c->lock);
  k = find_slot(c, i); /* another thread may have loaded it meanwhile */
  if (k >= 0) {
    c->slot[k].refs++;
    c->slot[k].used = ++c->tick;
    pthread_mutex_unlock(&c->lock);
    free(img);
    return c->slot[k].img;
  }
  int victim = -1; /* an empty slot, else the least recently used free one */
  for (int j = 0; j < c->nslots; j++) {
    if (c->slot[j].refs > 0)
      continue;
    if (c->slot[j].img == NULL) {
      victim = j;
      break;
    }
    if (victim < 0 || c->slot[j].used < c->slot[victim].used)
      victim = j;
  }
  if (victim >= 0) {
    free(c->slot[victim].img);
    c->slot[victim] = (reg_slot_t){i, 1, ++c->tick, img};
  }
  pthread_mutex_unlock(&c->lock);
  return img; /* victim < 0: every slot in use, this caller's own copy */
}

void reg_cache_put(reg_cache_t *c, const float *img)
{
  if (img == NULL)
    return;
  pthread_mutex_lock(&c->lock);
  int k = 0;
  while (k < c->nslots && c->slot[k].img != img)
    k++;
  if (k < c->nslots)
    c->slot[k].refs--;
  pthread_mutex_unlock(&c->lock);
  if (k == c->nslots)
    free((void *)img); /* not cached: the caller's own copy */
}

void reg_cache_counts(const reg_cache_t *c, long long *loads, long long *hits)
{
  *loads = c->loads;
  *hits = c->hits;
}

void reg_cache_free(reg_cache_t *c)
{
  if (c == NULL)
    return;
  for (int k = 0; k < c->nslots; k++)
    free(c->slot[k].img);
  pthread_mutex_destroy(&c->lock);
  free(c->slot);
  free(c);
}
