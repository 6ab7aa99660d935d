/* Depthwise convolution (nn_conv_depthwise.h): every output channel reads
 * one input channel (group = C, M = C * mult), as MobileNet, EfficientNet
 * and ConvNeXt write their spatial filters. Through the im2col + GEMM core
 * each (image, group) would be a product of one row, a call per plane that
 * costs more than its arithmetic; here each plane is swept directly.
 *
 * Two sweeps. Small planes (at most CL_MAX_PLANE positions in and out,
 * float32, mult 1, at most CL_MAX_TAPS taps), as in the late stages of a
 * mobile network where a plane is 8x8 down to 1x1 over hundreds of
 * channels, go channels-last (nn_conv_depthwise_cl_tmpl.h): blocks of
 * channels turned into rows of a position's values, the window swept once
 * for the block, compiled for AVX-512 and AVX2 as well. Larger planes go
 * row by row (nn_conv_depthwise_tmpl.h). The filter gradient of a channel
 * is a sum over the batch, taken in image order into double sums. Every
 * output element is computed by one task in a fixed order, so the bits do
 * not depend on the thread count. */
#include "nn_conv_depthwise.h"
#include "cpu_features.h"
#include "par.h"
#include "thread_buf.h"
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* the widest kernel row the row sweep takes */
#define MAX_KW 256
/* the channels-last sweep: planes, taps and channel blocks it takes */
#define CL_MAX_PLANE 1024
#define CL_MAX_TAPS 64
#define CL_MAX_BS 64

/* The 2-D view of a 1-D or 2-D window (rows of height 1 for 1-D), and for
 * each tap column kx the grid columns [lo, hi) whose image column
 * ox*sw - pw + kx*dw lies in [0, iw). */
typedef struct {
    int64_t ih, iw, oh, ow, kh, kw, sh, sw, dh, dw, ph, pw;
    int64_t lo[MAX_KW], hi[MAX_KW];
} dw_geom;

static void view(const lt_nn_geom *g, dw_geom *v)
{
    if (g->nsp == 1) {
        v->ih = 1, v->iw = g->img[0], v->oh = 1, v->ow = g->grid[0], v->kh = 1, v->kw = g->k[0];
        v->sh = 1, v->sw = g->s[0], v->dh = 1, v->dw = g->d[0], v->ph = 0, v->pw = g->pb[0];
    } else {
        v->ih = g->img[0], v->iw = g->img[1], v->oh = g->grid[0], v->ow = g->grid[1], v->kh = g->k[0];
        v->kw = g->k[1], v->sh = g->s[0], v->sw = g->s[1], v->dh = g->d[0], v->dw = g->d[1], v->ph = g->pb[0];
        v->pw = g->pb[1];
    }
    for (int64_t kx = 0; kx < v->kw; kx++) {
        int64_t off = kx * v->dw - v->pw; /* image column of grid column 0 */
        int64_t a = off >= 0 ? 0 : (-off + v->sw - 1) / v->sw;
        int64_t b = v->iw - off <= 0 ? 0 : (v->iw - off - 1) / v->sw + 1;
        v->lo[kx] = a;
        v->hi[kx] = b < v->ow ? (b > a ? b : a) : (v->ow > a ? v->ow : a);
    }
}

bool lt_nn_depthwise_usable(const lt_nn_geom *g, int64_t groups, int64_t c, int64_t m)
{
    int64_t taps = g->nsp == 1 ? g->k[0] : g->k[0] * g->k[1], kw = g->k[g->nsp - 1];
    return (g->nsp == 1 || g->nsp == 2) && groups > 1 && groups == c && m % c == 0 && taps >= 1 &&
           taps <= LT_NN_DW_MAX_TAPS && kw <= MAX_KW;
}

#define T float
#define SFX f32
#include "nn_conv_depthwise_tmpl.h"
#undef SFX
#undef T
#define T double
#define SFX f64
#include "nn_conv_depthwise_tmpl.h"
#undef SFX
#undef T

/* the operands of a channels-last call */
typedef struct {
    const dw_geom *v;
    const float *x, *w, *b, *dy;
    float *y, *dx, *dw;
    int64_t n, c, bs;
} cl_args;

/* one task of a kernel: forward and data gradient take (image, channel
 * block) items, the filter gradient channel blocks */
typedef void (*cl_task)(const cl_args *a, int64_t item, float *buf);
enum { CL_FWD, CL_BACK, CL_FILTER };

#define ATTR
#define SFX base
#include "nn_conv_depthwise_cl_tmpl.h"
#undef SFX
#undef ATTR
#if defined(__x86_64__) && defined(__GNUC__)
#define HAVE_TIERS 1
#define ATTR __attribute__((target("avx2,fma")))
#define SFX avx2
#include "nn_conv_depthwise_cl_tmpl.h"
#undef SFX
#undef ATTR
#define ATTR __attribute__((target("avx512f,avx2,fma,prefer-vector-width=512")))
#define SFX avx512
#include "nn_conv_depthwise_cl_tmpl.h"
#undef SFX
#undef ATTR
#endif

