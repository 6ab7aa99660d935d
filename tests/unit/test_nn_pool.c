/* MaxPool, AveragePool, LpPool, the global pools, MaxUnpool, MaxRoiPool and
 * RoiAlign against direct loops in double or hand-derived values. */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pcfg {
    int nsp;
    int64_t n, c;
    int64_t img[3], k[3], s[3], d[3], pads[6];
    const char *auto_pad;
    bool ceil_mode, count_pad;
    lt_dtype dt;
} pcfg;

static int64_t prod(int n, const int64_t *v)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= v[i];
    return p;
}

static void unflat(int n, const int64_t *dims, int64_t i, int64_t *coord)
{
    for (int d = n - 1; d >= 0; d--) {
        coord[d] = i % dims[d];
        i /= dims[d];
    }
}

static void pool_out(const pcfg *f, int64_t *out, int64_t *pb, int64_t *pe)
{
    for (int i = 0; i < f->nsp; i++) {
        int64_t dk = (f->k[i] - 1) * f->d[i] + 1;
        if (f->auto_pad && !strcmp(f->auto_pad, "VALID")) {
            out[i] = (f->img[i] - dk) / f->s[i] + 1;
            pb[i] = pe[i] = 0;
            continue;
        }
        if (f->auto_pad) {
            out[i] = (f->img[i] + f->s[i] - 1) / f->s[i];
            int64_t total = (out[i] - 1) * f->s[i] + dk - f->img[i];
            total = total < 0 ? 0 : total;
            pb[i] = !strcmp(f->auto_pad, "SAME_UPPER") ? total / 2 : (total + 1) / 2;
            pe[i] = total - pb[i];
            continue;
        }
        pb[i] = f->pads[i];
        pe[i] = f->pads[f->nsp + i];
        double q = (double)(f->img[i] + pb[i] + pe[i] - dk) / (double)f->s[i];
        out[i] = (int64_t)(f->ceil_mode ? ceil(q) : floor(q)) + 1;
        if (f->ceil_mode && (out[i] - 1) * f->s[i] >= f->img[i] + pb[i])
            out[i]--;
    }
}

enum { MAXP, AVGP, LPP };

static void run_pool(int kind, const pcfg *f, int storage_order, double p, uint64_t seed)
{
    int nsp = f->nsp;
    int64_t xd[5] = {f->n, f->c}, out[3], pb[3], pe[3];
    for (int i = 0; i < nsp; i++)
        xd[i + 2] = f->img[i];
    pool_out(f, out, pb, pe);
    bool ints = f->dt == LT_U8 || f->dt == LT_I8;
    lt_value *x = tu_rand(f->dt, nsp + 2, xd, ints ? (f->dt == LT_U8 ? 0 : -128) : -2, ints ? (f->dt == LT_U8 ? 256 : 128) : 2,
                          seed);
    lt_op op = kind == MAXP ? LT_OP_MAX_POOL : kind == AVGP ? LT_OP_AVERAGE_POOL : LT_OP_LP_POOL;
    bool want_ind = kind == MAXP && f->dt != LT_U8;
    tu_graph g = tu_single(op, kind == LPP ? 18 : 12, 1, want_ind ? 2 : 1);
    tu_attr_ints(&g, "kernel_shape", nsp, f->k);
    tu_attr_ints(&g, "strides", nsp, f->s);
    if (kind != AVGP)
        tu_attr_ints(&g, "dilations", nsp, f->d);
    if (f->auto_pad)
        tu_attr_str(&g, "auto_pad", f->auto_pad);
    else
        tu_attr_ints(&g, "pads", 2 * nsp, f->pads);
    if (f->ceil_mode)
        tu_attr_int(&g, "ceil_mode", 1);
    if (kind == AVGP)
        tu_attr_int(&g, "count_include_pad", f->count_pad);
    if (kind == LPP)
        tu_attr_int(&g, "p", (int64_t)p);
    if (storage_order)
        tu_attr_int(&g, "storage_order", storage_order);
    lt_value *in[1] = {x}, *res[2] = {NULL, NULL};
    lt_err err;
    lt_status st = tu_run(&g, in, res, &err);
    if (st != LT_OK)
        fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
    int64_t L = prod(nsp, out), K = prod(nsp, f->k), plane = prod(nsp, f->img), total = f->n * f->c * L;
    double *want = calloc(total, sizeof *want), *wind = calloc(total, sizeof *wind);
    for (int64_t i = 0; i < total; i++) {
        int64_t pl = i / L, o[3], t[3];
        unflat(nsp, out, i % L, o);
        double best = -INFINITY, sum = 0;
        int64_t cnt = 0, padded = 0, at = -1;
        for (int64_t tap = 0; tap < K; tap++) {
            unflat(nsp, f->k, tap, t);
            int64_t off = 0, cm = 0, mul = 1;
            bool in_img = true, in_pad = true;
            for (int d = 0; d < nsp; d++) {
                int64_t q = o[d] * f->s[d] - pb[d] + t[d] * f->d[d];
                in_img = in_img && q >= 0 && q < f->img[d];
                in_pad = in_pad && q >= -pb[d] && q < f->img[d] + pe[d];
                off = off * f->img[d] + q;
            }
            padded += in_pad;
            if (!in_img)
                continue;
            /* column-major offset: axis 0 fastest */
            int64_t coord[3];
            unflat(nsp, f->img, off, coord);
            for (int d = 0; d < nsp; d++) {
                cm += coord[d] * mul;
                mul *= f->img[d];
            }
            double v = tu_get(x, pl * plane + off);
            cnt++;
            if (v > best) {
                best = v;
                at = pl * plane + (storage_order ? cm : off);
            }
            sum += kind == LPP ? pow(fabs(v), p) : v;
        }
        want[i] = kind == MAXP ? best : kind == AVGP ? sum / (double)(f->count_pad ? padded : cnt) : pow(sum, 1 / p);
        wind[i] = (double)at;
        if (cnt == 0) {
            /* a window wholly in the padding: 0 (and index 0 of the plane) */
            want[i] = kind == AVGP && f->count_pad ? 0 / (double)padded : 0;
            wind[i] = (double)(pl * plane);
        }
    }
    double tol = f->dt == LT_F16 ? 1e-2 : f->dt == LT_F32 ? 1e-5 : 1e-12;
    tu_assert_close(res[0], want, total, tol, tol, seed);
    if (want_ind)
        tu_assert_close(res[1], wind, total, 0, 0, seed);
    free(want);
    free(wind);
    lt_value_free(res[0]);
    lt_value_free(res[1]);
    lt_value_free(x);
    tu_free(&g);
}

