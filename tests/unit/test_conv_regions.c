/* Conv, ConvGradData and ConvGradFilter in float32 on batches whose small
 * grids run by regions (runtime/cpu/nn_conv_regions.c: padding-dominated
 * windows, a few positions of a 1x1 kernel, windows wholly in the padding)
 * and on neighbours that must not (groups, one image, large grids), and
 * ConvTranspose's gradients, which run through the same products, the
 * blocked products' filter gradient with few taps x channels, the AVX-512
 * im2col / im2row over wide images and stride 2, and Conv by panels,
 * against the direct formulas in float64, on one thread and on two. */
#include "testutil.h"
#include "runtime/cpu/nn_util.h"
#include "runtime/cpu/cpu_features.h"
#include "runtime/cpu/linalg_util.h"
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct cfg {
    const char *name;
    int64_t n, c, m, group;
    int64_t img[2], k[2], s[2], d[2], pads[4]; /* pads: y begin, x begin, y end, x end */
    bool bias;
    bool regions; /* whether the case must run by regions */
} cfg;

static void set_attrs(tu_graph *g, const cfg *f)
{
    tu_attr_ints(g, "strides", 2, f->s);
    tu_attr_ints(g, "dilations", 2, f->d);
    tu_attr_ints(g, "pads", 4, f->pads);
    if (f->group != 1)
        tu_attr_int(g, "group", f->group);
}

static int64_t out_size(const cfg *f, int ax)
{
    return (f->img[ax] + f->pads[ax] + f->pads[ax + 2] - ((f->k[ax] - 1) * f->d[ax] + 1)) / f->s[ax] + 1;
}

static lt_value *run1(tu_graph *g, lt_value **in)
{
    lt_value *out[1] = {NULL};
    lt_err err;
    if (tu_run(g, in, out, &err) != LT_OK)
        fail_msg("%s: %s", lt_op_names[g->node->op], err.msg);
    return out[0];
}

