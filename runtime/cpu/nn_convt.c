/* CPU kernels: ConvTranspose and Col2Im, both built on col2im: a transposed
 * convolution is one GEMM per image and group (W^T x) whose columns are then
 * scattered back onto the output image. */
#include "nn_util.h"
#include <limits.h>
#include <omp.h>
#include <string.h>

typedef struct convt_job {
    lt_nn_geom g; /* grid: the input's spatial dims; img: the output's */
    size_t esz;
    int64_t n, c, m, groups;
    const void *x, *w, *b;
    void *y;
} convt_job;

/* output channels m0..m1 of one task's block: the bias or zero */
static void init_out(const convt_job *j, char *yt, const char *bias, int64_t m0, int64_t m1, int64_t plane)
{
    for (int64_t r = m0; r < m1; r++) {
        if (!bias) {
            memset(yt + (size_t)(r * plane) * j->esz, 0, (size_t)plane * j->esz);
        } else if (j->esz == 4) {
            float v = ((const float *)bias)[r], *row = (float *)yt + r * plane;
            for (int64_t q = 0; q < plane; q++)
                row[q] = v;
        } else {
            double v = ((const double *)bias)[r], *row = (double *)yt + r * plane;
            for (int64_t q = 0; q < plane; q++)
                row[q] = v;
        }
    }
}

/* column buffers stay below this many bytes per thread */
#define TILE_BYTES ((int64_t)2 << 20)

static lt_status convt_run(lt_kctx *k, const convt_job *j)
{
    const lt_nn_geom *g = &j->g;
    size_t esz = j->esz;
    int nsp = g->nsp;
    int64_t cg = j->c / j->groups, mg = j->m / j->groups;
    int64_t K = lt_nn_prod(nsp, g->k), lin = lt_nn_prod(nsp, g->grid), plane = lt_nn_prod(nsp, g->img), R;
    int64_t tasks = j->n * j->groups;
    if (K < 0 || lin < 0 || plane < 0 || !lt_nn_mul(mg, K, &R) || R > INT_MAX || lin > INT_MAX || cg > INT_MAX)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "transposed convolution too large for one GEMM");
    if (tasks == 0 || plane == 0 || mg == 0)
        return LT_OK;
    int nth = omp_get_max_threads();
    double work = 2.0 * (double)tasks * (double)R * (double)lin * (double)(cg ? cg : 1);
    bool parallel = work >= 8.0 * LT_NN_PAR_MIN && nth > 1;
    /* enough images x groups for every thread: one task per thread at a
     * time; else the threads share each task */
    bool per_task = !parallel || tasks >= nth;
    int64_t tile = R ? TILE_BYTES / (R * (int64_t)esz) : lin;
    tile = tile < 64 ? 64 : tile / 16 * 16;
    tile = tile > lin ? lin : tile;
    int nbuf = per_task && parallel ? nth : 1;
    int64_t bytes;
    char *scratch;
    if (!lt_nn_mul(R * tile, (int64_t)esz * nbuf, &bytes) || !(scratch = lt_k_scratch(k, (size_t)(bytes ? bytes : 1))))
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory (column buffer of %lld x %lld)", (long long)R,
                         (long long)tile);
    const char *x = j->x, *w = j->w, *b = j->b;
    char *y = j->y;
    if (per_task) {
#pragma omp parallel for schedule(dynamic, 1) if (parallel)
        for (int64_t t = 0; t < tasks; t++) {
            int64_t n = t / j->groups, gi = t % j->groups;
            char *col = scratch + (size_t)(R * tile) * esz * (size_t)omp_get_thread_num();
            char *yt = y + (size_t)((n * j->m + gi * mg) * plane) * esz;
            const char *xt = x + (size_t)((n * j->c + gi * cg) * lin) * esz;
            init_out(j, yt, b ? b + (size_t)(gi * mg) * esz : NULL, 0, mg, plane);
            for (int64_t c0 = 0; c0 < lin; c0 += tile) {
                int64_t c1 = c0 + tile < lin ? c0 + tile : lin;
                lt_nn_gemm(esz, true, R, c1 - c0, cg, w + (size_t)(gi * cg * R) * esz, R, xt + (size_t)c0 * esz, lin,
                           false, col, c1 - c0);
                lt_nn_col2im(col, yt, esz, g, 0, mg, c0, c1);
            }
        }
        return LT_OK;
    }
    for (int64_t t = 0; t < tasks; t++) {
        int64_t n = t / j->groups, gi = t % j->groups;
        char *yt = y + (size_t)((n * j->m + gi * mg) * plane) * esz;
        const char *xt = x + (size_t)((n * j->c + gi * cg) * lin) * esz, *wt = w + (size_t)(gi * cg * R) * esz;
        const char *bt = b ? b + (size_t)(gi * mg) * esz : NULL;
#pragma omp parallel
        {
            int tid = omp_get_thread_num(), nt = omp_get_num_threads();
            int64_t m0 = mg * tid / nt, m1 = mg * (tid + 1) / nt;
            init_out(j, yt, bt, m0, m1, plane);
            for (int64_t c0 = 0; c0 < lin; c0 += tile) {
                int64_t c1 = c0 + tile < lin ? c0 + tile : lin, tw = c1 - c0;
                /* the tile's GEMM split by columns, its scatter by channels */
                int64_t blk = ((tw + nt - 1) / nt + 15) / 16 * 16;
                int64_t j0 = blk * tid, j1 = j0 + blk < tw ? j0 + blk : tw;
                if (j0 < j1)
                    lt_nn_gemm(esz, true, R, j1 - j0, cg, wt, R, xt + (size_t)(c0 + j0) * esz, lin, false,
                               scratch + (size_t)j0 * esz, tw);
#pragma omp barrier
                lt_nn_col2im(scratch, yt, esz, g, m0, m1, c0, c1);
#pragma omp barrier
            }
        }
    }
    return LT_OK;
}

