/*
 * bpc.h - the umbrella header of bpc (block-parallel communication).
 * Include this one; it pulls in every public area.
 */
#ifndef BPC_H
#define BPC_H

#include "bpc/version.h"
#include "bpc/core.h"
#include "bpc/decomp.h"
#include "bpc/op.h"
#include "bpc/datatype.h"
#include "bpc/merge.h"
#include "bpc/swap.h"
#include "bpc/alltoall.h"
#include "bpc/allreduce.h"
#include "bpc/bcast.h"
#include "bpc/scan.h"
#include "bpc/neighbor.h"
#include "bpc/composite.h"
#include "bpc/io.h"

#endif /* BPC_H */
