/*
 * lib/io/format.c - the checkpoint format (doc/io.md "File format"): the
 * CRC-32C, little-endian encoding of the header and the table entries, and
 * their checked decoding. Every byte of the header, the table and the
 * metadata is covered by a checksum; the payloads by their table entry's.
 */
#include "io/io.h"

#include <limits.h>
#include <string.h>

/* ------------------------------------------------------------- CRC-32C */

static const uint32_t crc_table[256] = {
  0x00000000u, 0xf26b8303u, 0xe13b70f7u, 0x1350f3f4u, 0xc79a971fu, 0x35f1141cu,
  0x26a1e7e8u, 0xd4ca64ebu, 0x8ad958cfu, 0x78b2dbccu, 0x6be22838u, 0x9989ab3bu,
  0x4d43cfd0u, 0xbf284cd3u, 0xac78bf27u, 0x5e133c24u, 0x105ec76fu, 0xe235446cu,
  0xf165b798u, 0x030e349bu, 0xd7c45070u, 0x25afd373u, 0x36ff2087u, 0xc494a384u,
  0x9a879fa0u, 0x68ec1ca3u, 0x7bbcef57u, 0x89d76c54u, 0x5d1d08bfu, 0xaf768bbcu,
  0xbc267848u, 0x4e4dfb4bu, 0x20bd8edeu, 0xd2d60dddu, 0xc186fe29u, 0x33ed7d2au,
  0xe72719c1u, 0x154c9ac2u, 0x061c6936u, 0xf477ea35u, 0xaa64d611u, 0x580f5512u,
  0x4b5fa6e6u, 0xb93425e5u, 0x6dfe410eu, 0x9f95c20du, 0x8cc531f9u, 0x7eaeb2fau,
  0x30e349b1u, 0xc288cab2u, 0xd1d83946u, 0x23b3ba45u, 0xf779deaeu, 0x05125dadu,
  0x1642ae59u, 0xe4292d5au, 0xba3a117eu, 0x4851927du, 0x5b016189u, 0xa96ae28au,
  0x7da08661u, 0x8fcb0562u, 0x9c9bf696u, 0x6ef07595u, 0x417b1dbcu, 0xb3109ebfu,
  0xa0406d4bu, 0x522bee48u, 0x86e18aa3u, 0x748a09a0u, 0x67dafa54u, 0x95b17957u,
  0xcba24573u, 0x39c9c670u, 0x2a993584u, 0xd8f2b687u, 0x0c38d26cu, 0xfe53516fu,
  0xed03a29bu, 0x1f682198u, 0x5125dad3u, 0xa34e59d0u, 0xb01eaa24u, 0x42752927u,
  0x96bf4dccu, 0x64d4cecfu, 0x77843d3bu, 0x85efbe38u, 0xdbfc821cu, 0x2997011fu,
  0x3ac7f2ebu, 0xc8ac71e8u, 0x1c661503u, 0xee0d9600u, 0xfd5d65f4u, 0x0f36e6f7u,
  0x61c69362u, 0x93ad1061u, 0x80fde395u, 0x72966096u, 0xa65c047du, 0x5437877eu,
  0x4767748au, 0xb50cf789u, 0xeb1fcbadu, 0x197448aeu, 0x0a24bb5au, 0xf84f3859u,
  0x2c855cb2u, 0xdeeedfb1u, 0xcdbe2c45u, 0x3fd5af46u, 0x7198540du, 0x83f3d70eu,
  0x90a324fau, 0x62c8a7f9u, 0xb602c312u, 0x44694011u, 0x5739b3e5u, 0xa55230e6u,
  0xfb410cc2u, 0x092a8fc1u, 0x1a7a7c35u, 0xe811ff36u, 0x3cdb9bddu, 0xceb018deu,
  0xdde0eb2au, 0x2f8b6829u, 0x82f63b78u, 0x709db87bu, 0x63cd4b8fu, 0x91a6c88cu,
  0x456cac67u, 0xb7072f64u, 0xa457dc90u, 0x563c5f93u, 0x082f63b7u, 0xfa44e0b4u,
  0xe9141340u, 0x1b7f9043u, 0xcfb5f4a8u, 0x3dde77abu, 0x2e8e845fu, 0xdce5075cu,
  0x92a8fc17u, 0x60c37f14u, 0x73938ce0u, 0x81f80fe3u, 0x55326b08u, 0xa759e80bu,
  0xb4091bffu, 0x466298fcu, 0x1871a4d8u, 0xea1a27dbu, 0xf94ad42fu, 0x0b21572cu,
  0xdfeb33c7u, 0x2d80b0c4u, 0x3ed04330u, 0xccbbc033u, 0xa24bb5a6u, 0x502036a5u,
  0x4370c551u, 0xb11b4652u, 0x65d122b9u, 0x97baa1bau, 0x84ea524eu, 0x7681d14du,
  0x2892ed69u, 0xdaf96e6au, 0xc9a99d9eu, 0x3bc21e9du, 0xef087a76u, 0x1d63f975u,
  0x0e330a81u, 0xfc588982u, 0xb21572c9u, 0x407ef1cau, 0x532e023eu, 0xa145813du,
  0x758fe5d6u, 0x87e466d5u, 0x94b49521u, 0x66df1622u, 0x38cc2a06u, 0xcaa7a905u,
  0xd9f75af1u, 0x2b9cd9f2u, 0xff56bd19u, 0x0d3d3e1au, 0x1e6dcdeeu, 0xec064eedu,
  0xc38d26c4u, 0x31e6a5c7u, 0x22b65633u, 0xd0ddd530u, 0x0417b1dbu, 0xf67c32d8u,
  0xe52cc12cu, 0x1747422fu, 0x49547e0bu, 0xbb3ffd08u, 0xa86f0efcu, 0x5a048dffu,
  0x8ecee914u, 0x7ca56a17u, 0x6ff599e3u, 0x9d9e1ae0u, 0xd3d3e1abu, 0x21b862a8u,
  0x32e8915cu, 0xc083125fu, 0x144976b4u, 0xe622f5b7u, 0xf5720643u, 0x07198540u,
  0x590ab964u, 0xab613a67u, 0xb831c993u, 0x4a5a4a90u, 0x9e902e7bu, 0x6cfbad78u,
  0x7fab5e8cu, 0x8dc0dd8fu, 0xe330a81au, 0x115b2b19u, 0x020bd8edu, 0xf0605beeu,
  0x24aa3f05u, 0xd6c1bc06u, 0xc5914ff2u, 0x37faccf1u, 0x69e9f0d5u, 0x9b8273d6u,
  0x88d28022u, 0x7ab90321u, 0xae7367cau, 0x5c18e4c9u, 0x4f48173du, 0xbd23943eu,
  0xf36e6f75u, 0x0105ec76u, 0x12551f82u, 0xe03e9c81u, 0x34f4f86au, 0xc69f7b69u,
  0xd5cf889du, 0x27a40b9eu, 0x79b737bau, 0x8bdcb4b9u, 0x988c474du, 0x6ae7c44eu,
  0xbe2da0a5u, 0x4c4623a6u, 0x5f16d052u, 0xad7d5351u,
};