static void run_case(const cfg *f, uint64_t seed)
{
    int64_t H = f->img[0], W = f->img[1], KH = f->k[0], KW = f->k[1], OH = out_size(f, 0), OW = out_size(f, 1);
    int64_t cg = f->c / f->group, mg = f->m / f->group, K = KH * KW;
    print_message("%s: n %lld, %lld -> %lld channels, %lldx%lld -> %lldx%lld\n", f->name, (long long)f->n,
                  (long long)f->c, (long long)f->m, (long long)H, (long long)W, (long long)OH, (long long)OW);

    /* the selection itself */
    lt_nn_geom geo = {.nsp = 2};
    for (int a = 0; a < 2; a++) {
        geo.img[a] = f->img[a];
        geo.grid[a] = a ? OW : OH;
        geo.k[a] = f->k[a];
        geo.s[a] = f->s[a];
        geo.d[a] = f->d[a];
        geo.pb[a] = f->pads[a];
        geo.pe[a] = f->pads[a + 2];
    }
    /* the filter gradient of a 1x1 kernel keeps its own path beyond one position */
    assert_int_equal(lt_nn_regions(4, &geo, f->group, f->n, f->m, false), f->regions);
    assert_int_equal(lt_nn_regions(4, &geo, f->group, f->n, f->m, true), f->regions && (K > 1 || OH * OW == 1));

    int64_t xd[4] = {f->n, f->c, H, W}, wd[4] = {f->m, cg, KH, KW}, yd[4] = {f->n, f->m, OH, OW}, bd[1] = {f->m};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, seed), *w = tu_rand(LT_F32, 4, wd, -1, 1, seed + 1);
    lt_value *dy = tu_rand(LT_F32, 4, yd, -1, 1, seed + 2), *b = tu_rand(LT_F32, 1, bd, -1, 1, seed + 3);
    int64_t nx = f->n * f->c * H * W, nw = f->m * cg * K, ny = f->n * f->m * OH * OW;
    double *xv = malloc(sizeof(double) * (size_t)nx), *wv = malloc(sizeof(double) * (size_t)nw);
    double *dyv = malloc(sizeof(double) * (size_t)ny), *y = malloc(sizeof(double) * (size_t)ny);
    double *dx = calloc((size_t)nx, sizeof(double)), *dw = calloc((size_t)nw, sizeof(double));
    assert_non_null(xv);
    assert_non_null(wv);
    assert_non_null(dyv);
    assert_non_null(y);
    assert_non_null(dx);
    assert_non_null(dw);
    for (int64_t i = 0; i < nx; i++)
        xv[i] = tu_get(x, i);
    for (int64_t i = 0; i < nw; i++)
        wv[i] = tu_get(w, i);
    for (int64_t i = 0; i < ny; i++)
        dyv[i] = tu_get(dy, i);

    /* y = b + sum w x; dx = sum w dy; dW = sum dy x, over the taps inside */
    for (int64_t i = 0; i < f->n; i++)
        for (int64_t o = 0; o < f->m; o++)
            for (int64_t oy = 0; oy < OH; oy++)
                for (int64_t ox = 0; ox < OW; ox++) {
                    int64_t yi = ((i * f->m + o) * OH + oy) * OW + ox;
                    double acc = f->bias ? tu_get(b, o) : 0;
                    for (int64_t q = 0; q < cg; q++) {
                        int64_t ch = o / mg * cg + q;
                        for (int64_t ky = 0; ky < KH; ky++)
                            for (int64_t kx = 0; kx < KW; kx++) {
                                int64_t iy = oy * f->s[0] + ky * f->d[0] - f->pads[0];
                                int64_t ix = ox * f->s[1] + kx * f->d[1] - f->pads[1];
                                if (iy < 0 || iy >= H || ix < 0 || ix >= W)
                                    continue;
                                int64_t xi = ((i * f->c + ch) * H + iy) * W + ix;
                                int64_t wi = ((o * cg + q) * KH + ky) * KW + kx;
                                acc += wv[wi] * xv[xi];
                                dx[xi] += wv[wi] * dyv[yi];
                                dw[wi] += dyv[yi] * xv[xi];
                            }
                    }
                    y[yi] = acc;
                }

    tu_graph fwd = tu_single(LT_OP_CONV, 11, f->bias ? 3 : 2, 1);
    tu_graph gd = tu_single(LT_OP_CONV_GRAD_DATA, 11, 3, 1), gf = tu_single(LT_OP_CONV_GRAD_FILTER, 11, 3, 1);
    set_attrs(&fwd, f);
    set_attrs(&gd, f);
    set_attrs(&gf, f);
    lt_value *fin[3] = {x, w, b}, *din[3] = {dy, w, x}, *fin2[3] = {dy, x, w};
    /* float32 sums of up to c/group x taps products of values in [-1, 1] */
    double atol = 2e-6 * sqrt((double)(cg * K)) + 1e-6, gtol = 2e-6 * sqrt((double)(mg * K * f->n * OH * OW)) + 1e-6;
    int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        lt_value *gy = run1(&fwd, fin), *gdx = run1(&gd, din), *gdw = run1(&gf, fin2);
        tu_assert_close(gy, y, ny, 1e-5, atol * 4, seed);
        tu_assert_close(gdx, dx, nx, 1e-5, atol * sqrt((double)f->m) * 4, seed);
        tu_assert_close(gdw, dw, nw, 1e-5, gtol * 4, seed);
        lt_value_free(gy);
        lt_value_free(gdx);
        lt_value_free(gdw);
    }
    omp_set_num_threads(saved);
    tu_free(&fwd);
    tu_free(&gd);
    tu_free(&gf);
    lt_value_free(x);
    lt_value_free(w);
    lt_value_free(dy);
    lt_value_free(b);
    free(xv);
    free(wv);
    free(dyv);
    free(y);
    free(dx);
    free(dw);
}

static void run_all(const cfg *cases, int n, uint64_t seed0)
{
    for (int i = 0; i < n; i++)
        run_case(&cases[i], seed0 + 10 * (uint64_t)i);
}

/* cases that run by regions */
static void regions(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"3x3 pad 1 on 1x1 images: the centre tap alone", 16, 64, 48, 1, {1, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1},
         true, true},
        {"3x3 pad 1 on 2x2 images", 20, 96, 128, 1, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true},
        {"3x3 stride 2 pad 1, 3x3 -> 2x2", 17, 32, 64, 1, {3, 3}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false, true},
        {"3x3 pad 1 on odd 3x1 images", 16, 40, 36, 1, {3, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true},
        {"dilation 2, pad 2, 5x3", 18, 33, 32, 1, {5, 3}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, true, true},
        {"2x3 kernel, strides 1x2, uneven pads, 1x5", 16, 35, 40, 1, {1, 5}, {2, 3}, {1, 2}, {1, 1}, {1, 0, 0, 2},
         true, true},
        {"5x5 pad 2 on 3x3 images", 19, 32, 48, 1, {3, 3}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, true},
        {"1x1 kernel on 1x1 images", 16, 96, 40, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true},
        {"1x1 kernel on 2x1 images", 16, 96, 40, 1, {2, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true},
        {"1x1 kernel stride 2, 3x3 -> 2x2", 16, 64, 128, 1, {3, 3}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}, false,
         true},
        {"1x1 kernel on 3x3 images", 16, 128, 32, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true},
        {"1x1 kernel stride 2, 7x7 -> 4x4", 16, 64, 128, 1, {7, 7}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}, false,
         true},
        {"windows wholly in the padding: 1x1 kernel, begin pads 1 on 1x1", 16, 48, 40, 1, {1, 1}, {1, 1}, {1, 1},
         {1, 1}, {1, 1, 0, 0}, true, true},
        {"windows wholly in the padding: 3x3 stride 2, pad 3 on 2x1", 16, 32, 33, 1, {2, 1}, {3, 3}, {2, 2}, {1, 1},
         {3, 3, 3, 3}, true, true},
        {"batch 64, 128 -> 128 on 1x1 (ResNet's last stage)", 64, 128, 128, 1, {1, 1}, {3, 3}, {1, 1}, {1, 1},
         {1, 1, 1, 1}, false, true},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 7100);
}