static lt_status k_conv_transpose(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *w = lt_k_in(k, 1), *b = lt_k_in(k, 2);
    if (!x || !w)
        return lt_k_fail(k, LT_ERR_INVALID, "needs an input and weights");
    if (w->dtype != x->dtype || !lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of type %s with weights of type %s (float types expected)",
                         lt_dtype_name(x->dtype), lt_dtype_name(w->dtype));
    if (x->rank < 3 || x->rank > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d (needs N, C and at least one spatial axis)", x->rank);
    if (w->rank != x->rank)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d with weights of rank %d", x->rank, w->rank);
    convt_job j = {0};
    j.groups = lt_attr_int(k->node, "group", 1);
    if (j.groups < 1)
        return lt_k_fail(k, LT_ERR_INVALID, "group %lld", (long long)j.groups);
    j.n = x->dims[0];
    j.c = x->dims[1];
    if (w->dims[0] != j.c || j.c % j.groups)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input has %lld channels, weights %lld, group %lld", (long long)j.c,
                         (long long)w->dims[0], (long long)j.groups);
    if (!lt_nn_mul(w->dims[1], j.groups, &j.m))
        return lt_k_fail(k, LT_ERR_RUNTIME, "too many output channels");
    if (b && (b->rank != 1 || b->dims[0] != j.m || b->dtype != x->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "bias must be 1-D of %lld values of type %s", (long long)j.m,
                         lt_dtype_name(x->dtype));
    int nsp = x->rank - 2;
    int64_t kernel[LT_MAX_RANK];
    lt_status s = lt_nn_kernel(k, nsp, w->dims + 2, kernel);
    if (s != LT_OK)
        return s;
    char why[256];
    if (!lt_nn_window_transpose(k->node, nsp, x->dims + 2, kernel, &j.g, why, sizeof why))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s", why);
    int64_t dims[LT_MAX_RANK] = {j.n, j.m};
    for (int i = 0; i < nsp; i++)
        dims[i + 2] = j.g.img[i];
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, dims, &y)) != LT_OK || y->numel == 0)
        return s;
    if (x->dtype == LT_F32 || x->dtype == LT_F64) {
        j.esz = x->dtype == LT_F32 ? 4 : 8;
        j.x = x->data;
        j.w = w->data;
        j.b = b ? b->data : NULL;
        j.y = y->data;
        return convt_run(k, &j);
    }
    j.esz = 4;
    j.x = lt_nn_f32_of(k, x);
    j.w = lt_nn_f32_of(k, w);
    j.b = b ? lt_nn_f32_of(k, b) : NULL;
    float *yf = lt_k_scratch(k, sizeof(float) * (size_t)y->numel);
    if (!j.x || !j.w || (b && !j.b))
        return LT_ERR_NOMEM;
    if (!yf)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    j.y = yf;
    if ((s = convt_run(k, &j)) == LT_OK)
        lt_nn_store_f32(y, yf);
    return s;
}

