/* BatchNormalization in training mode on float32, forward and gradient, in
 * blocks of whole channels (norm_batch_tmpl.h): each block's statistics,
 * output and gradient are computed while the block is in cache, and the
 * passes run down the [n, c * s] columns, so small spatial sizes (a 1x1 or
 * 2x2 feature map) vectorise as well as large ones. Statistics are
 * accumulated in double. Blocks are taken in turn by the threads (a thread
 * that wakes late or loses its core leaves its blocks to the other); the
 * results do not depend on the blocks nor the thread count. AVX-512 machines get an
 * instance compiled for it. */
#include "norm_util.h"
#include "cpu_features.h"
#include <math.h>
#include <omp.h>

/* Channels of more elements than this each take the general kernels. */
#define NB_MAX_S 16384
/* About this many elements of x a block (n * k * s), so that a block's x and
 * dy stay in cache across the passes; at most 64 channels a block. */
#define NB_BLOCK 65536
#define NB_MAX_K 64

/* No fused multiply-adds: a block's vector body and its scalar tail then
 * round alike, so where a column falls (which depends on the blocks, so on
 * the thread count) does not change its bits. */
#pragma GCC optimize("fp-contract=off")

#define ISA generic
#define ISA_ATTR
#include "norm_batch_tmpl.h"
#undef ISA
#undef ISA_ATTR

#if defined(__x86_64__) && defined(__GNUC__)
#define ISA avx512
#define ISA_ATTR __attribute__((target("avx512f,prefer-vector-width=512")))
#include "norm_batch_tmpl.h"
#undef ISA
#undef ISA_ATTR

static bool have_avx512(void) { return lt_cpu_avx512(); }
#else
static bool have_avx512(void) { return false; }
#define bn_fwd_block_avx512 bn_fwd_block_generic
#define bn_grad_block_avx512 bn_grad_block_generic
#endif

bool lt_nu_bn_fits(int64_t n, int64_t c, int64_t s) { return n > 0 && c > 0 && s > 0 && s <= NB_MAX_S; }

/* channels a block: about NB_BLOCK elements, and four blocks or more for
 * every thread to take */
static int64_t block_channels(int64_t n, int64_t c, int64_t s, int nth)
{
    int64_t k = NB_BLOCK / n / s;
    int64_t share = (c + 4 * nth - 1) / (4 * nth);
    k = k < share ? k : share;
    k = k < NB_MAX_K ? k : NB_MAX_K;
    return k < 1 ? 1 : k;
}

/* per-thread scratch: 6 * len doubles (the gradient's 4 double and 4 float
 * arrays of len) */
static double *thread_scratch(lt_kctx *k, int64_t len, int nth) { return lt_nu_scratch(k, 6 * len * nth, sizeof(double)); }

lt_status lt_nu_bn_train_fwd_f32(lt_kctx *k, const float *x, float *y, int64_t n, int64_t c, int64_t s,
                                 const double *g, const double *b, double eps, double *bm, double *bv)
{
    int nth = omp_get_max_threads();
    int64_t kc = block_channels(n, c, s, nth), nblk = (c + kc - 1) / kc, plane = c * s;
    double *w = thread_scratch(k, kc * s, nth);
    if (!w)
        return LT_ERR_NOMEM;
    bool wide = have_avx512();
#pragma omp parallel for schedule(dynamic, 1) if (nblk > 1 && n * c * s > LT_NU_PAR)
    for (int64_t q = 0; q < nblk; q++) {
        int64_t j = q * kc, kb = c - j < kc ? c - j : kc;
        double *tw = w + 6 * kc * s * omp_get_thread_num();
        if (wide)
            bn_fwd_block_avx512(x + j * s, y + j * s, n, plane, kb, s, g + j, b + j, eps, bm + j, bv + j, tw);
        else
            bn_fwd_block_generic(x + j * s, y + j * s, n, plane, kb, s, g + j, b + j, eps, bm + j, bv + j, tw);
    }
    return LT_OK;
}

lt_status lt_nu_bn_train_grad_f32(lt_kctx *k, const float *x, const float *dy, float *dx, int64_t n, int64_t c,
                                  int64_t s, const double *g, double eps, double *ds, double *db)
{
    int nth = omp_get_max_threads();
    int64_t kc = block_channels(n, c, s, nth), nblk = (c + kc - 1) / kc, plane = c * s;
    double *w = thread_scratch(k, kc * s, nth);
    if (!w)
        return LT_ERR_NOMEM;
    bool wide = have_avx512();
#pragma omp parallel for schedule(dynamic, 1) if (nblk > 1 && n * c * s > LT_NU_PAR)
    for (int64_t q = 0; q < nblk; q++) {
        int64_t j = q * kc, kb = c - j < kc ? c - j : kc;
        double *tw = w + 6 * kc * s * omp_get_thread_num();
        float *o = dx ? dx + j * s : NULL;
        if (wide)
            bn_grad_block_avx512(x + j * s, dy + j * s, o, n, plane, kb, s, g + j, eps, ds + j, db + j, tw);
        else
            bn_grad_block_generic(x + j * s, dy + j * s, o, n, plane, kb, s, g + j, eps, ds + j, db + j, tw);
    }
    return LT_OK;
}