/* neighbours that must not: groups, one image, grids mostly inside, large
 * grids, 1x1 kernels over more positions or to few channels */
static void not_regions(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"group 2 on 2x2", 16, 32, 32, 2, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false},
        {"one image on 2x2", 1, 64, 64, 1, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false},
        {"3x3 pad 1 on 5x3 (two thirds inside)", 16, 40, 36, 1, {5, 3}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true,
         false},
        {"3x3 pad 1 on 9x9 (mostly inside)", 16, 32, 32, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false},
        {"3x3 no pad on 5x5", 16, 32, 40, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, false},
        {"1x1 kernel on 5x5", 16, 32, 48, 1, {5, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, false},
        {"1x1 kernel on 1x1 to 10 channels", 16, 64, 10, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, false},
        {"3x3 pad 1 on 17x15 (grid of 255)", 16, 32, 32, 1, {17, 15}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true,
         false},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 7300);
}

/* blocked im2col products (small grids mostly inside the image, one group)
 * whose filter gradient has fewer than 32 taps x channels (a first layer on
 * RGB or grey images): with 32 output channels or more it sums dW's
 * transpose; with fewer, and with 32 taps x channels or more, it does not */
static void blocked_few_taps(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"RGB 3x3 no pad 15x15 -> 13x13, 64 channels", 16, 3, 64, 1, {15, 15}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0},
         true, false},
        {"grey 5x5 12x12 -> 8x8, 32 channels", 17, 1, 32, 1, {12, 12}, {5, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true,
         false},
        {"RGB 3x3 stride 2 pad 1 17x17 -> 9x9, 48 channels", 16, 3, 48, 1, {17, 17}, {3, 3}, {2, 2}, {1, 1},
         {1, 1, 1, 1}, true, false},
        {"2 channels 3x2 dilation 2 on 11x13, 33 channels", 18, 2, 33, 1, {11, 13}, {3, 2}, {1, 1}, {2, 2},
         {1, 0, 1, 1}, false, false},
        /* must not: too few output channels, or enough taps x channels */
        {"RGB 3x3 15x15, 16 channels", 16, 3, 16, 1, {15, 15}, {3, 3}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, false},
        {"4 channels 3x3 (36 rows) 15x15, 64 channels", 16, 4, 64, 1, {15, 15}, {3, 3}, {1, 1}, {1, 1},
         {0, 0, 0, 0}, true, false},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 7700);
}

/* im2col and im2row with AVX-512 over wide images and column strides 1 or
 * 2 (runtime/cpu/nn_cols_avx512.c): a ResNet stem, stride-2 3x3s, grids
 * wider than 16 positions, dilations; and column stride 3, which must not
 * take them (the scalar loops) */