static uint32_t crc_sw(uint32_t c, const unsigned char *p, size_t n)
{
  while (n--)
    c = crc_table[(c ^ *p++) & 0xffu] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__) && defined(__GNUC__)
/*
 * The SSE4.2 crc32 instruction has a latency of about 3 cycles and a
 * throughput of one per cycle, so one dependent chain runs at a third of
 * the speed the unit can give. Long buffers are therefore cut into three
 * adjacent stripes of CRC_LONG (then CRC_SHORT) bytes, whose CRCs run
 * interleaved in three independent chains (the second and third start from
 * 0), and are joined afterwards: the CRC register is linear over GF(2), so
 * the register after stripes A and B is shift_|B|(reg(A)) ^ reg0(B), where
 * shift_L is the effect of L zero bytes on the register. shift_L is a 32x32
 * bit matrix; its columns (the image of each single register bit after L
 * zero bytes, computed with the table above) are the constants below.
 */
#define CRC_LONG 8192
#define CRC_SHORT 256

static const uint32_t crc_shift_long[32] = {
  0xe040e0acu, 0xc56db7a9u, 0x8f3719a3u, 0x1b8245b7u, 0x37048b6eu, 0x6e0916dcu,
  0xdc122db8u, 0xbdc82d81u, 0x7e7c2df3u, 0xfcf85be6u, 0xfc1cc13du, 0xfdd5f48bu,
  0xfe479fe7u, 0xf963493fu, 0xf72ae48fu, 0xebb9bfefu, 0xd29f092fu, 0xa0d264afu,
  0x4448bfafu, 0x88917f5eu, 0x14ce884du, 0x299d109au, 0x533a2134u, 0xa6744268u,
  0x4904f221u, 0x9209e442u, 0x21ffbe75u, 0x43ff7ceau, 0x87fef9d4u, 0x0a118559u,
  0x14230ab2u, 0x28461564u,
};
static const uint32_t crc_shift_short[32] = {
  0xdcb17aa4u, 0xbc8e83b9u, 0x7cf17183u, 0xf9e2e306u, 0xf629b0fdu, 0xe9bf170bu,
  0xd69258e7u, 0xa8c8c73fu, 0x547df88fu, 0xa8fbf11eu, 0x541b94cdu, 0xa837299au,
  0x558225c5u, 0xab044b8au, 0x53e4e1e5u, 0xa7c9c3cau, 0x4a7ff165u, 0x94ffe2cau,
  0x2c13b365u, 0x582766cau, 0xb04ecd94u, 0x6571edd9u, 0xcae3dbb2u, 0x902bc195u,
  0x25bbf5dbu, 0x4b77ebb6u, 0x96efd76cu, 0x2833d829u, 0x5067b052u, 0xa0cf60a4u,
  0x4472b7b9u, 0x88e56f72u,
};

