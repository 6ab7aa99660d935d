/* MaxPool and MaxPoolGrad on float32 with two spatial axes (the select-based
 * kernels for any pads, strides, dilations and ceil_mode, the 3x3 windows
 * unrolled, the 2x2 stride-2 ones, and the AVX-512 ones for 3x3 stride-2
 * windows inside the image or clipped by pads and ceil_mode, and the 2x2
 * stride-2 forward inside the image) against a direct reference written
 * here: every window scanned in row-major order over its in-image taps, the
 * first tap taken and replaced only by a tap v with v > best. Inputs at
 * batch 16 with odd sizes hold few distinct values (ties everywhere), signed
 * zeros and NaNs, so the tie rule (the first maximum in scan order takes
 * dy) and the NaN rule (a NaN first tap wins, later NaNs are passed over)
 * are checked bit for bit. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cfg {
    const char *name;
    int64_t n, c, h, w;
    int64_t k[2], s[2], d[2], pads[4];
    int ceil_mode;
    const char *auto_pad;
} cfg;

static void set_attrs(tu_graph *g, const cfg *f)
{
    tu_attr_ints(g, "kernel_shape", 2, f->k);
    tu_attr_ints(g, "strides", 2, f->s);
    tu_attr_ints(g, "dilations", 2, f->d);
    if (f->auto_pad)
        tu_attr_str(g, "auto_pad", f->auto_pad);
    else
        tu_attr_ints(g, "pads", 4, f->pads);
    if (f->ceil_mode)
        tu_attr_int(g, "ceil_mode", 1);
}

/* few distinct values (ties), signed zeros, NaNs */
static lt_value *make_x(const cfg *f, uint64_t seed)
{
    int64_t dims[4] = {f->n, f->c, f->h, f->w};
    lt_value *r = tu_rand(LT_F64, 4, dims, 0, 1, seed);
    int64_t n = r->t.numel;
    double *v = malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) {
        double u = tu_get(r, i);
        v[i] = floor(u * 6) - 3; /* -3 .. 2 */
        if (v[i] == 0 && (i & 1))
            v[i] = -0.0;
        if (i % 53 == 7)
            v[i] = NAN;
    }
    lt_value *x = tu_from(LT_F32, 4, dims, v);
    free(v);
    lt_value_free(r);
    return x;
}

/* SAME_* pads as ONNX defines them: total = (ceil(in / s) - 1) * s + (k - 1) * d + 1 - in */
static void pads_of(const cfg *f, int64_t *pb, int64_t *pe)
{
    int64_t in[2] = {f->h, f->w};
    for (int a = 0; a < 2; a++) {
        if (!f->auto_pad) {
            pb[a] = f->pads[a];
            pe[a] = f->pads[a + 2];
            continue;
        }
        int64_t out = (in[a] + f->s[a] - 1) / f->s[a];
        int64_t tot = (out - 1) * f->s[a] + (f->k[a] - 1) * f->d[a] + 1 - in[a];
        tot = tot > 0 ? tot : 0;
        bool upper = strcmp(f->auto_pad, "SAME_UPPER") == 0;
        pb[a] = upper ? tot / 2 : tot - tot / 2;
        pe[a] = tot - pb[a];
    }
}

/* the window of output (oy, ox): its in-image taps in scan order */
static int taps(const cfg *f, const int64_t *pb, int64_t oy, int64_t ox, int64_t *offs)
{
    int m = 0;
    for (int64_t ty = 0; ty < f->k[0]; ty++)
        for (int64_t tx = 0; tx < f->k[1]; tx++) {
            int64_t iy = oy * f->s[0] - pb[0] + ty * f->d[0], ix = ox * f->s[1] - pb[1] + tx * f->d[1];
            if (iy >= 0 && iy < f->h && ix >= 0 && ix < f->w)
                offs[m++] = iy * f->w + ix;
        }
    return m;
}

static int first_max(const float *xp, const int64_t *offs, int m)
{
    int at = 0;
    float best = xp[offs[0]];
    for (int q = 1; q < m; q++)
        if (xp[offs[q]] > best) {
            best = xp[offs[q]];
            at = q;
        }
    return at;
}

static bool same_bits(float a, float b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof a) == 0;
}