static void cols_wide(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"7x7 stride 2 pad 3, 32x32 (ResNet's stem)", 16, 3, 64, 1, {32, 32}, {7, 7}, {2, 2}, {1, 1}, {3, 3, 3, 3},
         true, false},
        {"3x3 stride 2 pad 1, 8x8 -> 4x4", 16, 64, 128, 1, {8, 8}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, false,
         false},
        {"3x3 stride 2 no pad, odd 33x31 -> 16x15", 17, 3, 64, 1, {33, 31}, {3, 3}, {2, 2}, {1, 1}, {0, 0, 0, 0},
         true, false},
        {"5x5 stride 1, 28x28 -> 24x24", 16, 1, 32, 1, {28, 28}, {5, 5}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, false},
        {"3x3 pad 1 on 21x37: 37 wide grid", 16, 32, 48, 1, {21, 37}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true,
         false},
        {"3x3 stride 2x1 dilation 2 pads 2 1 0 3, 19x23", 16, 8, 40, 1, {19, 23}, {3, 3}, {2, 1}, {2, 2},
         {2, 1, 0, 3}, false, false},
        {"2x5 stride 1x2 dilation 1x3 pad 2, 11x41", 16, 4, 36, 1, {11, 41}, {2, 5}, {1, 2}, {1, 3}, {2, 2, 2, 2},
         true, false},
        {"3x3 stride 2 pad 1, group 2, 17x17", 16, 32, 64, 2, {17, 17}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1}, true,
         false},
        /* must not: column stride 3 */
        {"3x3 stride 3 pad 1, 22x25", 16, 16, 32, 1, {22, 25}, {3, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1}, true, false},
    };
    run_all(cases, sizeof cases / sizeof cases[0], 7900);
}

/* Conv's forward and filter gradient by panels (runtime/cpu/nn_conv_panels.c,
 * nn_conv_panels_avx2.c without AVX-512): panels that
 * straddle images and grid rows, output channels not a multiple of the
 * tile's 8, one position an image, strides 2 with dilations, a batch
 * whose columns end mid-panel, 1x1 kernels over at most 16 positions (the
 * forward and, with 64 image channels, the data gradient taken from the
 * regions); and neighbours that must not (groups, few taps x channels, 1x1
 * over more positions, column stride 3) */
static void run_panels(const cfg *f, uint64_t seed, bool want)
{
    lt_nn_geom geo = {.nsp = 2};
    for (int a = 0; a < 2; a++) {
        geo.img[a] = f->img[a];
        geo.grid[a] = out_size(f, a);
        geo.k[a] = f->k[a];
        geo.s[a] = f->s[a];
        geo.d[a] = f->d[a];
        geo.pb[a] = f->pads[a];
        geo.pe[a] = f->pads[a + 2];
    }
    /* AVX-512's panels (nn_conv_panels.c) or, without it, AVX2's (nn_conv_panels_avx2.c) */
    bool isa = lt_cpu_avx512_gemm() || lt_sgemm_avx2_here();
    assert_int_equal(lt_nn_conv_panels_usable(&geo, f->group, f->c / f->group), want && isa);
    /* the filter gradient by panels: any strides, but unit column dilation
     * and 16 output channels or more */
    bool plain = f->k[0] == 1 && f->k[1] == 1 && f->s[0] == 1 && f->s[1] == 1 && f->pads[0] == 0 && f->pads[1] == 0 &&
                 f->pads[2] == 0 && f->pads[3] == 0;
    bool filter = f->group == 1 && f->d[1] == 1 && f->m >= 16 && f->c * f->k[0] * f->k[1] >= 64 && !plain && isa;
    assert_int_equal(lt_nn_conv_panels_filter_usable(&geo, f->group, f->c / f->group, f->m), filter);
    run_case(f, seed);
}