static const pcfg pool_cases[] = {
    /* the CNN demo's 2x2 / 2 pool */
    {2, 8, 16, {24, 24}, {2, 2}, {2, 2}, {1, 1}, {0}, NULL, false, false, LT_F32},
    {2, 2, 3, {7, 9}, {3, 2}, {2, 3}, {1, 1}, {1, 0, 1, 1}, NULL, false, false, LT_F32},
    {2, 2, 3, {7, 9}, {3, 2}, {2, 3}, {1, 1}, {1, 0, 1, 1}, NULL, false, true, LT_F32},
    {2, 1, 2, {6, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 0, 0}, NULL, true, false, LT_F32},
    {2, 1, 2, {6, 7}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, true, true, LT_F32},
    {2, 1, 2, {8, 7}, {2, 3}, {1, 2}, {1, 1}, {0}, "SAME_UPPER", false, false, LT_F32},
    {2, 1, 2, {8, 7}, {2, 4}, {3, 2}, {1, 1}, {0}, "SAME_LOWER", false, false, LT_F32},
    {1, 2, 3, {15}, {4}, {3}, {1}, {2, 1}, NULL, true, false, LT_F64},
    {3, 1, 2, {5, 4, 6}, {2, 3, 2}, {2, 1, 2}, {1, 1, 1}, {0, 1, 1, 1, 0, 0}, NULL, false, true, LT_F32},
    {2, 1, 3, {5, 5}, {2, 2}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, false, false, LT_F16},
};

static const pcfg dilated_cases[] = {
    {2, 1, 2, {9, 8}, {2, 3}, {2, 1}, {3, 2}, {1, 0, 2, 2}, NULL, false, false, LT_F32},
    {2, 1, 2, {9, 8}, {2, 2}, {2, 2}, {2, 2}, {1, 1, 1, 1}, NULL, true, false, LT_F32},
    {1, 3, 2, {12}, {3}, {2}, {2}, {1, 1}, NULL, false, false, LT_F64},
};

static void max_pool(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pool_cases / sizeof *pool_cases; i++)
        run_pool(MAXP, &pool_cases[i], i % 2, 0, 400 + i);
    for (size_t i = 0; i < sizeof dilated_cases / sizeof *dilated_cases; i++)
        run_pool(MAXP, &dilated_cases[i], 1 - i % 2, 0, 450 + i);
    pcfg u8 = {2, 2, 2, {6, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, false, false, LT_U8};
    run_pool(MAXP, &u8, 0, 0, 470);
    pcfg i8 = {2, 2, 2, {5, 6}, {2, 2}, {1, 2}, {1, 1}, {0}, NULL, true, false, LT_I8};
    run_pool(MAXP, &i8, 0, 0, 471);
}