/* a 1-D integer input of 1..LT_MAX_RANK-2 values */
static lt_status shape_input(lt_kctx *k, int i, const char *what, int64_t *v, int *n)
{
    const lt_tensor *t = lt_k_in(k, i);
    if (!t || !lt_dtype_is_int(t->dtype) || t->rank != 1 || t->numel < 1 || t->numel > LT_MAX_RANK - 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s must be a 1-D integer tensor of 1 to %d values", what,
                         LT_MAX_RANK - 2);
    *n = (int)t->numel;
    for (int j = 0; j < *n; j++)
        v[j] = lt_tensor_get_i64(t, j);
    return LT_OK;
}

lt_status lt_nn_col2im_plan_of(lt_kctx *k, const lt_tensor *x, int first, lt_nn_col2im_plan *p)
{
    int64_t blk[LT_MAX_RANK];
    int nb = 0;
    lt_status s;
    if ((s = shape_input(k, first, "image_shape", p->img, &p->ni)) != LT_OK ||
        (s = shape_input(k, first + 1, "block_shape", blk, &nb)) != LT_OK)
        return s;
    int ni = p->ni;
    if (ni != nb)
        return lt_k_fail(k, LT_ERR_RUNTIME, "image_shape has %d values, block_shape %d", ni, nb);
    if (x->rank != 3)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d (expected 3: N, C x block, L)", x->rank);
    for (int i = 0; i < ni; i++)
        if (p->img[i] < 0 || p->img[i] > ((int64_t)1 << 40))
            return lt_k_fail(k, LT_ERR_RUNTIME, "image size %lld", (long long)p->img[i]);
    char why[256];
    if (!lt_nn_window(k->node, ni, p->img, blk, false, &p->g, why, sizeof why))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s", why);
    p->K = lt_nn_prod(ni, blk);
    p->L = lt_nn_prod(ni, p->g.grid);
    p->plane = lt_nn_prod(ni, p->img);
    if (p->K <= 0 || p->L < 0 || p->plane < 0 || x->dims[1] % p->K || x->dims[2] != p->L)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input [%lld, %lld, %lld] does not hold blocks of %lld over %lld positions",
                         (long long)x->dims[0], (long long)x->dims[1], (long long)x->dims[2], (long long)p->K,
                         (long long)p->L);
    p->n = x->dims[0];
    p->c = x->dims[1] / p->K;
    return LT_OK;
}

static lt_status k_col2im(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    lt_status s;
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "needs an input");
    lt_nn_col2im_plan pl;
    if ((s = lt_nn_col2im_plan_of(k, x, 1, &pl)) != LT_OK)
        return s;
    int64_t n = pl.n, c = pl.c, K = pl.K, L = pl.L, dims[LT_MAX_RANK] = {n, c};
    for (int i = 0; i < pl.ni; i++)
        dims[i + 2] = pl.img[i];
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, pl.ni + 2, dims, &y)) != LT_OK || y->numel == 0)
        return s;
    size_t esz = x->dtype == LT_F32 ? 4 : 8;
    const void *src = x->data;
    void *dst = y->data;
    if (x->dtype != LT_F32 && x->dtype != LT_F64) {
        src = lt_nn_f64_of(k, x);
        dst = lt_k_scratch(k, sizeof(double) * (size_t)y->numel);
        if (!src)
            return LT_ERR_NOMEM;
        if (!dst)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    memset(dst, 0, esz * (size_t)y->numel);
    int64_t plane = pl.plane;
#pragma omp parallel for schedule(static) if (x->numel >= LT_NN_PAR_MIN)
    for (int64_t t = 0; t < n * c; t++) {
        int64_t i = t / c, ch = t % c;
        lt_nn_col2im((const char *)src + (size_t)(i * c * K * L) * esz, (char *)dst + (size_t)(i * c * plane) * esz,
                     esz, &pl.g, ch, ch + 1, 0, L);
    }
    if (dst != y->data)
        lt_nn_store_f64(y, dst);
    return LT_OK;
}

void lt_nn_register_convt(lt_kernel_fn *tab)
{
    tab[LT_OP_CONV_TRANSPOSE] = k_conv_transpose;
    tab[LT_OP_COL2_IM] = k_col2im;
}