static void panels(void **state)
{
    (void)state;
    const cfg yes[] = {
        {"3x3 pad 1 on 8x8, 64 -> 64 (ResNet's first stage)", 16, 64, 64, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1},
         {1, 1, 1, 1}, true, false},
        {"3x3 pad 1 on 7x5: panels across images and rows, 40 -> 36", 17, 40, 36, 1, {7, 5}, {3, 3}, {1, 1}, {1, 1},
         {1, 1, 1, 1}, true, false},
        {"5x5 on 12x12 -> 8x8, 32 -> 64 (the CNN's second)", 16, 32, 64, 1, {12, 12}, {5, 5}, {1, 1}, {1, 1},
         {0, 0, 0, 0}, true, false},
        {"3x3 stride 2 pad 1, 15x15 -> 8x8, 32 -> 45", 19, 32, 45, 1, {15, 15}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1},
         true, false},
        {"3x3 no pad on 3x3: one position an image, 64 -> 40", 35, 64, 40, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1},
         {0, 0, 0, 0}, true, false},
        {"3x3 stride 2 dilation 2 pads 2 1 1 0, 21x40", 16, 12, 24, 1, {21, 40}, {3, 3}, {2, 2}, {2, 2},
         {2, 1, 1, 0}, true, false},
        {"1x1 stride 2, 9x9 -> 5x5, 96 -> 32", 16, 96, 32, 1, {9, 9}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true,
         false},
        {"3x1 stride 1x2 pad 1 0, 6x70, 24 -> 17", 16, 24, 17, 1, {6, 70}, {3, 1}, {1, 2}, {1, 1}, {1, 0, 1, 0},
         false, false},
        {"1x1 on 3x3 (9 positions), 256 -> 32", 16, 256, 32, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true,
         true},
        {"1x1 on 1x1, 384 -> 48", 17, 384, 48, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, true},
        {"1x1 on 4x4 (16 positions), 64 -> 96, into dx by panels too", 16, 64, 96, 1, {4, 4}, {1, 1}, {1, 1}, {1, 1},
         {0, 0, 0, 0}, true, true},
        /* the filter gradient's sums in three chunks of positions */
        {"3x3 pad 1 on 33x33, 16 -> 16: 17424 positions", 16, 16, 16, 1, {33, 33}, {3, 3}, {1, 1}, {1, 1},
         {1, 1, 1, 1}, true, false},
    };
    const cfg no[] = {
        {"group 2 on 8x8", 16, 64, 64, 2, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false},
        {"7 channels 3x3 (63 rows) on 9x9", 16, 7, 32, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false},
        {"1x1 on 5x4 (20 positions), 96 -> 64", 16, 96, 64, 1, {5, 4}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true,
         false},
        {"3x3 stride 3 on 13x13, 16 -> 32", 16, 16, 32, 1, {13, 13}, {3, 3}, {3, 3}, {1, 1}, {1, 1, 1, 1}, true,
         false},
    };
    for (int i = 0; i < (int)(sizeof yes / sizeof yes[0]); i++)
        run_panels(&yes[i], 8100 + 10 * (uint64_t)i, true);
    for (int i = 0; i < (int)(sizeof no / sizeof no[0]); i++)
        run_panels(&no[i], 8300 + 10 * (uint64_t)i, false);
}

/* The filter gradient with the output channels in the lanes
 * (runtime/cpu/nn_conv_filter.c): 32 to 128 output channels, not a
 * multiple of the tile's 32, taps x channels not a multiple of its 8,
 * strides, dilations, uneven pads, positions past one
 * stretch of 256 and ending mid-stretch, no pads (the images read in
 * place); and neighbours that must not (31 and 129 output channels,
 * groups, a plain 1x1, few taps x channels, grids over 4096), whose
 * filter gradients take the panels or the blocked products */
static void run_lanes(const cfg *f, uint64_t seed, bool want)
{
    lt_nn_geom geo = {.nsp = 2};
    for (int a = 0; a < 2; a++) {
        geo.img[a] = f->img[a];
        geo.grid[a] = out_size(f, a);
        geo.k[a] = f->k[a];
        geo.s[a] = f->s[a];
        geo.d[a] = f->d[a];
        geo.pb[a] = f->pads[a];
        geo.pe[a] = f->pads[a + 2];
    }
    assert_int_equal(lt_nn_conv_filter_lanes_usable(&geo, f->group, f->c / f->group, f->m),
                     want && lt_cpu_avx512_gemm());
    /* the regions come first: these cases must not run by them */
    assert_false(lt_nn_regions(4, &geo, f->group, f->n, f->m, true));
    run_case(f, seed);
}