static void average_pool(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pool_cases / sizeof *pool_cases; i++)
        run_pool(AVGP, &pool_cases[i], 0, 0, 500 + i);
}

static void lp_pool(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof pool_cases / sizeof *pool_cases; i++)
        if (pool_cases[i].dt != LT_F16)
            run_pool(LPP, &pool_cases[i], 0, i % 3 + 1, 600 + i);
    for (size_t i = 0; i < sizeof dilated_cases / sizeof *dilated_cases; i++)
        run_pool(LPP, &dilated_cases[i], 0, 2, 650 + i);
}

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static int64_t pick(uint64_t *s, int64_t lo, int64_t hi) { return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1)); }

/* random geometries of 1 to 3 axes, every auto_pad mode, ceil_mode */
static void pool_random(void **state)
{
    (void)state;
    static const char *modes[4] = {NULL, "SAME_UPPER", "SAME_LOWER", "VALID"};
    static const lt_dtype types[4] = {LT_F32, LT_F32, LT_F64, LT_F16};
    uint64_t s = 99;
    for (int iter = 0; iter < 120; iter++) {
        pcfg f = {0};
        int kind = (int)pick(&s, 0, 2);
        f.nsp = (int)pick(&s, 1, 3);
        f.n = pick(&s, 1, 2);
        f.c = pick(&s, 1, 3);
        f.auto_pad = modes[pick(&s, 0, 3)];
        f.ceil_mode = !f.auto_pad && pick(&s, 0, 1);
        f.count_pad = pick(&s, 0, 1);
        f.dt = types[pick(&s, 0, 3)];
        bool ok = true;
        for (int i = 0; i < f.nsp; i++) {
            f.img[i] = pick(&s, 1, f.nsp == 3 ? 6 : 11);
            f.k[i] = pick(&s, 1, 4);
            f.s[i] = pick(&s, 1, 3);
            f.d[i] = kind == AVGP ? 1 : pick(&s, 1, 3);
            f.pads[i] = pick(&s, 0, f.k[i] - 1);
            f.pads[f.nsp + i] = pick(&s, 0, f.k[i] - 1);
            int64_t dk = (f.k[i] - 1) * f.d[i] + 1;
            int64_t room = f.auto_pad && !strcmp(f.auto_pad, "VALID") ? f.img[i]
                           : f.auto_pad                               ? dk
                                                                      : f.img[i] + f.pads[i] + f.pads[f.nsp + i];
            ok = ok && room >= dk;
        }
        if (ok)
            run_pool(kind, &f, (int)pick(&s, 0, 1), (double)pick(&s, 1, 3), 3000 + iter);
    }
}

static void global_pools(void **state)
{
    (void)state;
    int64_t xd[4] = {2, 3, 5, 4};
    uint64_t seed = 700;
    lt_value *x = tu_rand(LT_F32, 4, xd, -2, 2, seed);
    lt_op ops[4] = {LT_OP_GLOBAL_AVERAGE_POOL, LT_OP_GLOBAL_MAX_POOL, LT_OP_GLOBAL_LP_POOL, LT_OP_GLOBAL_LP_POOL};
    for (int o = 0; o < 4; o++) {
        tu_graph g = tu_single(ops[o], o == 3 ? 1 : 2, 1, 1);
        double p = o == 3 ? 3 : 2;
        if (o == 3)
            tu_attr_float(&g, "p", 3.0f); /* version 1 wrote p as a float */
        lt_value *in[1] = {x}, *res[1] = {NULL};
        lt_err err;
        assert_int_equal(tu_run(&g, in, res, &err), LT_OK);
        assert_int_equal(res[0]->t.rank, 4);
        assert_int_equal(res[0]->t.dims[2], 1);
        assert_int_equal(res[0]->t.dims[3], 1);
        double want[6];
        for (int q = 0; q < 6; q++) {
            double acc = o == 1 ? -INFINITY : 0;
            for (int i = 0; i < 20; i++) {
                double v = tu_get(x, q * 20 + i);
                acc = o == 0 ? acc + v : o == 1 ? fmax(acc, v) : acc + pow(fabs(v), p);
            }
            want[q] = o == 0 ? acc / 20 : o == 1 ? acc : pow(acc, 1 / p);
        }
        tu_assert_close(res[0], want, 6, 1e-5, 1e-6, seed);
        lt_value_free(res[0]);
        tu_free(&g);
    }
    lt_value_free(x);
}