/* the widest tier this CPU runs (cpu_features.h) */
static const cl_task *cl_tier(void)
{
#ifdef HAVE_TIERS
    if (lt_cpu_avx512())
        return cl_tasks_avx512;
    if (lt_cpu_avx2())
        return cl_tasks_avx2;
#endif
    return cl_tasks_base;
}

static bool channels_last(size_t esz, const dw_geom *v, int64_t c, int64_t m)
{
    return esz == 4 && m == c && v->ih * v->iw <= CL_MAX_PLANE && v->oh * v->ow <= CL_MAX_PLANE &&
           v->kh * v->kw <= CL_MAX_TAPS;
}

/* channels a block: 64, or 16 where that leaves too few blocks to share */
static int64_t block_of(int64_t c) { return c >= 4 * CL_MAX_BS ? CL_MAX_BS : 16; }

/* the calling thread's channels-last buffer: the block's input and output
 * planes, taken at the largest size at once (512 KB), so that no later
 * layer's call grows it in a step */
static float *cl_buf(void)
{
    return lt_thread_buf(LT_THREAD_BUF_DEPTHWISE, sizeof(float) * (size_t)(2 * CL_MAX_PLANE * CL_MAX_BS));
}

/* work worth a second thread: multiply-adds against the par.h threshold */
static int threads_for(int64_t items, double madds) { return lt_par_threads(items, madds >= 2.0 * LT_PAR_ELEMS); }

static double madds(const dw_geom *v, int64_t n, int64_t m)
{
    return (double)n * (double)m * (double)(v->oh * v->ow) * (double)(v->kh * v->kw);
}

/* Runs a channels-last kernel over its items; false (nothing written)
 * when a thread's buffer cannot be had: the row sweep runs instead. */
static bool run_cl(cl_args *a, int kind, double work)
{
    a->bs = block_of(a->c);
    int64_t nblk = (a->c + a->bs - 1) / a->bs, items = kind == CL_FILTER ? nblk : a->n * nblk;
    cl_task task = cl_tier()[kind];
    int nt = threads_for(items, work);
    bool failed = false;
#pragma omp parallel num_threads(nt) if (nt > 1) reduction(|| : failed)
    {
        float *buf = cl_buf();
        failed = !buf;
#pragma omp for schedule(dynamic, kind == CL_FILTER ? 1 : lt_par_chunk(items))
        for (int64_t it = 0; it < items; it++)
            if (buf)
                task(a, it, buf);
    }
    return !failed;
}

void lt_nn_depthwise_fwd(size_t esz, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const void *x,
                         const void *w, const void *b, void *y)
{
    dw_geom v;
    view(g, &v);
    if (channels_last(esz, &v, c, m)) {
        cl_args a = {.v = &v, .x = x, .w = w, .b = b, .y = y, .n = n, .c = c};
        if (run_cl(&a, CL_FWD, madds(&v, n, m)))
            return;
    }
    int64_t items = n * m;
    int nt = threads_for(items, madds(&v, n, m));
#pragma omp parallel for schedule(dynamic, lt_par_chunk(items)) num_threads(nt) if (nt > 1)
    for (int64_t it = 0; it < items; it++) {
        if (esz == 4)
            fwd_task_f32(&v, x, w, b, y, it, c, m);
        else
            fwd_task_f64(&v, x, w, b, y, it, c, m);
    }
}

void lt_nn_depthwise_grad_data(size_t esz, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const void *dy,
                               const void *w, void *dx)
{
    dw_geom v;
    view(g, &v);
    if (channels_last(esz, &v, c, m)) {
        cl_args a = {.v = &v, .w = w, .dy = dy, .dx = dx, .n = n, .c = c};
        if (run_cl(&a, CL_BACK, madds(&v, n, m)))
            return;
    }
    int64_t items = n * c;
    int nt = threads_for(items, madds(&v, n, m));
#pragma omp parallel for schedule(dynamic, lt_par_chunk(items)) num_threads(nt) if (nt > 1)
    for (int64_t it = 0; it < items; it++) {
        if (esz == 4)
            back_task_f32(&v, dy, w, dx, it, c, m);
        else
            back_task_f64(&v, dy, w, dx, it, c, m);
    }
}

void lt_nn_depthwise_grad_filter(size_t esz, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const void *dy,
                                 const void *x, void *dw)
{
    dw_geom v;
    view(g, &v);
    if (channels_last(esz, &v, c, m)) {
        cl_args a = {.v = &v, .x = x, .dy = dy, .dw = dw, .n = n, .c = c};
        if (run_cl(&a, CL_FILTER, madds(&v, n, m)))
            return;
    }
    int nt = threads_for(m, madds(&v, n, m));
#pragma omp parallel for schedule(dynamic, 1) num_threads(nt) if (nt > 1)
    for (int64_t o = 0; o < m; o++) {
        if (esz == 4)
            filter_task_f32(&v, dy, x, dw, o, n, c, m);
        else
            filter_task_f64(&v, dy, x, dw, o, n, c, m);
    }
}
