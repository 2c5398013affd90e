/*
 * tests/mpi/test_render.c - bpc-render's parallel pipeline (apps/render)
 * against a single-block serial render of the same volume: every
 * compositing strategy, 1..3 blocks per process, orthographic views from
 * several sides and a perspective view; the gathered image must match to
 * 1e-5 per channel (64x64 image, 32^3 Marschner-Lobb volume).
 */
#include "mpi_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "render/render.h"

static bpc_ctx_t *ctx;

static void setup(void) { ck_assert_int_eq(bpc_init(MPI_COMM_WORLD, NULL, &ctx), BPC_OK); }
static void teardown(void) { bpc_finalize(&ctx); }

static void serial_render(const rd_par_t *p, float *out)
{
  rd_block_t b;
  char err[128];
  memset(&b, 0, sizeof b);
  for (int a = 0; a < 3; a++) {
    b.n[a] = p->src.n[a];
    b.lo[a] = 0;
    b.hi[a] = p->src.n[a] - 1;
    b.clo[a] = 0;
    b.chi[a] = p->src.n[a] - 1;
  }
  rd_block_load(&b, &p->src, err, sizeof err);
  rd_camera_t cam;
  rd_camera_init(&cam, p->src.n, p->W, p->H, p->az, p->el, p->persp);
  rd_render(&b, &cam, &p->tf, p->dt, out);
  free(b.v);
}

START_TEST(test_render_matches_serial)
{
  bpc_algo_info_t strats[16];
  int nstrats = 0;
  ck_assert_int_eq(bpc_algorithms("composite", strats, 16, &nstrats), BPC_OK);
  const double views[][3] = {{30, 35, 0}, {-120, -50, 0}, {90, 0, 0}, {200, 10, 1}, {10, 80, 1}};
  rd_par_t p;
  memset(&p, 0, sizeof p);
  p.src.kind = RD_ML;
  p.src.n[0] = p.src.n[1] = p.src.n[2] = 32;
  rd_tf_default(&p.tf);
  p.W = p.H = 64;
  p.dt = 0.5;
  p.nthreads = 1;
  float *ref = malloc(sizeof(float) * 4 * 64 * 64), *img = malloc(sizeof(float) * 4 * 64 * 64);
  int idx = 0;
  for (int v = 0; v < 5; v++) {
    p.az = views[v][0];
    p.el = views[v][1];
    p.persp = (int)views[v][2];
    serial_render(&p, ref);
    double mass = 0.0;
    for (int i = 0; i < 4 * 64 * 64; i++)
      mass += ref[i];
    T_CHECK(mass > 10.0, "view %d: the reference image is (nearly) empty: %g", v, mass);
    for (int s = 0; s < nstrats; s++)
      for (int bpp = 1; bpp <= 3; bpp++, idx++) {
        p.algorithm = strats[s].name;
        p.nblocks = bpp * t_size;
        p.active_pixels = idx % 2 == 0;
        char err[256] = "";
        for (int i = 0; i < 4 * 64 * 64; i++)
          img[i] = -1.0f;
        int rc = rd_parallel(ctx, &p, t_rank == 0 ? img : NULL, NULL, err, sizeof err);
        T_CHECK(rc == BPC_OK, "view %d %s bpp %d: %s", v, strats[s].name, bpp, err);
        if (t_rank == 0 && rc == BPC_OK) {
          double worst = 0.0;
          int at = 0;
          for (int i = 0; i < 4 * 64 * 64; i++) {
            double dd = fabs((double)img[i] - (double)ref[i]);
            if (!(dd <= worst)) {
              worst = dd;
              at = i;
            }
          }
          T_CHECK(worst <= 1e-5, "view %d %s %d blocks: channel %d differs by %g (%g vs %g)", v,
                  strats[s].name, p.nblocks, at, worst, img[at], ref[at]);
        }
      }
  }
  free(ref);
  free(img);
  T_SYNC();
}
END_TEST

static Suite *suite(void)
{
  Suite *s = suite_create("render");
  TCase *tc = tcase_create("render");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_render_matches_serial);
  suite_add_tcase(s, tc);
  return s;
}

BPC_T_MPI_MAIN(suite)