static void max_unpool(void **state)
{
    (void)state;
    /* pool with indices, then unpool: every maximum returns to its place */
    int64_t xd[4] = {2, 2, 6, 4}, ks[2] = {2, 2};
    uint64_t seed = 800;
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, seed);
    tu_graph g = tu_single(LT_OP_MAX_POOL, 12, 1, 2);
    tu_attr_ints(&g, "kernel_shape", 2, ks);
    tu_attr_ints(&g, "strides", 2, ks);
    lt_value *in[1] = {x}, *pooled[2] = {NULL, NULL};
    lt_err err;
    assert_int_equal(tu_run(&g, in, pooled, &err), LT_OK);
    tu_free(&g);
    for (int with_shape = 0; with_shape < 2; with_shape++) {
        g = tu_single(LT_OP_MAX_UNPOOL, 11, with_shape ? 3 : 2, 1);
        tu_attr_ints(&g, "kernel_shape", 2, ks);
        tu_attr_ints(&g, "strides", 2, ks);
        int64_t od[1] = {4};
        double oshape[4] = {2, 2, 7, 5};
        lt_value *os = with_shape ? tu_from(LT_I64, 1, od, oshape) : NULL;
        lt_value *uin[3] = {pooled[0], pooled[1], os}, *res[1] = {NULL};
        lt_status st = tu_run(&g, uin, res, &err);
        if (st != LT_OK)
            fail_msg("%s", err.msg);
        int64_t h = with_shape ? 7 : 6, w = with_shape ? 5 : 4;
        assert_int_equal(res[0]->t.dims[2], h);
        assert_int_equal(res[0]->t.dims[3], w);
        double *want = calloc(2 * 2 * h * w, sizeof *want);
        for (int64_t i = 0; i < pooled[0]->t.numel; i++) {
            int64_t at = (int64_t)tu_get(pooled[1], i), pl = at / 24, y = at % 24 / 4, xx = at % 4;
            want[(pl * h + y) * w + xx] = tu_get(pooled[0], i);
        }
        tu_assert_close(res[0], want, 2 * 2 * h * w, 0, 0, seed);
        free(want);
        lt_value_free(res[0]);
        lt_value_free(os);
        tu_free(&g);
    }
    /* an index outside the tensor is refused */
    ((int64_t *)pooled[1]->t.data)[3] = 1000;
    g = tu_single(LT_OP_MAX_UNPOOL, 11, 2, 1);
    tu_attr_ints(&g, "kernel_shape", 2, ks);
    tu_attr_ints(&g, "strides", 2, ks);
    lt_value *bad[2] = {pooled[0], pooled[1]}, *res[1] = {NULL};
    assert_int_equal(tu_run(&g, bad, res, &err), LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(pooled[0]);
    lt_value_free(pooled[1]);
    lt_value_free(x);
}

static void max_roi_pool(void **state)
{
    (void)state;
    int64_t xd[4] = {2, 1, 4, 4}, rd[2] = {2, 5}, ps[2] = {2, 2};
    double xv[32];
    for (int i = 0; i < 32; i++)
        xv[i] = i < 16 ? i : -i; /* batch 1 is all negative: its maximum is not 0 */
    double rv[10] = {0, 0, 0, 3, 3, 1, 2, 2, 6, 6};
    lt_value *x = tu_from(LT_F32, 4, xd, xv), *rois = tu_from(LT_F32, 2, rd, rv);
    tu_graph g = tu_single(LT_OP_MAX_ROI_POOL, 1, 2, 1);
    tu_attr_ints(&g, "pooled_shape", 2, ps);
    tu_attr_float(&g, "spatial_scale", 0.5f);
    lt_value *in[2] = {x, rois}, *res[1] = {NULL};
    lt_err err;
    assert_int_equal(tu_run(&g, in, res, &err), LT_OK);
    /* roi 0 at scale 0.5: corners (0,0)-(2,2) round to (0,0)-(2,2), 3x3 in
     * bins of 1.5: rows [0,2) and [1,3), same columns. roi 1: (1,1)-(3,3),
     * rows [1,3) and [2,4) of batch 1, whose maxima sit at the top left. */
    double want[8] = {5, 6, 9, 10, -21, -22, -25, -26};
    tu_assert_close(res[0], want, 8, 0, 0, 0);
    lt_value_free(res[0]);
    lt_value_free(x);
    lt_value_free(rois);
    tu_free(&g);
}