static void filter_lanes(void **state)
{
    (void)state;
    const cfg yes[] = {
        {"3x3 pad 1 on 8x8, 64 -> 64 (ResNet's first stage): 4 stretches", 16, 64, 64, 1, {8, 8}, {3, 3}, {1, 1},
         {1, 1}, {1, 1, 1, 1}, true, false},
        {"5x5 on 12x12 -> 8x8, 32 -> 64 (the CNN's second), no pads", 17, 32, 64, 1, {12, 12}, {5, 5}, {1, 1},
         {1, 1}, {0, 0, 0, 0}, false, false},
        {"3x3 pad 1 on 7x5, 9 -> 45: 81 taps x channels, 315 positions", 9, 9, 45, 1, {7, 5}, {3, 3}, {1, 1},
         {1, 1}, {1, 1, 1, 1}, true, false},
        {"3x3 stride 2 pad 1, 15x15 -> 8x8, 16 -> 100", 19, 16, 100, 1, {15, 15}, {3, 3}, {2, 2}, {1, 1},
         {1, 1, 1, 1}, true, false},
        {"3x2 stride 2x1 dilation 2x3 pads 2 1 0 3, 13x11, 11 -> 33", 16, 11, 33, 1, {13, 11}, {3, 2}, {2, 1},
         {2, 3}, {2, 1, 0, 3}, false, false},
        {"7x7 stride 2 pad 3, 21x21 -> 11x11, RGB -> 128 (a stem)", 16, 3, 128, 1, {21, 21}, {7, 7}, {2, 2},
         {1, 1}, {3, 3, 3, 3}, true, false},
        {"1x1 stride 2, 9x9 -> 5x5, 96 -> 32", 16, 96, 32, 1, {9, 9}, {1, 1}, {2, 2}, {1, 1}, {0, 0, 0, 0}, true,
         false},
        {"3x3 no pad on 3x3: one position an image, 64 -> 40", 35, 64, 40, 1, {3, 3}, {3, 3}, {1, 1}, {1, 1},
         {0, 0, 0, 0}, true, false},
    };
    const cfg no[] = {
        {"3x3 pad 1 on 8x8, 64 -> 31", 16, 64, 31, 1, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false},
        {"3x3 pad 1 on 4x4, 64 -> 129", 16, 64, 129, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false},
        {"group 2 on 8x8, 64 -> 64", 16, 64, 64, 2, {8, 8}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false},
        {"plain 1x1 on 5x5, 96 -> 64", 16, 96, 64, 1, {5, 5}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true, false},
        {"7 channels 3x3 (63 rows) on 9x9, 7 -> 32", 16, 7, 32, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true,
         false},
        {"3x3 pad 1 on 65x64 (4160 positions), 8 -> 32", 2, 8, 32, 1, {65, 64}, {3, 3}, {1, 1}, {1, 1},
         {1, 1, 1, 1}, true, false},
    };
    for (int i = 0; i < (int)(sizeof yes / sizeof yes[0]); i++)
        run_lanes(&yes[i], 8500 + 10 * (uint64_t)i, true);
    for (int i = 0; i < (int)(sizeof no / sizeof no[0]); i++)
        run_lanes(&no[i], 8700 + 10 * (uint64_t)i, false);
}

/* Conv and its data gradient with the images in the lanes
 * (runtime/cpu/nn_conv_images.c), where the regions would run with 32
 * images or more: a batch ending mid-panel, channels not a multiple of the
 * tile's 8, the centre tap alone, strides, dilations, uneven pads, windows
 * wholly in the padding (the bias alone, pixels no window reads); grids
 * of up to 16 positions whose sums run over 128 channels or more (the
 * forward's image channels, the data gradient's output channels); and
 * neighbours that must not (31 images, a 1x1 kernel, groups, grids mostly
 * inside, 20 positions) */
static void run_images(const cfg *f, uint64_t seed, bool fwd, bool data)
{
    lt_nn_geom geo = {.nsp = 2};
    for (int a = 0; a < 2; a++) {
        geo.img[a] = f->img[a];
        geo.grid[a] = out_size(f, a);
        geo.k[a] = f->k[a];
        geo.s[a] = f->s[a];
        geo.d[a] = f->d[a];
        geo.pb[a] = f->pads[a];
        geo.pe[a] = f->pads[a + 2];
    }
    /* the forward's sums run over the image channels, the data gradient's
     * over the output channels */
    assert_int_equal(lt_nn_conv_images_usable(&geo, f->group, f->n, f->c / f->group), fwd && lt_cpu_avx512_gemm());
    assert_int_equal(lt_nn_conv_images_usable(&geo, f->group, f->n, f->m / f->group), data && lt_cpu_avx512_gemm());
    run_case(f, seed);
}

