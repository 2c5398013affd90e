/*
 * lib/comm/transport_self.c - the in-process transport of serial contexts
 * (bpc_init_serial): one process owns every block, so every message is local
 * and is delivered by exchange.c without a transport. This table answers the
 * questions that would need another process: there is never anything to
 * receive, and a remote send or a blocking wait is a schedule bug, reported
 * as BPC_ESTATE instead of hanging. It makes no MPI call, so engines run (and
 * are unit-tested) without mpirun or MPI_Init.
 */
#include "comm/transport.h"

static int self_post_send(bpc__exch_t *ex, int dst_rank, bpc__sendrec_t *s, const void *data,
                          const bpc__msgpart_t *parts, int nparts)
{
  (void)s;
  (void)data;
  (void)parts;
  (void)nparts;
  return bpc__err(ex->ctx, BPC_ESTATE, "serial context: rank %d does not exist", dst_rank);
}

static int self_post_bundle(bpc__exch_t *ex, int dst_rank, bpc__sendrec_t *s, size_t len)
{
  (void)s;
  (void)len;
  return bpc__err(ex->ctx, BPC_ESTATE, "serial context: rank %d does not exist", dst_rank);
}

static int self_test_sends(bpc__exch_t *ex, bpc__sendrec_t **s, int n, int *done)
{
  (void)ex;
  (void)s;
  for (int i = 0; i < n; i++)
    done[i] = 1;
  return BPC_OK;
}

static int self_poll(bpc__exch_t *ex, int block, int *events)
{
  (void)events;
  if (block)
    return bpc__err(ex->ctx, BPC_ESTATE,
                    "serial context: waiting for a message that no block has sent");
  return BPC_OK;
}

static int self_pending(const bpc__exch_t *ex)
{
  (void)ex;
  return 0;
}

static void self_close(bpc__exch_t *ex) { (void)ex; }

/* one process: nobody to tell, nothing on its way */
static void self_abort(bpc__exch_t *ex, int code)
{
  (void)ex;
  (void)code;
}
static int self_drain(bpc__exch_t *ex)
{
  (void)ex;
  return BPC_OK;
}

const bpc__transport_t bpc__transport_self = {
    .name = "self",
    .post_send = self_post_send,
    .post_bundle = self_post_bundle,
    .test_sends = self_test_sends,
    .poll = self_poll,
    .pending = self_pending,
    .close = self_close,
    .abort = self_abort,
    .drain = self_drain,
};