/* The register c followed by the zero bytes whose matrix is m. */
static uint32_t crc_shift(const uint32_t m[32], uint32_t c)
{
  uint32_t r = 0;
  for (int i = 0; i < 32; i++)
    r ^= m[i] & (0u - ((c >> i) & 1u));
  return r;
}

/* Three interleaved chains over 3 stripes of `stripe` bytes each, as long as
 * n allows; returns the register, advances *pp and *np. */
__attribute__((target("sse4.2"))) static uint32_t crc_hw3(uint32_t c, const unsigned char **pp,
                                                           size_t *np, size_t stripe,
                                                           const uint32_t m[32])
{
  const unsigned char *p = *pp;
  size_t n = *np;
  while (n >= 3 * stripe) {
    uint64_t c0 = c, c1 = 0, c2 = 0;
    for (size_t i = 0; i < stripe; i += 8) {
      uint64_t v0, v1, v2;
      memcpy(&v0, p + i, 8);
      memcpy(&v1, p + stripe + i, 8);
      memcpy(&v2, p + 2 * stripe + i, 8);
      c0 = __builtin_ia32_crc32di(c0, v0);
      c1 = __builtin_ia32_crc32di(c1, v1);
      c2 = __builtin_ia32_crc32di(c2, v2);
    }
    c = crc_shift(m, crc_shift(m, (uint32_t)c0) ^ (uint32_t)c1) ^ (uint32_t)c2;
    p += 3 * stripe;
    n -= 3 * stripe;
  }
  *pp = p;
  *np = n;
  return c;
}

__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const unsigned char *p,
                                                          size_t n)
{
  while (n > 0 && ((uintptr_t)p & 7u) != 0) {
    c = __builtin_ia32_crc32qi(c, *p++);
    n--;
  }
  c = crc_hw3(c, &p, &n, CRC_LONG, crc_shift_long);
  c = crc_hw3(c, &p, &n, CRC_SHORT, crc_shift_short);
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, p, 8);
    c64 = __builtin_ia32_crc32di(c64, v);
    p += 8;
    n -= 8;
  }
  c = (uint32_t)c64;
  while (n-- > 0)
    c = __builtin_ia32_crc32qi(c, *p++);
  return c;
}
#endif

uint32_t bpc__crc32c_table(uint32_t crc, const void *data, size_t n)
{
  return ~crc_sw(~crc, data, n);
}