static void images(void **state)
{
    (void)state;
    const cfg yes[] = {
        {"3x3 pad 1 on 2x2, 33 images, 40 -> 37", 33, 40, 37, 1, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true,
         true},
        {"3x3 pad 1 on 1x1: the centre tap alone, 64 images, 24 -> 19", 64, 24, 19, 1, {1, 1}, {3, 3}, {1, 1},
         {1, 1}, {1, 1, 1, 1}, false, true},
        {"3x3 stride 2 pad 1, 3x3 -> 2x2, 45 images", 45, 32, 64, 1, {3, 3}, {3, 3}, {2, 2}, {1, 1}, {1, 1, 1, 1},
         true, true},
        {"dilation 2, pad 2, 5x3, 32 images", 32, 17, 9, 1, {5, 3}, {3, 3}, {1, 1}, {2, 2}, {2, 2, 2, 2}, true, true},
        {"2x3 kernel, strides 1x2, uneven pads, 1x5, 40 images", 40, 35, 40, 1, {1, 5}, {2, 3}, {1, 2}, {1, 1},
         {1, 0, 0, 2}, true, true},
        {"windows wholly in the padding: 3x3 stride 2, pad 3 on 2x1, 32 images", 32, 32, 33, 1, {2, 1}, {3, 3},
         {2, 2}, {1, 1}, {3, 3, 3, 3}, true, true},
        {"5x5 pad 2 on 3x3, 70 images", 70, 12, 48, 1, {3, 3}, {5, 5}, {1, 1}, {1, 1}, {2, 2, 2, 2}, true, true},
        /* grids of up to 16 positions with sums over 128 channels or more */
        {"3x3 pad 1 on 4x4, 40 images, 128 -> 130", 40, 128, 130, 1, {4, 4}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1},
         true, false},
    };
    /* the forward alone, or the data gradient alone */
    const cfg fwd_only[] = {
        {"3x3 stride 2 pad 1, 7x7 -> 4x4, 32 images, 128 -> 40", 32, 128, 40, 1, {7, 7}, {3, 3}, {2, 2}, {1, 1},
         {1, 1, 1, 1}, true, false},
    };
    const cfg data_only[] = {
        {"3x3 pad 1 on 3x5, 33 images, 64 -> 128", 33, 64, 128, 1, {3, 5}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1},
         false, false},
    };
    const cfg no[] = {
        {"3x3 pad 1 on 2x2, 31 images", 31, 40, 37, 1, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, true},
        {"1x1 kernel on 1x1 images, 64 images", 64, 96, 40, 1, {1, 1}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, true,
         true},
        {"group 2 on 2x2, 32 images", 32, 32, 32, 2, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, true, false},
        {"3x3 pad 1 on 9x9 (mostly inside), 32 images", 32, 16, 16, 1, {9, 9}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1},
         true, false},
        {"3x3 pad 1 on 5x4 (20 positions), 32 images, 128 -> 128", 32, 128, 128, 1, {5, 4}, {3, 3}, {1, 1}, {1, 1},
         {1, 1, 1, 1}, true, false},
    };
    for (int i = 0; i < (int)(sizeof yes / sizeof yes[0]); i++)
        run_images(&yes[i], 8900 + 10 * (uint64_t)i, true, true);
    run_images(&fwd_only[0], 9000, true, false);
    run_images(&data_only[0], 9010, false, true);
    for (int i = 0; i < (int)(sizeof no / sizeof no[0]); i++)
        run_images(&no[i], 9100 + 10 * (uint64_t)i, false, false);
}

/* ConvTranspose's gradients are the same products seen from the other side
 * (ConvTransposeGradData a convolution of dy, ConvTransposeGradFilter the
 * filter product with x on the grid side): x [n, c, img], w [c, m, k], y
 * [n, m, out] with out = (img - 1) s + (k - 1) d + 1 - pads */
