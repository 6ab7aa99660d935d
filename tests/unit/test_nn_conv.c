/* Conv, ConvTranspose, ConvInteger, QLinearConv and Col2Im against direct
 * loops in double over random inputs (fixed seeds). */
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct cfg {
    int nsp;
    int64_t n, c, m, group;
    int64_t img[3], k[3], s[3], d[3], pads[6];
    const char *auto_pad; /* NULL: explicit pads */
    bool bias;
    lt_dtype dt;
} cfg;

static int64_t prod(int n, const int64_t *v)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++)
        p *= v[i];
    return p;
}

/* decodes flat index i over dims into coords */
static void unflat(int n, const int64_t *dims, int64_t i, int64_t *coord)
{
    for (int d = n - 1; d >= 0; d--) {
        coord[d] = i % dims[d];
        i /= dims[d];
    }
}

/* output sizes and begin pads as the ONNX spec words them */
static void conv_out(const cfg *f, int64_t *out, int64_t *pb)
{
    for (int i = 0; i < f->nsp; i++) {
        int64_t dk = (f->k[i] - 1) * f->d[i] + 1;
        if (f->auto_pad && !strncmp(f->auto_pad, "SAME", 4)) {
            out[i] = (f->img[i] + f->s[i] - 1) / f->s[i];
            int64_t total = (out[i] - 1) * f->s[i] + dk - f->img[i];
            total = total < 0 ? 0 : total;
            pb[i] = !strcmp(f->auto_pad, "SAME_UPPER") ? total / 2 : (total + 1) / 2;
        } else if (f->auto_pad) {
            out[i] = (f->img[i] - dk) / f->s[i] + 1;
            pb[i] = 0;
        } else {
            out[i] = (f->img[i] + f->pads[i] + f->pads[f->nsp + i] - dk) / f->s[i] + 1;
            pb[i] = f->pads[i];
        }
    }
}

static void set_window_attrs(tu_graph *g, const cfg *f)
{
    tu_attr_ints(g, "strides", f->nsp, f->s);
    tu_attr_ints(g, "dilations", f->nsp, f->d);
    if (f->auto_pad)
        tu_attr_str(g, "auto_pad", f->auto_pad);
    else
        tu_attr_ints(g, "pads", 2 * f->nsp, f->pads);
    if (f->group != 1)
        tu_attr_int(g, "group", f->group);
}

static void run_conv(const cfg *f, uint64_t seed)
{
    int nsp = f->nsp;
    int64_t xd[5] = {f->n, f->c}, wd[5] = {f->m, f->c / f->group}, bd[1] = {f->m}, out[3], pb[3];
    for (int i = 0; i < nsp; i++) {
        xd[i + 2] = f->img[i];
        wd[i + 2] = f->k[i];
    }
    conv_out(f, out, pb);
    lt_value *x = tu_rand(f->dt, nsp + 2, xd, -1, 1, seed);
    lt_value *w = tu_rand(f->dt, nsp + 2, wd, -1, 1, seed + 1);
    lt_value *b = f->bias ? tu_rand(f->dt, 1, bd, -1, 1, seed + 2) : NULL;
    tu_graph g = tu_single(LT_OP_CONV, 11, f->bias ? 3 : 2, 1);
    set_window_attrs(&g, f);
    if (seed & 1)
        tu_attr_ints(&g, "kernel_shape", nsp, f->k);
    lt_value *in[3] = {x, w, b}, *res[1] = {NULL};
    lt_err err;
    lt_status st = tu_run(&g, in, res, &err);
    if (st != LT_OK)
        fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
    int64_t cg = f->c / f->group, mg = f->m / f->group, L = prod(nsp, out), K = prod(nsp, f->k);
    int64_t plane = prod(nsp, f->img), total = f->n * f->m * L;
    double *want = calloc(total, sizeof *want);
    for (int64_t i = 0; i < total; i++) {
        int64_t n = i / (f->m * L), m = i / L % f->m, o[3], t[3];
        unflat(nsp, out, i % L, o);
        double acc = f->bias ? tu_get(b, m) : 0;
        for (int64_t c = 0; c < cg; c++)
            for (int64_t tap = 0; tap < K; tap++) {
                unflat(nsp, f->k, tap, t);
                int64_t off = 0;
                bool ok = true;
                for (int d = 0; d < nsp; d++) {
                    int64_t p = o[d] * f->s[d] - pb[d] + t[d] * f->d[d];
                    ok = ok && p >= 0 && p < f->img[d];
                    off = off * f->img[d] + p;
                }
                if (ok)
                    acc += tu_get(x, (n * f->c + m / mg * cg + c) * plane + off) * tu_get(w, (m * cg + c) * K + tap);
            }
        want[i] = acc;
    }
    double tol = f->dt == LT_F16 ? 2e-2 : f->dt == LT_F64 ? 1e-12 : 1e-5;
    tu_assert_close(res[0], want, total, tol, tol, seed);
    for (int i = 0; i < res[0]->t.rank - 2; i++)
        assert_int_equal(res[0]->t.dims[i + 2], out[i]);
    free(want);
    lt_value_free(res[0]);
    lt_value_free(x);
    lt_value_free(w);
    lt_value_free(b);
    tu_free(&g);
}