static void run_cfg(const cfg *f, uint64_t seed)
{
    print_message("%s\n", f->name);
    lt_value *x = make_x(f, seed);
    tu_graph fwd = tu_single(LT_OP_MAX_POOL, 12, 1, 1);
    set_attrs(&fwd, f);
    lt_value *fin[1] = {x}, *fout[1] = {NULL};
    lt_err err;
    if (tu_run(&fwd, fin, fout, &err) != LT_OK)
        fail_msg("MaxPool: %s", err.msg);
    lt_value *y = fout[0];
    int64_t oh = y->t.dims[2], ow = y->t.dims[3], pb[2], pe[2];
    pads_of(f, pb, pe);
    if (!f->ceil_mode) {
        int64_t eh = (f->h + pb[0] + pe[0] - (f->k[0] - 1) * f->d[0] - 1) / f->s[0] + 1;
        int64_t ew = (f->w + pb[1] + pe[1] - (f->k[1] - 1) * f->d[1] - 1) / f->s[1] + 1;
        assert_int_equal(oh, eh);
        assert_int_equal(ow, ew);
    }
    lt_value *dy = tu_rand(LT_F32, 4, y->t.dims, -1, 1, seed + 1);
    tu_graph gg = tu_single(LT_OP_MAX_POOL_GRAD, 12, 2, 1);
    set_attrs(&gg, f);
    lt_value *gin[2] = {dy, x}, *gout[1] = {NULL};
    if (tu_run(&gg, gin, gout, &err) != LT_OK)
        fail_msg("MaxPoolGrad: %s", err.msg);
    lt_value *dx = gout[0];
    assert_memory_equal(dx->t.dims, x->t.dims, sizeof(int64_t) * 4);

    int64_t planes = f->n * f->c, in_plane = f->h * f->w, *offs = malloc(sizeof(int64_t) * (size_t)(f->k[0] * f->k[1]));
    float *want_dx = calloc((size_t)x->t.numel, sizeof(float));
    const float *xs = x->t.data, *ys = y->t.data, *gs = dy->t.data, *dxs = dx->t.data;
    int64_t nan_first = 0, ties = 0;
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++) {
                const float *xp = xs + pl * in_plane;
                int m = taps(f, pb, oy, ox, offs);
                int64_t o = (pl * oh + oy) * ow + ox;
                float want = 0;
                if (m > 0) {
                    int at = first_max(xp, offs, m);
                    want = xp[offs[at]];
                    want_dx[pl * in_plane + offs[at]] += gs[o];
                    nan_first += isnan(xp[offs[0]]);
                    for (int q = at + 1; q < m; q++)
                        ties += xp[offs[q]] == want;
                }
                if (!same_bits(ys[o], want))
                    fail_msg("%s: MaxPool output %lld is %g, want %g", f->name, (long long)o, ys[o], want);
            }
    for (int64_t i = 0; i < x->t.numel; i++)
        if (!same_bits(dxs[i], want_dx[i]))
            fail_msg("%s: MaxPoolGrad element %lld is %g, want %g", f->name, (long long)i, dxs[i], want_dx[i]);
    assert_true(nan_first > 0 && ties > 0); /* both rules were met */
    free(offs);
    free(want_dx);
    lt_value_free(dx);
    lt_value_free(dy);
    lt_value_free(y);
    lt_value_free(x);
    tu_free(&fwd);
    tu_free(&gg);
}