static void run_transpose(const cfg *f, uint64_t seed)
{
    int64_t H = f->img[0], W = f->img[1], KH = f->k[0], KW = f->k[1], K = KH * KW;
    int64_t OH = (H - 1) * f->s[0] + (KH - 1) * f->d[0] + 1 - f->pads[0] - f->pads[2];
    int64_t OW = (W - 1) * f->s[1] + (KW - 1) * f->d[1] + 1 - f->pads[1] - f->pads[3];
    print_message("ConvTranspose %s: n %lld, %lld -> %lld channels, %lldx%lld -> %lldx%lld\n", f->name,
                  (long long)f->n, (long long)f->c, (long long)f->m, (long long)H, (long long)W, (long long)OH,
                  (long long)OW);
    /* the gradient kernels' view: the image side is y, the grid side x */
    lt_nn_geom geo = {.nsp = 2};
    for (int a = 0; a < 2; a++) {
        geo.img[a] = a ? OW : OH;
        geo.grid[a] = f->img[a];
        geo.k[a] = f->k[a];
        geo.s[a] = f->s[a];
        geo.d[a] = f->d[a];
        geo.pb[a] = f->pads[a];
        geo.pe[a] = f->pads[a + 2];
    }
    assert_int_equal(lt_nn_regions(4, &geo, 1, f->n, f->c, false), f->regions);
    assert_int_equal(lt_nn_regions(4, &geo, 1, f->n, f->c, true), f->regions && (K > 1 || H * W == 1));

    int64_t xd[4] = {f->n, f->c, H, W}, wd[4] = {f->c, f->m, KH, KW}, yd[4] = {f->n, f->m, OH, OW};
    lt_value *x = tu_rand(LT_F32, 4, xd, -1, 1, seed), *w = tu_rand(LT_F32, 4, wd, -1, 1, seed + 1);
    lt_value *dy = tu_rand(LT_F32, 4, yd, -1, 1, seed + 2);
    int64_t nx = f->n * f->c * H * W, nw = f->c * f->m * K, ny = f->n * f->m * OH * OW;
    double *y = calloc((size_t)ny, sizeof(double)), *dx = calloc((size_t)nx, sizeof(double));
    double *dw = calloc((size_t)nw, sizeof(double));
    assert_non_null(y);
    assert_non_null(dx);
    assert_non_null(dw);
    for (int64_t i = 0; i < f->n; i++)
        for (int64_t ch = 0; ch < f->c; ch++)
            for (int64_t iy = 0; iy < H; iy++)
                for (int64_t ix = 0; ix < W; ix++) {
                    int64_t xi = ((i * f->c + ch) * H + iy) * W + ix;
                    double xv = tu_get(x, xi);
                    for (int64_t o = 0; o < f->m; o++)
                        for (int64_t ky = 0; ky < KH; ky++)
                            for (int64_t kx = 0; kx < KW; kx++) {
                                int64_t oy = iy * f->s[0] + ky * f->d[0] - f->pads[0];
                                int64_t ox = ix * f->s[1] + kx * f->d[1] - f->pads[1];
                                if (oy < 0 || oy >= OH || ox < 0 || ox >= OW)
                                    continue;
                                int64_t yi = ((i * f->m + o) * OH + oy) * OW + ox;
                                int64_t wi = ((ch * f->m + o) * KH + ky) * KW + kx;
                                double wv = tu_get(w, wi), dyv = tu_get(dy, yi);
                                y[yi] += xv * wv;
                                dx[xi] += wv * dyv;
                                dw[wi] += xv * dyv;
                            }
                }
    tu_graph fwd = tu_single(LT_OP_CONV_TRANSPOSE, 11, 2, 1);
    tu_graph gd = tu_single(LT_OP_CONV_TRANSPOSE_GRAD_DATA, 11, 3, 1);
    tu_graph gf = tu_single(LT_OP_CONV_TRANSPOSE_GRAD_FILTER, 11, 3, 1);
    set_attrs(&fwd, f);
    set_attrs(&gd, f);
    set_attrs(&gf, f);
    lt_value *fin[2] = {x, w}, *din[3] = {dy, w, x}, *fin2[3] = {dy, x, w};
    double atol = 8e-6 * sqrt((double)(f->m * K)) + 1e-6, gtol = 8e-6 * sqrt((double)(f->n * K * H * W)) + 1e-6;
    int saved = omp_get_max_threads();
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        lt_value *gy = run1(&fwd, fin), *gdx = run1(&gd, din), *gdw = run1(&gf, fin2);
        tu_assert_close(gy, y, ny, 1e-5, 8e-6 * sqrt((double)(f->c * K)) + 1e-6, seed);
        tu_assert_close(gdx, dx, nx, 1e-5, atol, seed);
        tu_assert_close(gdw, dw, nw, 1e-5, gtol, seed);
        lt_value_free(gy);
        lt_value_free(gdx);
        lt_value_free(gdw);
    }
    omp_set_num_threads(saved);
    tu_free(&fwd);
    tu_free(&gd);
    tu_free(&gf);
    lt_value_free(x);
    lt_value_free(w);
    lt_value_free(dy);
    free(y);
    free(dx);
    free(dw);
}

static void transpose_regions(void **state)
{
    (void)state;
    const cfg cases[] = {
        {"3x3 pad 1 on 2x2", 16, 64, 48, 1, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, true},
        {"3x3 pad 1 on 3x1", 17, 40, 33, 1, {3, 1}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, true},
        {"1x1 kernel on 3x3", 16, 48, 32, 1, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {0, 0, 0, 0}, false, true},
        {"3x3 stride 2 pad 1 on 4x4 (output 7x7, mostly inside)", 16, 32, 32, 1, {4, 4}, {3, 3}, {2, 2}, {1, 1},
         {1, 1, 1, 1}, false, false},
        /* 32 images: ConvTransposeGradData with the images in the lanes */
        {"3x3 pad 1 on 2x2, 36 images", 36, 24, 40, 1, {2, 2}, {3, 3}, {1, 1}, {1, 1}, {1, 1, 1, 1}, false, true},
    };
    for (int i = 0; i < (int)(sizeof cases / sizeof cases[0]); i++)
        run_transpose(&cases[i], 7500 + 10 * (uint64_t)i);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(regions),
        cmocka_unit_test(not_regions),
        cmocka_unit_test(transpose_regions),
        cmocka_unit_test(blocked_few_taps),
        cmocka_unit_test(cols_wide),
        cmocka_unit_test(panels),
        cmocka_unit_test(filter_lanes),
        cmocka_unit_test(images),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