static void roi_align(void **state)
{
    (void)state;
    /* a linear image: bilinear sampling is exact, and the mean of a bin's
     * symmetric samples is the value at the bin's center */
    int64_t xd[4] = {2, 2, 10, 12}, rd[2] = {3, 4}, bd[1] = {3};
    double *xv = malloc(sizeof(double) * 480);
    for (int n = 0; n < 2; n++)
        for (int c = 0; c < 2; c++)
            for (int y = 0; y < 10; y++)
                for (int x = 0; x < 12; x++)
                    xv[((n * 2 + c) * 10 + y) * 12 + x] = 0.5 * y - 0.25 * x + c + 10 * n;
    double rv[12] = {2, 3, 14, 12, 4.5, 5, 18.5, 16, 6, 2, 16, 10};
    double bv[3] = {1, 0, 1};
    lt_value *x = tu_from(LT_F32, 4, xd, xv), *rois = tu_from(LT_F32, 2, rd, rv), *bi = tu_from(LT_I64, 1, bd, bv);
    tu_graph g = tu_single(LT_OP_ROI_ALIGN, 16, 3, 1);
    tu_attr_int(&g, "output_height", 3);
    tu_attr_int(&g, "output_width", 2);
    tu_attr_int(&g, "sampling_ratio", 2);
    tu_attr_float(&g, "spatial_scale", 0.5f);
    lt_value *in[3] = {x, rois, bi}, *res[1] = {NULL};
    lt_err err;
    assert_int_equal(tu_run(&g, in, res, &err), LT_OK);
    double want[3 * 2 * 3 * 2];
    for (int r = 0; r < 3; r++) {
        double x0 = rv[r * 4] * 0.5 - 0.5, y0 = rv[r * 4 + 1] * 0.5 - 0.5;
        double bw = (rv[r * 4 + 2] - rv[r * 4]) * 0.5 / 2, bh = (rv[r * 4 + 3] - rv[r * 4 + 1]) * 0.5 / 3;
        for (int c = 0; c < 2; c++)
            for (int i = 0; i < 3; i++)
                for (int j = 0; j < 2; j++) {
                    double cy = y0 + (i + 0.5) * bh, cx = x0 + (j + 0.5) * bw;
                    want[((r * 2 + c) * 3 + i) * 2 + j] = 0.5 * cy - 0.25 * cx + c + 10 * bv[r];
                }
    }
    tu_assert_close(res[0], want, 36, 1e-5, 1e-5, 0);
    lt_value_free(res[0]);
    tu_free(&g);
    /* samples on pixel centers (output_half_pixel, one sample per bin):
     * avg and max both read the pixel itself */
    for (int mode = 0; mode < 2; mode++) {
        g = tu_single(LT_OP_ROI_ALIGN, 10, 3, 1);
        tu_attr_int(&g, "output_height", 2);
        tu_attr_int(&g, "output_width", 3);
        tu_attr_int(&g, "sampling_ratio", 1);
        tu_attr_str(&g, "mode", mode ? "max" : "avg");
        double r2[4] = {0, 0, 6, 4}, b2[1] = {1};
        int64_t rd2[2] = {1, 4}, bd2[1] = {1};
        lt_value *ro = tu_from(LT_F32, 2, rd2, r2), *b = tu_from(LT_I64, 1, bd2, b2);
        lt_value *in2[3] = {x, ro, b};
        assert_int_equal(tu_run(&g, in2, res, &err), LT_OK);
        double w2[12];
        for (int c = 0; c < 2; c++)
            for (int i = 0; i < 2; i++)
                for (int j = 0; j < 3; j++)
                    w2[(c * 2 + i) * 3 + j] = xv[((2 + c) * 10 + 2 * i + 1) * 12 + 2 * j + 1];
        tu_assert_close(res[0], w2, 12, 1e-6, 1e-6, mode);
        lt_value_free(res[0]);
        lt_value_free(ro);
        lt_value_free(b);
        tu_free(&g);
    }
    /* a batch index out of range is refused */
    bv[0] = 2;
    lt_value *bad = tu_from(LT_I64, 1, bd, bv);
    g = tu_single(LT_OP_ROI_ALIGN, 16, 3, 1);
    lt_value *in3[3] = {x, rois, bad};
    assert_int_equal(tu_run(&g, in3, res, &err), LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(bad);
    lt_value_free(x);
    lt_value_free(rois);
    lt_value_free(bi);
    free(xv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(max_pool),   cmocka_unit_test(average_pool), cmocka_unit_test(lp_pool),
        cmocka_unit_test(pool_random),
        cmocka_unit_test(global_pools), cmocka_unit_test(max_unpool), cmocka_unit_test(max_roi_pool),
        cmocka_unit_test(roi_align),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