static void max_pool_2d(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"3x3 stride 2 pads 1 (ResNet's), 16x5x17x16", 16, 5, 17, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        {"3x3 stride 2 ceil_mode (SqueezeNet's), 16x3x14x14", 16, 3, 14, 14, {3, 3}, {2, 2}, {1, 1}, {0}, 1},
        {"3x3 stride 2 no pads, 16x3x15x15", 16, 3, 15, 15, {3, 3}, {2, 2}, {1, 1}, {0}},
        {"3x3 stride 1 pads 1 0 2 1, 17x2x9x11", 17, 2, 9, 11, {3, 3}, {1, 1}, {1, 1}, {1, 0, 2, 1}},
        {"3x3 stride 3 ceil_mode pads 1, 16x3x13x10", 16, 3, 13, 10, {3, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1}, 1},
        {"3x3 dilations 2 pads 2, 16x2x13x12", 16, 2, 13, 12, {3, 3}, {2, 1}, {2, 2}, {2, 2, 2, 2}},
        {"2x3 stride 1x2, 16x3x9x13", 16, 3, 9, 13, {2, 3}, {1, 2}, {1, 1}, {0, 1, 1, 0}},
        {"2x2 stride 2 (tiling), 16x4x10x12", 16, 4, 10, 12, {2, 2}, {2, 2}, {1, 1}, {0}},
        {"2x2 stride 2 odd image, 16x4x11x9", 16, 4, 11, 9, {2, 2}, {2, 2}, {1, 1}, {0}},
        {"2x2 stride 2 pads 1, 16x3x9x9", 16, 3, 9, 9, {2, 2}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        {"3x3 SAME_UPPER stride 2, 16x3x11x10", 16, 3, 11, 10, {3, 3}, {2, 2}, {1, 1}, {0}, 0, "SAME_UPPER"},
        {"4x4 stride 2 SAME_LOWER, 16x2x9x8", 16, 2, 9, 8, {4, 4}, {2, 2}, {1, 1}, {0}, 0, "SAME_LOWER"},
        {"5x1 stride 1, 16x2x12x5", 16, 2, 12, 5, {5, 1}, {1, 1}, {1, 1}, {0}},
        /* 3x3 stride 2 with every window inside the image: the AVX-512
         * kernels, grid widths below, at and past 16 windows (a register) */
        {"3x3 stride 2 inside, grid 7x7 + a spare column, 16x5x15x16", 16, 5, 15, 16, {3, 3}, {2, 2}, {1, 1}, {0}},
        {"3x3 stride 2 inside, grid 1x1, 16x3x3x3", 16, 3, 3, 3, {3, 3}, {2, 2}, {1, 1}, {0}},
        {"3x3 stride 2 inside, grid 16 wide, 16x2x7x33", 16, 2, 7, 33, {3, 3}, {2, 2}, {1, 1}, {0}},
        {"3x3 stride 2 inside, grid 33 wide, 16x2x9x68", 16, 2, 9, 68, {3, 3}, {2, 2}, {1, 1}, {0}},
        {"3x3 stride 2 ceil_mode inside, 16x3x7x7", 16, 3, 7, 7, {3, 3}, {2, 2}, {1, 1}, {0}, 1},
        {"3x3 stride 2 pad end only, 16x3x8x9", 16, 3, 8, 9, {3, 3}, {2, 2}, {1, 1}, {0, 0, 1, 1}},
        {"3x3 stride 2 inside, parallel, 16x64x15x15", 16, 64, 15, 15, {3, 3}, {2, 2}, {1, 1}, {0}},
        {"3x3 stride 2 inside, parallel, 16x32x31x37", 16, 32, 31, 37, {3, 3}, {2, 2}, {1, 1}, {0}},
        /* big enough for the kernels' threads */
        {"3x3 stride 2 pads 1, parallel, 16x64x17x16", 16, 64, 17, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        {"2x2 stride 2, parallel, 16x32x64x66", 16, 32, 64, 66, {2, 2}, {2, 2}, {1, 1}, {0}},
        /* 2x2 stride 2 inside the image: the AVX-512 forward, grid rows of
         * 16 + 9, 16 + 2 and 16 + 1 (a spare column) windows, and rows
         * shared out in chunks across planes (24 x 24 planes, 16 x 32) */
        {"2x2 stride 2, grid 25 wide, 16x3x6x50", 16, 3, 6, 50, {2, 2}, {2, 2}, {1, 1}, {0}},
        {"2x2 stride 2, grid 18 wide, 16x3x8x36", 16, 3, 8, 36, {2, 2}, {2, 2}, {1, 1}, {0}},
        {"2x2 stride 2, grid 17 wide odd image, 16x3x7x35", 16, 3, 7, 35, {2, 2}, {2, 2}, {1, 1}, {0}},
        {"2x2 stride 2, parallel chunks, 16x32x24x24", 16, 32, 24, 24, {2, 2}, {2, 2}, {1, 1}, {0}},
        /* 3x3 stride 2 windows the image clips: the AVX-512 kernels for
         * the full columns, one by one for the rest; ResNet's shape, grids
         * past 16 and 32 windows wide, pads of 2 (a row of one tap),
         * asymmetric pads, ceil_mode windows hanging off the end */
        {"3x3 stride 2 pads 1 (ResNet's), parallel, 16x64x16x16", 16, 64, 16, 16, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        {"3x3 stride 2 pads 1, grid 35 wide, 16x2x9x70", 16, 2, 9, 70, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}},
        {"3x3 stride 2 pads 2, 16x3x9x10", 16, 3, 9, 10, {3, 3}, {2, 2}, {1, 1}, {2, 2, 2, 2}},
        {"3x3 stride 2 pads 0 1 2 0, grid 18 wide, 16x3x11x37", 16, 3, 11, 37, {3, 3}, {2, 2}, {1, 1}, {0, 1, 2, 0}},
        {"3x3 stride 2 ceil_mode off the end, 16x3x6x40", 16, 3, 6, 40, {3, 3}, {2, 2}, {1, 1}, {0}, 1},
        {"3x3 stride 2 pads 1 ceil_mode, 16x3x8x8", 16, 3, 8, 8, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        run_cfg(&cases[i], 900 + 10 * i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(max_pool_2d)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