static void conv_configs(void **state)
{
    (void)state;
    const cfg cases[] = {
        /* the CNN demo's shapes, small batch */
        {2, 4, 1, 8, 1, {28, 28}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, NULL, true, LT_F32},
        {2, 3, 8, 16, 1, {14, 14}, {5, 5}, {1, 1}, {1, 1}, {0}, NULL, true, LT_F32},
        /* one image, big enough that threads share the GEMM */
        {2, 1, 8, 16, 1, {16, 16}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, false, LT_F32},
        /* an im2col matrix of several MB: column tiles that split rows */
        {2, 1, 32, 4, 1, {30, 50}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, NULL, true, LT_F32},
        /* strides, dilations, asymmetric pads */
        {2, 2, 3, 4, 1, {9, 11}, {3, 2}, {2, 3}, {2, 1}, {1, 0, 2, 1}, NULL, true, LT_F32},
        /* groups and depthwise */
        {2, 2, 6, 4, 2, {7, 7}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, true, LT_F32},
        {2, 2, 4, 8, 4, {6, 5}, {3, 3}, {2, 1}, {1, 1}, {1, 1, 1, 1}, NULL, false, LT_F32},
        {2, 3, 8, 8, 8, {9, 9}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, true, LT_F32},
        {2, 2, 4, 4, 4, {9, 8}, {7, 7}, {1, 1}, {1, 1}, {3, 3, 3, 3}, NULL, true, LT_F32},
        {2, 2, 3, 6, 3, {9, 9}, {3, 3}, {1, 2}, {2, 2}, {2, 1, 2, 3}, NULL, false, LT_F64},
        {1, 2, 3, 9, 3, {12}, {5}, {1}, {2}, {4, 2}, NULL, true, LT_F32},
        {2, 32, 16, 16, 16, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, true, LT_F32},
        {2, 2, 3, 3, 3, {40, 30}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, true, LT_F32},
        {2, 2, 300, 300, 300, {3, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, true, LT_F32},
        {2, 2, 80, 80, 80, {5, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, false, LT_F32},
        {2, 8, 64, 64, 4, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, true, LT_F32},
        {2, 6, 32, 48, 2, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, true, LT_F32},
        {2, 2, 4, 4, 4, {7, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, NULL, true, LT_F16},
        /* auto_pad */
        {2, 1, 2, 3, 1, {7, 8}, {4, 4}, {2, 3}, {1, 1}, {0}, "SAME_UPPER", true, LT_F32},
        {2, 1, 2, 3, 1, {7, 8}, {4, 4}, {2, 3}, {1, 1}, {0}, "SAME_LOWER", true, LT_F32},
        {2, 1, 2, 3, 1, {7, 8}, {3, 2}, {2, 1}, {2, 1}, {0}, "VALID", false, LT_F32},
        /* 1-D, 3-D, 1x1 */
        {1, 3, 4, 5, 1, {20}, {4}, {3}, {2}, {2, 1}, NULL, true, LT_F32},
        {3, 2, 2, 3, 1, {5, 6, 4}, {2, 3, 2}, {1, 2, 1}, {2, 1, 1}, {1, 0, 1, 0, 1, 1}, NULL, true, LT_F32},
        /* 3-D over a batch, grouped and strided too */
        {3, 6, 8, 16, 1, {4, 8, 8}, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1, 1, 1, 1}, NULL, true, LT_F32},
        {3, 4, 6, 4, 2, {5, 6, 4}, {2, 3, 2}, {2, 1, 2}, {1, 2, 1}, {1, 0, 1, 1, 0, 1}, NULL, false, LT_F32},
        {2, 2, 5, 7, 1, {6, 6}, {1, 1}, {1, 1}, {1, 1}, {0}, NULL, true, LT_F32},
        /* other types */
        {2, 2, 3, 4, 1, {8, 7}, {3, 3}, {2, 1}, {1, 2}, {1, 1, 0, 2}, NULL, true, LT_F64},
        {2, 1, 2, 2, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, NULL, true, LT_F16},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_conv(&cases[i], 100 + i);
}

static uint64_t rng_next(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return *s >> 33;
}

static int64_t pick(uint64_t *s, int64_t lo, int64_t hi) { return lo + (int64_t)(rng_next(s) % (uint64_t)(hi - lo + 1)); }

/* random geometries of 1 to 3 axes, every auto_pad mode */
static void conv_random(void **state)
{
    (void)state;
    static const char *modes[4] = {NULL, "SAME_UPPER", "SAME_LOWER", "VALID"};
    uint64_t s = 2024;
    for (int iter = 0; iter < 60; iter++) {
        cfg f = {0};
        f.nsp = (int)pick(&s, 1, 3);
        f.group = pick(&s, 1, 3);
        f.n = pick(&s, 1, 3);
        f.c = f.group * pick(&s, 1, 3);
        f.m = f.group * pick(&s, 1, 3);
        f.auto_pad = modes[pick(&s, 0, 3)];
        f.bias = pick(&s, 0, 1);
        f.dt = pick(&s, 0, 4) ? LT_F32 : LT_F64;
        bool ok = true;
        for (int i = 0; i < f.nsp; i++) {
            f.img[i] = pick(&s, 1, f.nsp == 3 ? 6 : 12);
            f.k[i] = pick(&s, 1, 4);
            f.s[i] = pick(&s, 1, 3);
            f.d[i] = pick(&s, 1, 3);
            f.pads[i] = pick(&s, 0, 2);
            f.pads[f.nsp + i] = pick(&s, 0, 2);
            int64_t dk = (f.k[i] - 1) * f.d[i] + 1;
            int64_t room = f.auto_pad && !strncmp(f.auto_pad, "SAME", 4) ? dk : f.auto_pad ? f.img[i]
                                                                                            : f.img[i] + f.pads[i] + f.pads[f.nsp + i];
            ok = ok && room >= dk;
        }
        if (ok)
            run_conv(&f, 1000 + iter);
    }
}

static void conv_bad_channels(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 3, 5, 5}, wd[4] = {2, 2, 3, 3};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, 1), *w = tu_rand(LT_F32, 4, wd, -1, 1, 2);
    tu_graph g = tu_single(LT_OP_CONV, 11, 2, 1);
    lt_value *in[2] = {x, w}, *res[1] = {NULL};
    lt_err err;
    assert_int_equal(tu_run(&g, in, res, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "channels"));
    tu_free(&g);
    /* a kernel larger than the input */
    int64_t wd2[4] = {2, 3, 7, 3};
    lt_value *w2 = tu_rand(LT_F32, 4, wd2, -1, 1, 3);
    g = tu_single(LT_OP_CONV, 11, 2, 1);
    in[1] = w2;
    assert_int_equal(tu_run(&g, in, res, &err), LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(x);
    lt_value_free(w);
    lt_value_free(w2);
}

typedef struct tcfg {
    int nsp;
    int64_t n, c, m, group; /* m: output channels in all */
    int64_t img[3], k[3], s[3], d[3], pads[6], opad[3];
    int64_t oshape[3]; /* output_shape when oshape[0] > 0 */
    const char *auto_pad;
    bool bias;
} tcfg;

static void run_convt(const tcfg *f, uint64_t seed)
{
    int nsp = f->nsp;
    int64_t mg = f->m / f->group, cg = f->c / f->group;
    int64_t xd[5] = {f->n, f->c}, wd[5] = {f->c, mg}, bd[1] = {f->m}, out[3], pb[3];
    for (int i = 0; i < nsp; i++) {
        xd[i + 2] = f->img[i];
        wd[i + 2] = f->k[i];
        int64_t full = f->s[i] * (f->img[i] - 1) + f->opad[i] + (f->k[i] - 1) * f->d[i] + 1;
        if (f->oshape[0] > 0 || f->auto_pad) {
            out[i] = f->oshape[0] > 0 ? f->oshape[i] : f->img[i] * f->s[i];
            int64_t total = full - out[i];
            /* floor division, as the spec's formulas */
            int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
            pb[i] = f->auto_pad && !strcmp(f->auto_pad, "SAME_UPPER") ? half : total - half;
        } else {
            out[i] = full - f->pads[i] - f->pads[nsp + i];
            pb[i] = f->pads[i];
        }
    }
    lt_value *x = tu_rand(LT_F32, nsp + 2, xd, -1, 1, seed);
    lt_value *w = tu_rand(LT_F32, nsp + 2, wd, -1, 1, seed + 1);
    lt_value *b = f->bias ? tu_rand(LT_F32, 1, bd, -1, 1, seed + 2) : NULL;
    tu_graph g = tu_single(LT_OP_CONV_TRANSPOSE, 11, f->bias ? 3 : 2, 1);
    tu_attr_ints(&g, "strides", nsp, f->s);
    tu_attr_ints(&g, "dilations", nsp, f->d);
    tu_attr_ints(&g, "output_padding", nsp, f->opad);
    if (f->auto_pad)
        tu_attr_str(&g, "auto_pad", f->auto_pad);
    else if (f->oshape[0] <= 0)
        tu_attr_ints(&g, "pads", 2 * nsp, f->pads);
    if (f->oshape[0] > 0)
        tu_attr_ints(&g, "output_shape", nsp, f->oshape);
    if (f->group != 1)
        tu_attr_int(&g, "group", f->group);
    lt_value *in[3] = {x, w, b}, *res[1] = {NULL};
    lt_err err;
    lt_status st = tu_run(&g, in, res, &err);
    if (st != LT_OK)
        fail_msg("seed %llu: %s", (unsigned long long)seed, err.msg);
    int64_t L = prod(nsp, out), K = prod(nsp, f->k), plane = prod(nsp, f->img), total = f->n * f->m * L;
    double *want = calloc(total, sizeof *want);
    for (int64_t i = 0; i < total; i++)
        want[i] = f->bias ? tu_get(b, i / L % f->m) : 0;
    /* scatter every input element through every tap */
    for (int64_t i = 0; i < x->t.numel; i++) {
        int64_t n = i / (f->c * plane), c = i / plane % f->c, p[3], t[3];
        unflat(nsp, f->img, i % plane, p);
        for (int64_t mm = 0; mm < mg; mm++)
            for (int64_t tap = 0; tap < K; tap++) {
                unflat(nsp, f->k, tap, t);
                int64_t off = 0;
                bool ok = true;
                for (int d = 0; d < nsp; d++) {
                    int64_t o = p[d] * f->s[d] - pb[d] + t[d] * f->d[d];
                    ok = ok && o >= 0 && o < out[d];
                    off = off * out[d] + o;
                }
                if (ok)
                    want[(n * f->m + c / cg * mg + mm) * L + off] += tu_get(x, i) * tu_get(w, (c * mg + mm) * K + tap);
            }
    }
    tu_assert_close(res[0], want, total, 1e-5, 1e-5, seed);
    for (int i = 0; i < nsp; i++)
        assert_int_equal(res[0]->t.dims[i + 2], out[i]);
    free(want);
    lt_value_free(res[0]);
    lt_value_free(x);
    lt_value_free(w);
    lt_value_free(b);
    tu_free(&g);
}

static void convt_configs(void **state)
{
    (void)state;
    const tcfg cases[] = {
        {2, 2, 3, 4, 1, {4, 5}, {3, 3}, {2, 2}, {1, 1}, {1, 0, 1, 1}, {1, 0}, {0}, NULL, true},
        {2, 1, 4, 6, 2, {3, 3}, {3, 2}, {1, 2}, {2, 1}, {0}, {0, 1}, {0}, NULL, false},
        {2, 1, 2, 2, 1, {3, 3}, {3, 3}, {3, 2}, {1, 1}, {0}, {0}, {10, 8}, NULL, true},
        {2, 1, 2, 2, 1, {3, 3}, {3, 3}, {2, 2}, {1, 1}, {0}, {0}, {0}, "SAME_UPPER", true},
        {2, 1, 2, 2, 1, {3, 4}, {3, 3}, {2, 2}, {1, 1}, {0}, {0}, {0}, "SAME_LOWER", false},
        {1, 3, 2, 3, 1, {7}, {3}, {2}, {2}, {1, 2}, {1}, {0}, NULL, true},
        {3, 1, 2, 2, 1, {2, 3, 2}, {2, 2, 3}, {2, 1, 2}, {1, 2, 1}, {0, 1, 0, 0, 0, 1}, {0}, {0}, NULL, true},
        /* one image, large enough for threads to share the work */
        {2, 1, 16, 16, 1, {16, 16}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, {1, 1}, {0}, NULL, true},
        /* column buffers of several MB: tiles, one image and two */
        {2, 1, 2, 32, 1, {30, 50}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, {0}, {0}, NULL, true},
        {2, 2, 2, 32, 1, {30, 50}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, {0}, {0}, NULL, false},
        /* output_shape smaller than the natural size (negative split) */
        {2, 1, 1, 1, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {0}, {0}, {5, 4}, NULL, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_convt(&cases[i], 300 + i);
}

static void convt_random(void **state)
{
    (void)state;
    uint64_t s = 4048;
    for (int iter = 0; iter < 40; iter++) {
        tcfg f = {0};
        f.nsp = (int)pick(&s, 1, 3);
        f.group = pick(&s, 1, 2);
        f.n = pick(&s, 1, 2);
        f.c = f.group * pick(&s, 1, 3);
        f.m = f.group * pick(&s, 1, 3);
        f.bias = pick(&s, 0, 1);
        int mode = (int)pick(&s, 0, 3); /* pads, output_shape, SAME_UPPER, SAME_LOWER */
        f.auto_pad = mode == 2 ? "SAME_UPPER" : mode == 3 ? "SAME_LOWER" : NULL;
        bool ok = true;
        for (int i = 0; i < f.nsp; i++) {
            f.img[i] = pick(&s, 1, f.nsp == 3 ? 4 : 7);
            f.k[i] = pick(&s, 1, 4);
            f.s[i] = pick(&s, 1, 3);
            f.d[i] = pick(&s, 1, 2);
            f.opad[i] = pick(&s, 0, f.s[i] - 1);
            f.pads[i] = pick(&s, 0, 2);
            f.pads[f.nsp + i] = pick(&s, 0, 2);
            int64_t full = f.s[i] * (f.img[i] - 1) + f.opad[i] + (f.k[i] - 1) * f.d[i] + 1;
            if (mode == 1)
                f.oshape[i] = full + pick(&s, -2, 2);
            ok = ok && (mode != 0 || full - f.pads[i] - f.pads[f.nsp + i] >= 1) && (mode != 1 || f.oshape[i] >= 1);
        }
        if (ok)
            run_convt(&f, 2000 + iter);
    }
}

static void conv_integer(void **state)
{
    (void)state;
    int64_t xd[4] = {2, 3, 6, 5}, wd[4] = {4, 3, 3, 2}, zd[1] = {4};
    uint64_t seed = 77;
    lt_value *x = tu_rand(LT_U8, 4, xd, 0, 256, seed), *w = tu_rand(LT_U8, 4, wd, 0, 256, seed + 1);
    double xz = 131;
    lt_value *xzv = tu_from(LT_U8, 0, NULL, &xz), *wz = tu_rand(LT_U8, 1, zd, 100, 150, seed + 2);
    tu_graph g = tu_single(LT_OP_CONV_INTEGER, 10, 4, 1);
    int64_t pads[4] = {1, 0, 0, 1}, strides[2] = {2, 1};
    tu_attr_ints(&g, "pads", 4, pads);
    tu_attr_ints(&g, "strides", 2, strides);
    lt_value *in[4] = {x, w, xzv, wz}, *res[1] = {NULL};
    lt_err err;
    assert_int_equal(tu_run(&g, in, res, &err), LT_OK);
    assert_int_equal(res[0]->t.dtype, LT_I32);
    int64_t oh = (6 + 1 - 3) / 2 + 1, ow = (5 + 1 - 2) + 1, total = 2 * 4 * oh * ow;
    double *want = calloc(total, sizeof *want);
    for (int64_t i = 0; i < total; i++) {
        int64_t n = i / (4 * oh * ow), m = i / (oh * ow) % 4, y = i / ow % oh, xx = i % ow;
        double acc = 0;
        for (int c = 0; c < 3; c++)
            for (int a = 0; a < 3; a++)
                for (int bb = 0; bb < 2; bb++) {
                    int64_t iy = y * 2 - 1 + a, ix = xx + bb;
                    /* the padding holds the zero point: contributes nothing */
                    if (iy < 0 || iy >= 6 || ix < 0 || ix >= 5)
                        continue;
                    acc += (tu_get(x, ((n * 3 + c) * 6 + iy) * 5 + ix) - xz) *
                           (tu_get(w, ((m * 3 + c) * 3 + a) * 2 + bb) - tu_get(wz, m));
                }
        want[i] = acc;
    }
    tu_assert_close(res[0], want, total, 0, 0, seed);
    free(want);
    lt_value_free(res[0]);
    lt_value_free(x);
    lt_value_free(w);
    lt_value_free(xzv);
    lt_value_free(wz);
    tu_free(&g);
}

static void qlinear_conv(void **state)
{
    (void)state;
    int64_t xd[4] = {1, 2, 4, 4}, wd[4] = {3, 2, 2, 2}, md[1] = {3};
    uint64_t seed = 91;
    lt_value *x = tu_rand(LT_U8, 4, xd, 0, 256, seed), *w = tu_rand(LT_I8, 4, wd, -128, 128, seed + 1);
    double xs = 0.02, xz = 120, ys = 0.5, yz = 100;
    double wsv[3] = {0.01, 0.02, 0.005}, wzv[3] = {0, 0, 0}, bv[3] = {100, -300, 7};
    lt_value *vals[9] = {x,
                         tu_from(LT_F32, 0, NULL, &xs),
                         tu_from(LT_U8, 0, NULL, &xz),
                         w,
                         tu_from(LT_F32, 1, md, wsv),
                         tu_from(LT_I8, 1, md, wzv),
                         tu_from(LT_F32, 0, NULL, &ys),
                         tu_from(LT_U8, 0, NULL, &yz),
                         tu_from(LT_I32, 1, md, bv)};
    tu_graph g = tu_single(LT_OP_Q_LINEAR_CONV, 10, 9, 1);
    lt_value *res[1] = {NULL};
    lt_err err;
    assert_int_equal(tu_run(&g, vals, res, &err), LT_OK);
    assert_int_equal(res[0]->t.dtype, LT_U8);
    double want[3 * 3 * 3];
    for (int m = 0; m < 3; m++)
        for (int y = 0; y < 3; y++)
            for (int xx = 0; xx < 3; xx++) {
                double acc = bv[m];
                for (int c = 0; c < 2; c++)
                    for (int a = 0; a < 2; a++)
                        for (int b = 0; b < 2; b++)
                            acc += (tu_get(x, (c * 4 + y + a) * 4 + xx + b) - xz) *
                                   tu_get(w, ((m * 2 + c) * 2 + a) * 2 + b);
                double q = nearbyint(acc * xs * wsv[m] / ys) + yz;
                want[(m * 3 + y) * 3 + xx] = q < 0 ? 0 : q > 255 ? 255 : q;
            }
    /* the float requantization may round a half differently: allow 1 */
    tu_assert_close(res[0], want, 27, 0, 1, seed);
    lt_value_free(res[0]);
    for (int i = 0; i < 9; i++)
        lt_value_free(vals[i]);
    tu_free(&g);
}

static void col2im(void **state)
{
    (void)state;
    /* 2-D: image 5x6, block 2x3, strides 1x2, pads, dilation */
    int64_t img[2] = {5, 6}, blk[2] = {2, 3}, st[2] = {1, 2}, dil[2] = {2, 1}, pads[4] = {1, 0, 0, 1};
    int64_t gh = (5 + 1 + 0 - 3) / 1 + 1, gw = (6 + 0 + 1 - 3) / 2 + 1, C = 2, K = 6, L = gh * gw;
    int64_t xd[3] = {2, C * K, L}, one[1] = {2};
    uint64_t seed = 55;
    lt_value *x = tu_rand(LT_F32, 3, xd, -1, 1, seed);
    double imgv[2] = {5, 6}, blkv[2] = {2, 3};
    lt_value *is = tu_from(LT_I64, 1, one, imgv), *bs = tu_from(LT_I64, 1, one, blkv);
    tu_graph g = tu_single(LT_OP_COL2_IM, 18, 3, 1);
    tu_attr_ints(&g, "strides", 2, st);
    tu_attr_ints(&g, "dilations", 2, dil);
    tu_attr_ints(&g, "pads", 4, pads);
    lt_value *in[3] = {x, is, bs}, *res[1] = {NULL};
    lt_err err;
    lt_status s = tu_run(&g, in, res, &err);
    if (s != LT_OK)
        fail_msg("%s", err.msg);
    double want[2 * 2 * 5 * 6] = {0};
    for (int64_t n = 0; n < 2; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t a = 0; a < blk[0]; a++)
                for (int64_t b = 0; b < blk[1]; b++)
                    for (int64_t p = 0; p < gh; p++)
                        for (int64_t q = 0; q < gw; q++) {
                            int64_t y = p * st[0] - pads[0] + a * dil[0], xx = q * st[1] - pads[1] + b * dil[1];
                            if (y < 0 || y >= img[0] || xx < 0 || xx >= img[1])
                                continue;
                            want[((n * C + c) * 5 + y) * 6 + xx] +=
                                tu_get(x, (n * C * K + c * K + a * blk[1] + b) * L + p * gw + q);
                        }
    tu_assert_close(res[0], want, 2 * 2 * 5 * 6, 1e-6, 1e-6, seed);
    lt_value_free(res[0]);
    tu_free(&g);
    /* a wrong L is refused */
    int64_t xd2[3] = {1, C * K, L + 1};
    lt_value *x2 = tu_rand(LT_F32, 3, xd2, -1, 1, seed);
    g = tu_single(LT_OP_COL2_IM, 18, 3, 1);
    tu_attr_ints(&g, "strides", 2, st);
    tu_attr_ints(&g, "dilations", 2, dil);
    tu_attr_ints(&g, "pads", 4, pads);
    in[0] = x2;
    assert_int_equal(tu_run(&g, in, res, &err), LT_ERR_INVALID);
    tu_free(&g);
    lt_value_free(x);
    lt_value_free(x2);
    lt_value_free(is);
    lt_value_free(bs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(conv_configs),  cmocka_unit_test(conv_random),       cmocka_unit_test(conv_bad_channels),
        cmocka_unit_test(convt_configs), cmocka_unit_test(convt_random),
        cmocka_unit_test(conv_integer),  cmocka_unit_test(qlinear_conv),      cmocka_unit_test(col2im),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