uint32_t bpc__crc32c(uint32_t crc, const void *data, size_t n)
{
  uint32_t c = ~crc;
  const unsigned char *p = data;
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("sse4.2"))
    return ~crc_hw(c, p, n);
#endif
  return ~crc_sw(c, p, n);
}

/* ------------------------------------------------------- little endian */

static void put32(unsigned char *p, uint32_t v)
{
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static void put64(unsigned char *p, uint64_t v)
{
  for (int i = 0; i < 8; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get32(const unsigned char *p)
{
  uint32_t v = 0;
  for (int i = 0; i < 4; i++)
    v |= (uint32_t)p[i] << (8 * i);
  return v;
}

static uint64_t get64(const unsigned char *p)
{
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v |= (uint64_t)p[i] << (8 * i);
  return v;
}

/* ------------------------------------------------------------- header */

/* Byte offsets of the header fields (doc/io.md has the table). */
enum {
  H_MAGIC = 0, H_VERSION = 8, H_HDRBYTES = 12, H_NBLOCKS = 16, H_TABLE = 24, H_META = 32,
  H_METALEN = 40, H_DATA = 48, H_DATALEN = 56, H_FILELEN = 64, H_RANKS = 72, H_HASDEC = 76,
  H_DIM = 80, H_METACRC = 84, H_DMIN = 88, H_DMAX = 136, H_DIVS = 184, H_GHOST = 208,
  H_SHARE = 232, H_WRAP = 238, H_RESERVED = 244 /* 8 bytes of zeros */
};

void bpc__io_hdr_layout(bpc__io_hdr_t *h)
{
  h->table_off = BPC__IO_HDR_BYTES;
  h->meta_off = h->table_off + BPC__IO_ENTRY_BYTES * h->nblocks;
  h->data_off = h->meta_off + h->meta_bytes;
  h->file_bytes = h->data_off + h->data_bytes;
}

void bpc__io_hdr_encode(const bpc__io_hdr_t *h, unsigned char out[BPC__IO_HDR_BYTES])
{
  memset(out, 0, BPC__IO_HDR_BYTES);
  memcpy(out + H_MAGIC, BPC__IO_MAGIC, 8);
  put32(out + H_VERSION, h->version);
  put32(out + H_HDRBYTES, BPC__IO_HDR_BYTES);
  put64(out + H_NBLOCKS, h->nblocks);
  put64(out + H_TABLE, h->table_off);
  put64(out + H_META, h->meta_off);
  put64(out + H_METALEN, h->meta_bytes);
  put64(out + H_DATA, h->data_off);
  put64(out + H_DATALEN, h->data_bytes);
  put64(out + H_FILELEN, h->file_bytes);
  put32(out + H_RANKS, h->writer_ranks);
  put32(out + H_HASDEC, h->has_decomp);
  put32(out + H_DIM, h->dim);
  put32(out + H_METACRC, h->meta_crc);
  for (int d = 0; d < BPC_MAX_DIM; d++) {
    put64(out + H_DMIN + 8 * d, (uint64_t)h->dmin[d]);
    put64(out + H_DMAX + 8 * d, (uint64_t)h->dmax[d]);
    put32(out + H_DIVS + 4 * d, h->divs[d]);
    put32(out + H_GHOST + 4 * d, h->ghost[d]);
    out[H_SHARE + d] = h->share_face[d];
    out[H_WRAP + d] = h->wrap[d];
  }
  put32(out + BPC__IO_HDR_CRC_AT, bpc__crc32c(0, out, BPC__IO_HDR_CRC_AT));
}

#define BAD(...) bpc__err(ctx, BPC_EFORMAT, __VA_ARGS__)

/* The decomposition fields: either none (all zero) or a valid one. */
static int check_decomp(bpc_ctx_t *ctx, const char *path, const bpc__io_hdr_t *h)
{
  const int nd = h->has_decomp ? (int)h->dim : 0;
  if (h->has_decomp && (h->dim < 1 || h->dim > BPC_MAX_DIM))
    return BAD("'%s': decomposition dimension %u is outside 1..%d", path, h->dim, BPC_MAX_DIM);
  if (!h->has_decomp && h->dim != 0)
    return BAD("'%s': no decomposition but dimension %u", path, h->dim);
  uint64_t prod = 1;
  for (int d = 0; d < BPC_MAX_DIM; d++) {
    if (d >= nd) {
      if (h->dmin[d] != 0 || h->dmax[d] != 0 || h->divs[d] != 0 || h->ghost[d] != 0 ||
          h->share_face[d] != 0 || h->wrap[d] != 0)
        return BAD("'%s': decomposition fields of unused dimension %d are not zero", path, d);
      continue;
    }
    if (h->dmin[d] >= h->dmax[d])
      return BAD("'%s': empty domain [%lld, %lld) in dimension %d", path, (long long)h->dmin[d],
                 (long long)h->dmax[d], d);
    if (h->divs[d] < 1 || h->divs[d] > (uint64_t)h->dmax[d] - (uint64_t)h->dmin[d] ||
        h->ghost[d] > INT_MAX || h->share_face[d] > 1 || h->wrap[d] > 1)
      return BAD("'%s': decomposition fields of dimension %d are out of range", path, d);
    prod *= h->divs[d];
    if (prod > h->nblocks)
      break;
  }
  if (h->has_decomp && prod != h->nblocks)
    return BAD("'%s': divisions multiply to %llu but the block count is %llu", path,
               (unsigned long long)prod, (unsigned long long)h->nblocks);
  return BPC_OK;
}

int bpc__io_hdr_decode(bpc_ctx_t *ctx, const char *path, const unsigned char *in, size_t have,
                       uint64_t file_size, bpc__io_hdr_t *h)
{
  memset(h, 0, sizeof *h);
  if (have < 8 || memcmp(in, BPC__IO_MAGIC, 8) != 0)
    return BAD("'%s' is not a bpc checkpoint (%s)", path,
               have < 8 ? "shorter than the 8-byte magic" : "the magic \"BPC-CKPT\" is missing");
  if (have < BPC__IO_HDR_BYTES)
    return BAD("'%s' is truncated: %zu bytes, shorter than the %d-byte header", path, have,
               BPC__IO_HDR_BYTES);
  h->version = get32(in + H_VERSION);
  if (h->version != BPC_IO_VERSION)
    return BAD("'%s' has checkpoint format version %u; this library reads version %d", path,
               h->version, BPC_IO_VERSION);
  const uint32_t stored = get32(in + BPC__IO_HDR_CRC_AT);
  const uint32_t computed = bpc__crc32c(0, in, BPC__IO_HDR_CRC_AT);
  if (stored != computed)
    return BAD("'%s': header checksum mismatch (stored 0x%08x, computed 0x%08x): the header is "
               "corrupted", path, stored, computed);
  h->nblocks = get64(in + H_NBLOCKS);
  h->table_off = get64(in + H_TABLE);
  h->meta_off = get64(in + H_META);
  h->meta_bytes = get64(in + H_METALEN);
  h->data_off = get64(in + H_DATA);
  h->data_bytes = get64(in + H_DATALEN);
  h->file_bytes = get64(in + H_FILELEN);
  h->writer_ranks = get32(in + H_RANKS);
  h->has_decomp = get32(in + H_HASDEC);
  h->dim = get32(in + H_DIM);
  h->meta_crc = get32(in + H_METACRC);
  for (int d = 0; d < BPC_MAX_DIM; d++) {
    h->dmin[d] = (int64_t)get64(in + H_DMIN + 8 * d);
    h->dmax[d] = (int64_t)get64(in + H_DMAX + 8 * d);
    h->divs[d] = get32(in + H_DIVS + 4 * d);
    h->ghost[d] = get32(in + H_GHOST + 4 * d);
    h->share_face[d] = in[H_SHARE + d];
    h->wrap[d] = in[H_WRAP + d];
  }
  if (get32(in + H_HDRBYTES) != BPC__IO_HDR_BYTES || get64(in + H_RESERVED) != 0)
    return BAD("'%s': header size or reserved fields are wrong", path);
  if (h->nblocks < 1 || h->nblocks > INT_MAX)
    return BAD("'%s': block count %llu is outside 1..%d", path, (unsigned long long)h->nblocks,
               INT_MAX);
  if (h->writer_ranks < 1 || h->has_decomp > 1)
    return BAD("'%s': writer process count %u or decomposition flag %u is out of range", path,
               h->writer_ranks, h->has_decomp);
  /* the layout follows from the counts (no overflow: nblocks < 2^31) */
  bpc__io_hdr_t L = *h;
  if (h->meta_bytes > UINT64_MAX / 2 || h->data_bytes > UINT64_MAX / 2)
    return BAD("'%s': metadata or data size is out of range", path);
  bpc__io_hdr_layout(&L);
  if (L.table_off != h->table_off || L.meta_off != h->meta_off || L.data_off != h->data_off ||
      L.file_bytes != h->file_bytes)
    return BAD("'%s': the section offsets do not match the block count and sizes", path);
  int rc = check_decomp(ctx, path, h);
  if (rc != BPC_OK)
    return rc;
  if (file_size < h->file_bytes)
    return BAD("'%s' is truncated: %llu bytes, but its header says %llu", path,
               (unsigned long long)file_size, (unsigned long long)h->file_bytes);
  if (file_size > h->file_bytes)
    return BAD("'%s' is %llu bytes, longer than the %llu its header says", path,
               (unsigned long long)file_size, (unsigned long long)h->file_bytes);
  return BPC_OK;
}

void bpc__io_hdr_info(const bpc__io_hdr_t *h, bpc_io_info_t *info)
{
  memset(info, 0, sizeof *info);
  info->version = (int)h->version;
  info->nblocks = (int)h->nblocks;
  info->writer_ranks = (int)h->writer_ranks;
  info->has_decomp = (int)h->has_decomp;
  info->params = bpc_decomp_params_default();
  info->params.nblocks = (int)h->nblocks;
  if (h->has_decomp) {
    info->params.dim = (int)h->dim;
    for (int d = 0; d < (int)h->dim; d++) {
      info->params.domain_min[d] = h->dmin[d];
      info->params.domain_max[d] = h->dmax[d];
      info->params.divs[d] = (int)h->divs[d];
      info->params.ghost[d] = (int)h->ghost[d];
      info->params.share_face[d] = h->share_face[d];
      info->params.wrap[d] = h->wrap[d];
    }
  }
  info->params.assign = BPC_ASSIGN_CONTIGUOUS;
  info->params.map = NULL;
  info->file_bytes = h->file_bytes;
  info->data_bytes = h->data_bytes;
  info->meta_bytes = h->meta_bytes;
}

/* -------------------------------------------------------- table entries */

static uint32_t entry_crc(uint64_t gid, const unsigned char *e)
{
  unsigned char g[8];
  put64(g, gid);
  return bpc__crc32c(bpc__crc32c(0, g, 8), e, 20);
}

void bpc__io_entry_encode(uint64_t gid, uint64_t off, uint64_t size, uint32_t crc,
                          unsigned char out[BPC__IO_ENTRY_BYTES])
{
  put64(out, off);
  put64(out + 8, size);
  put32(out + 16, crc);
  put32(out + 20, entry_crc(gid, out));
}

int bpc__io_entry_decode(bpc_ctx_t *ctx, const char *path, const bpc__io_hdr_t *h, uint64_t gid,
                         const unsigned char in[BPC__IO_ENTRY_BYTES], uint64_t *off,
                         uint64_t *size, uint32_t *crc)
{
  if (get32(in + 20) != entry_crc(gid, in))
    return BAD("'%s': the table entry of block %llu is corrupted (checksum mismatch)", path,
               (unsigned long long)gid);
  *off = get64(in);
  *size = get64(in + 8);
  *crc = get32(in + 16);
  if (*off < h->data_off || *off > h->file_bytes || *size > h->file_bytes - *off)
    return BAD("'%s': block %llu lies at [%llu, +%llu), outside the data section [%llu, %llu)",
               path, (unsigned long long)gid, (unsigned long long)*off,
               (unsigned long long)*size, (unsigned long long)h->data_off,
               (unsigned long long)h->file_bytes);
  if (*size > SIZE_MAX)
    return BAD("'%s': block %llu of %llu bytes does not fit in memory", path,
               (unsigned long long)gid, (unsigned long long)*size);
  return BPC_OK;
}
