/* The gradient rules of ad/rules_sampling.c, rules_signal.c, rules_quant.c
 * and rules_generate.c (GridSample, RoiAlign, MaxRoiPool, MaxUnpool, Col2Im, DFT, STFT, DequantizeLinear, Range, OneHot, and the
 * ops registered as carrying no gradient) and the gradient kernels
 * behind them, against central finite differences in float64: a one-node
 * model whose inputs are parameters, the loss sum(op(x) * R) with a fixed
 * random R, random inputs from fixed seeds (kinks are crossed with
 * probability zero: grid points, maxima and folds move continuously), each
 * differentiable input checked. Prints the number of (op, input) pairs and
 * the worst relative error. */
#include "rule_fd_inputs.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXIN 5
#define DQ_TOL 5e-3

typedef struct rcase {
    const char *name;
    lt_op op;
    int opset;
    int nin;
    tu_fd_in in[MAXIN];
    void (*attrs)(tu_graph *g);
    bool zero_grad; /* the gradient is zero almost everywhere */
    double tol;     /* relative error allowed (0: 1e-6) */
    int checks;     /* elements checked per input (0: 200) */
} rcase;

static tu_fd_model model_of(const rcase *rc)
{
    return (tu_fd_model){.name = rc->name,
                         .op = rc->op,
                         .opset = rc->opset,
                         .nin = rc->nin,
                         .nout = 1,
                         .in = rc->in,
                         .attrs = rc->attrs,
                         .seed = 7000 + (uint64_t)rc->op * 104729 + (uint64_t)rc->opset * 17 +
                                 (uint64_t)strlen(rc->name)};
}

/* ---- attribute setters ---- */
static void gs_align(tu_graph *g) { tu_attr_int(g, "align_corners", 1); }
static void gs_border(tu_graph *g) { tu_attr_str(g, "padding_mode", "border"); }
static void gs_reflect(tu_graph *g) { tu_attr_str(g, "padding_mode", "reflection"); }
static void gs_reflect_align(tu_graph *g)
{
    tu_attr_str(g, "padding_mode", "reflection");
    tu_attr_int(g, "align_corners", 1);
}
static void gs_bicubic(tu_graph *g) { tu_attr_str(g, "mode", "bicubic"); }
static void gs_bicubic_border_align(tu_graph *g)
{
    tu_attr_str(g, "mode", "bicubic");
    tu_attr_str(g, "padding_mode", "border");
    tu_attr_int(g, "align_corners", 1);
}
static void gs_bicubic_reflect(tu_graph *g)
{
    tu_attr_str(g, "mode", "bicubic");
    tu_attr_str(g, "padding_mode", "reflection");
}
static void gs_nearest(tu_graph *g) { tu_attr_str(g, "mode", "nearest"); }
static void gs_cubic_reflect_align(tu_graph *g)
{
    tu_attr_str(g, "mode", "cubic");
    tu_attr_str(g, "padding_mode", "reflection");
    tu_attr_int(g, "align_corners", 1);
}
static void gs_linear_border(tu_graph *g)
{
    tu_attr_str(g, "mode", "linear");
    tu_attr_str(g, "padding_mode", "border");
}
static void ra_avg2(tu_graph *g)
{
    tu_attr_int(g, "output_height", 2);
    tu_attr_int(g, "output_width", 3);
    tu_attr_int(g, "sampling_ratio", 2);
}
static void ra_adaptive(tu_graph *g)
{
    tu_attr_int(g, "output_height", 3);
    tu_attr_int(g, "output_width", 2);
    tu_attr_float(g, "spatial_scale", 0.75f);
}
static void ra_max(tu_graph *g)
{
    tu_attr_str(g, "mode", "max");
    tu_attr_int(g, "output_height", 2);
    tu_attr_int(g, "output_width", 2);
    tu_attr_int(g, "sampling_ratio", 2);
}
static void ra_legacy(tu_graph *g)
{
    tu_attr_int(g, "output_height", 2);
    tu_attr_int(g, "output_width", 2);
}
static void mrp(tu_graph *g) { tu_attr_ints(g, "pooled_shape", 2, (int64_t[]){2, 3}); }
static void mrp_scaled(tu_graph *g)
{
    tu_attr_ints(g, "pooled_shape", 2, (int64_t[]){3, 2});
    tu_attr_float(g, "spatial_scale", 0.5f);
}
static void unpool2(tu_graph *g)
{
    tu_attr_ints(g, "kernel_shape", 2, (int64_t[]){2, 2});
    tu_attr_ints(g, "strides", 2, (int64_t[]){2, 2});
}
static void unpool_pads(tu_graph *g)
{
    tu_attr_ints(g, "kernel_shape", 2, (int64_t[]){3, 3});
    tu_attr_ints(g, "strides", 2, (int64_t[]){2, 2});
    tu_attr_ints(g, "pads", 4, (int64_t[]){1, 1, 1, 1});
}
static void c2i_geom(tu_graph *g)
{
    tu_attr_ints(g, "dilations", 2, (int64_t[]){2, 1});
    tu_attr_ints(g, "pads", 4, (int64_t[]){1, 0, 1, 1});
    tu_attr_ints(g, "strides", 2, (int64_t[]){1, 2});
}
static void dft_inverse(tu_graph *g) { tu_attr_int(g, "inverse", 1); }
static void dft_onesided(tu_graph *g) { tu_attr_int(g, "onesided", 1); }
static void dft_axis2(tu_graph *g) { tu_attr_int(g, "axis", 2); }
static void dft_axis2_inverse(tu_graph *g)
{
    tu_attr_int(g, "axis", 2);
    tu_attr_int(g, "inverse", 1);
}
static void dft_irfft(tu_graph *g)
{
    tu_attr_int(g, "inverse", 1);
    tu_attr_int(g, "onesided", 1);
}
static void dft_irfft_axis2(tu_graph *g)
{
    dft_irfft(g);
    tu_attr_int(g, "axis", 2);
}
static void stft_full(tu_graph *g) { tu_attr_int(g, "onesided", 0); }
static void dq_last(tu_graph *g) { tu_attr_int(g, "axis", -1); }
static void oh_axis0(tu_graph *g) { tu_attr_int(g, "axis", 0); }
static void seeded(tu_graph *g) { tu_attr_float(g, "seed", 3.0f); }

#define RNG(lo_, hi_, r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = lo_, .hi = hi_}
#define FROZEN(lo_, hi_, r, ...) {.rank = r, .dims = {__VA_ARGS__}, .lo = lo_, .hi = hi_, .frozen = true}
#define UNPAREN(...) __VA_ARGS__
/* fixed values (repeated) of a frozen input of dtype dt_ and shape d, written (d0, d1...) */
#define VALS(dt_, r, d, n, ...)                                                                                    \
    {.rank = r, .dims = {UNPAREN d}, .dt = dt_, .frozen = true, .nvals = n, .vals = {__VA_ARGS__}}
#define I64S(v) {.rank = 0, .dt = LT_I64, .frozen = true, .nvals = 1, .vals = {v}}
#define ABSENT {.absent = true}
/* unpooling indices: global offsets into the unpooled [1, 2, h, w] tensor */
#define IDX(n, ...) VALS(LT_I64, 4, (1, 2, 2, 3), n, __VA_ARGS__)
#define ROIS4 VALS(LT_F32, 2, (3, 4), 12, 0.5, 0.7, 4.2, 5.1, 1.3, 0.2, 6.4, 3.9, -0.5, 2.0, 3.0, 6.5)
#define BATCH3 VALS(LT_I64, 1, (3), 3, 0, 1, 1)
#define ROIS5 VALS(LT_F32, 2, (3, 5), 15, 0, 0.6, 1.2, 5.3, 4.8, 1, 2.0, 0.4, 6.0, 5.0, 1, 0, 0, 3, 3)
#define SHAPE2(a, b) VALS(LT_I64, 1, (2), 2, a, b)

static const rcase cases[] = {
    /* GridSample-16: X [2, 2, 3, 4], grid [2, 3, 2, 2] reaching past the borders */
    {"GridSample", LT_OP_GRID_SAMPLE, 16, 2, {F(4, 2, 2, 3, 4), RNG(-1.3, 1.3, 4, 2, 3, 2, 2)}},
    {"GridSample.align", LT_OP_GRID_SAMPLE, 16, 2, {F(4, 2, 2, 3, 4), RNG(-1.3, 1.3, 4, 2, 3, 2, 2)}, gs_align},
    {"GridSample.border", LT_OP_GRID_SAMPLE, 16, 2, {F(4, 2, 2, 3, 4), RNG(-1.3, 1.3, 4, 2, 3, 2, 2)}, gs_border},
    {"GridSample.reflection", LT_OP_GRID_SAMPLE, 16, 2, {F(4, 2, 2, 3, 4), RNG(-2.5, 2.5, 4, 2, 3, 2, 2)},
     gs_reflect},
    {"GridSample.reflection_align", LT_OP_GRID_SAMPLE, 16, 2, {F(4, 2, 2, 3, 4), RNG(-2.5, 2.5, 4, 2, 3, 2, 2)},
     gs_reflect_align},
    {"GridSample.bicubic", LT_OP_GRID_SAMPLE, 16, 2, {F(4, 2, 2, 4, 5), RNG(-1.3, 1.3, 4, 2, 3, 2, 2)}, gs_bicubic},
    {"GridSample.bicubic_border_align", LT_OP_GRID_SAMPLE, 16, 2,
     {F(4, 2, 2, 4, 5), RNG(-1.3, 1.3, 4, 2, 3, 2, 2)}, gs_bicubic_border_align},
    {"GridSample.bicubic_reflection", LT_OP_GRID_SAMPLE, 16, 2, {F(4, 1, 2, 4, 5), RNG(-2.5, 2.5, 4, 1, 3, 3, 2)},
     gs_bicubic_reflect},
    {"GridSample.x_only_reflection", LT_OP_GRID_SAMPLE, 16, 2,
     {F(4, 2, 2, 3, 4), FROZEN(-2.5, 2.5, 4, 2, 3, 2, 2)}, gs_reflect},
    {"GridSample.grid_only", LT_OP_GRID_SAMPLE, 16, 2, {FROZEN(-1, 1, 4, 2, 2, 3, 4), RNG(-1.3, 1.3, 4, 2, 3, 2, 2)}},
    {"GridSample.nearest", LT_OP_GRID_SAMPLE, 16, 2, {F(4, 2, 2, 3, 4), FROZEN(-1.3, 1.3, 4, 2, 3, 2, 2)},
     gs_nearest},
    {"GridSample.nearest_grid", LT_OP_GRID_SAMPLE, 16, 2, {FROZEN(-1, 1, 4, 2, 2, 3, 4), RNG(-1.3, 1.3, 4, 2, 3, 2, 2)},
     gs_nearest, .zero_grad = true},
    /* GridSample-20: volumetric and 1-D */
    {"GridSample-20.3d", LT_OP_GRID_SAMPLE, 20, 2, {F(5, 1, 2, 3, 3, 4), RNG(-1.2, 1.2, 5, 1, 2, 2, 2, 3)}},
    {"GridSample-20.3d_cubic_reflection_align", LT_OP_GRID_SAMPLE, 20, 2,
     {F(5, 1, 1, 4, 4, 5), RNG(-2, 2, 5, 1, 2, 1, 2, 3)}, gs_cubic_reflect_align},
    {"GridSample-20.1d_border", LT_OP_GRID_SAMPLE, 20, 2, {F(3, 2, 3, 5), RNG(-1.3, 1.3, 3, 2, 4, 1)},
     gs_linear_border},
    /* large enough for the kernel's threads and (cubic 3-D: 64 taps a point)
     * for its blocks of points; a sampled subset of elements is checked, and
     * the loss, a sum of thousands of terms, rounds more */
    {"GridSample.large", LT_OP_GRID_SAMPLE, 16, 2, {F(4, 1, 4, 20, 25), RNG(-1.1, 1.1, 4, 1, 40, 55, 2)},
     .tol = 1e-5, .checks = 16},
    {"GridSample-20.3d_cubic_blocks", LT_OP_GRID_SAMPLE, 20, 2, {F(5, 1, 2, 6, 6, 6), RNG(-1.1, 1.1, 5, 1, 4, 8, 40, 3)},
     gs_cubic_reflect_align, .tol = 1e-5, .checks = 16},
    /* RoiAlign: X [2, 2, 6, 7], three boxes */
    {"RoiAlign", LT_OP_ROI_ALIGN, 16, 3, {F(4, 2, 2, 6, 7), ROIS4, BATCH3}, ra_avg2},
    {"RoiAlign.adaptive_scaled", LT_OP_ROI_ALIGN, 16, 3, {F(4, 2, 2, 6, 7), ROIS4, BATCH3}, ra_adaptive},
    {"RoiAlign.max", LT_OP_ROI_ALIGN, 16, 3, {F(4, 2, 2, 6, 7), ROIS4, BATCH3}, ra_max},
    {"RoiAlign-10", LT_OP_ROI_ALIGN, 10, 3, {F(4, 2, 2, 6, 7), ROIS4, BATCH3}, ra_legacy},
    /* MaxRoiPool: X [2, 2, 6, 7] */
    {"MaxRoiPool", LT_OP_MAX_ROI_POOL, 1, 2, {F(4, 2, 2, 6, 7), ROIS5}, mrp},
    {"MaxRoiPool.scaled", LT_OP_MAX_ROI_POOL, 1, 2, {F(4, 2, 2, 6, 7), ROIS5}, mrp_scaled},
    /* MaxUnpool: X [1, 2, 2, 3]; position 7 is written twice (the second wins) */
    {"MaxUnpool", LT_OP_MAX_UNPOOL, 11, 2, {F(4, 1, 2, 2, 3), IDX(12, 7, 2, 11, 7, 20, 22, 24, 33, 28, 42, 38, 47)},
     unpool2},
    {"MaxUnpool.output_shape", LT_OP_MAX_UNPOOL, 11, 3,
     {F(4, 1, 2, 2, 3), IDX(12, 7, 2, 11, 7, 20, 22, 24, 33, 28, 42, 38, 47), VALS(LT_I64, 1, (4), 4, 1, 2, 5, 7)},
     unpool2},
    /* kernel 3, stride 2, pads 1: default 3 x 5, output_shape 4 x 4 cuts the last column */
    {"MaxUnpool.pads_output_shape", LT_OP_MAX_UNPOOL, 11, 3,
     {F(4, 1, 2, 2, 3), IDX(12, 0, 2, 6, 8, 12, 13, 15, 16, 22, 26, 27, 25), VALS(LT_I64, 1, (4), 4, 1, 2, 4, 4)},
     unpool_pads},
    /* Col2Im: [2, 2 x 4, 6] -> [2, 2, 3, 4]; then dilated, padded, strided */
    {"Col2Im", LT_OP_COL2_IM, 18, 3, {F(3, 2, 8, 6), SHAPE2(3, 4), SHAPE2(2, 2)}},
    {"Col2Im.geometry", LT_OP_COL2_IM, 18, 3, {F(3, 1, 8, 12), SHAPE2(4, 5), SHAPE2(2, 2)}, c2i_geom},
    /* DFT-17 */
    {"DFT.real", LT_OP_DFT, 17, 1, {F(3, 2, 5, 1)}},
    {"DFT.complex_inverse", LT_OP_DFT, 17, 1, {F(3, 2, 6, 2)}, dft_inverse},
    {"DFT.onesided", LT_OP_DFT, 17, 1, {F(3, 3, 8, 1)}, dft_onesided},
    {"DFT.padded", LT_OP_DFT, 17, 2, {F(3, 2, 5, 1), I64S(7)}},
    {"DFT.cut_axis2", LT_OP_DFT, 17, 2, {F(4, 2, 3, 6, 2), I64S(4)}, dft_axis2},
    {"DFT.cut_axis2_inverse", LT_OP_DFT, 17, 2, {F(4, 2, 3, 6, 1), I64S(5)}, dft_axis2_inverse},
    {"DFT.bluestein", LT_OP_DFT, 17, 1, {F(3, 1, 67, 2)}},
    /* inverse and onesided (irfft): half spectrum in, real signal out; the
     * imaginary parts of bins 0 and n/2 have no effect */
    {"DFT.irfft", LT_OP_DFT, 17, 1, {F(3, 2, 5, 2)}, dft_irfft},
    {"DFT.irfft_odd_cut", LT_OP_DFT, 17, 2, {F(3, 2, 6, 2), I64S(7)}, dft_irfft},
    {"DFT.irfft_axis2_padded", LT_OP_DFT, 17, 2, {F(4, 2, 3, 3, 2), I64S(9)}, dft_irfft_axis2},
    {"DFT.irfft_real_bins", LT_OP_DFT, 17, 1, {F(3, 2, 4, 1)}, dft_irfft},
    /* DFT-20: axis as an input */
    {"DFT-20", LT_OP_DFT, 20, 1, {F(3, 2, 6, 2)}},
    {"DFT-20.axis_length", LT_OP_DFT, 20, 3, {F(4, 2, 3, 5, 1), I64S(8), I64S(2)}, dft_onesided},
    {"DFT-20.axis_only", LT_OP_DFT, 20, 3, {F(4, 2, 6, 3, 2), ABSENT, I64S(-3)}, dft_inverse},
    {"DFT-20.irfft_axis", LT_OP_DFT, 20, 3, {F(4, 2, 4, 3, 2), I64S(6), I64S(1)}, dft_irfft},
    /* STFT: signal, frame_step, window, frame_length */
    {"STFT", LT_OP_STFT, 17, 4, {F(3, 2, 16, 1), I64S(3), F(1, 5), I64S(5)}},
    {"STFT.complex_window_only", LT_OP_STFT, 17, 3, {F(3, 1, 20, 2), I64S(4), F(1, 6)}, stft_full},
    {"STFT.no_window", LT_OP_STFT, 17, 4, {F(3, 2, 13, 1), I64S(2), ABSENT, I64S(4)}},
    /* DequantizeLinear: x_scale. The kernel multiplies in float32 even for a
     * double scale, so differences of its output are float32 rounding; the
     * gradient is checked exactly in exact_dequantize too. */
    {"DequantizeLinear", LT_OP_DEQUANTIZE_LINEAR, 13, 3,
     {VALS(LT_I8, 2, (2, 3), 6, -128, -7, 0, 33, 127, 90), RNG(0.01, 0.03, 0, 0), VALS(LT_I8, 0, (0), 1, 3)},
     .tol = DQ_TOL},
    {"DequantizeLinear.axis", LT_OP_DEQUANTIZE_LINEAR, 13, 3,
     {VALS(LT_U8, 3, (2, 3, 4), 5, 0, 17, 255, 128, 3), RNG(0.01, 0.03, 1, 3), VALS(LT_U8, 1, (3), 3, 128, 0, 9)},
     .tol = DQ_TOL},
    {"DequantizeLinear.last_axis_int32", LT_OP_DEQUANTIZE_LINEAR, 13, 2,
     {VALS(LT_I32, 2, (3, 4), 7, -1000, 5, 77, 0, -3, 12345, 42), RNG(0.01, 0.03, 1, 4)}, dq_last, .tol = DQ_TOL},
    {"DequantizeLinear-10", LT_OP_DEQUANTIZE_LINEAR, 10, 3,
     {VALS(LT_U8, 2, (3, 2), 4, 200, 1, 0, 99), RNG(0.01, 0.03, 0, 0), VALS(LT_U8, 0, (0), 1, 128)}, .tol = DQ_TOL},
    /* Range: start and delta (the length stays put: (5.1 - 0.3) / 0.7 = 6.86) */
    {"Range", LT_OP_RANGE, 11, 3,
     {{.rank = 0, .nvals = 1, .vals = {0.3}}, FROZEN(5.1, 5.1, 0, 0), {.rank = 0, .nvals = 1, .vals = {0.7}}}},
    /* OneHot's values; indices as floats (one out of range: all off) */
    {"OneHot", LT_OP_ONE_HOT, 11, 3, {VALS(LT_F32, 2, (2, 3), 6, 0, 2, -1, 3, 1, 7), I64S(4), F(1, 2)}},
    {"OneHot.axis0", LT_OP_ONE_HOT, 11, 3, {VALS(LT_I64, 1, (5), 5, 1, 0, 2, 2, -3), I64S(3), F(1, 2)}, oh_axis0},
    /* no gradient: the outputs do not depend on the values, or are samples */
    {"EyeLike", LT_OP_EYE_LIKE, 9, 1, {F(2, 3, 4)}, .zero_grad = true},
    {"RandomUniformLike", LT_OP_RANDOM_UNIFORM_LIKE, 1, 1, {F(2, 3, 4)}, seeded, .zero_grad = true},
    {"RandomNormalLike", LT_OP_RANDOM_NORMAL_LIKE, 1, 1, {F(2, 3, 4)}, seeded, .zero_grad = true},
    {"Bernoulli", LT_OP_BERNOULLI, 15, 1, {RNG(0.1, 0.9, 2, 3, 4)}, seeded, .zero_grad = true},
};

static void all_rules(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const rcase *rc = &cases[k];
        tu_fd_model fm = model_of(rc);
        tu_fd_expect ex = {.tol = rc->tol, .checks = rc->checks, .zero_grad = rc->zero_grad, .verbose = true};
        tu_fd_check(&fm, &ex, &t);
    }
    printf("extra gradient rules: %d (op, input) pairs checked by finite differences, worst relative error %.3g "
           "(%s); %.3g where the forward kernel computes in float32\n",
           t.pairs, t.worst, t.worst_at, t.worst_loose);
    assert_int_equal(t.failures, 0);
}

/* DequantizeLinear's scale gradient against sum(R (x - zero_point)) over
 * what each scale element covers, computed here from the parameters; the
 * model runs in float64, so the rule's arithmetic is checked exactly. */
static const lt_tensor *param(const lt_module *m, const char *nm)
{
    for (int i = 0; i < m->nparams; i++)
        if (!strcmp(m->params[i].name, nm))
            return &m->params[i].data;
    return NULL;
}

static void exact_dequantize(void **state)
{
    (void)state;
    int checked = 0;
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const rcase *rc = &cases[k];
        if (rc->op != LT_OP_DEQUANTIZE_LINEAR)
            continue;
        lt_model *m = NULL;
        lt_session *ss = NULL;
        lt_err err;
        lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
        tu_fd_model fm = model_of(rc);
        lt_status s = tu_fd_build(&fm, &m, &err);
        if (s == LT_OK)
            s = lt_ir_to_f64(m, &err);
        /* the parameters before the transform: it keeps them by name */
        if (s == LT_OK)
            s = lt_model_grad(m, &o, &err);
        if (s == LT_OK)
            s = lt_session_new(m, &ss, &err);
        int nout = s == LT_OK ? lt_model_num_outputs(m) : 0;
        lt_value *outs[8] = {0};
        if (s == LT_OK && nout <= 8)
            s = lt_session_run(ss, 0, NULL, NULL, outs, &err);
        if (s != LT_OK)
            printf("FAIL %s: %s\n", rc->name, err.msg);
        assert_int_equal(s, LT_OK);
        const lt_tensor *x = param(m, "p0"), *sc = param(m, "p1"), *zp = param(m, "p2"), *r = param(m, "R");
        assert_non_null(x);
        assert_non_null(sc);
        assert_non_null(r);
        const lt_tensor *g = NULL;
        for (int i = 0; i < nout; i++)
            if (!strcmp(lt_model_output_name(m, i), "p1_grad"))
                g = lt_value_tensor(outs[i]);
        assert_non_null(g);
        assert_int_equal(g->numel, sc->numel);
        /* per axis: the channel is the index along the axis */
        int64_t inner = 1, nch = sc->numel;
        if (nch > 1) {
            int64_t axis = rc->attrs == dq_last ? x->rank - 1 : 1;
            for (int d = (int)axis + 1; d < x->rank; d++)
                inner *= x->dims[d];
        }
        double want[8] = {0};
        for (int64_t i = 0; i < x->numel; i++) {
            int64_t ch = nch > 1 ? (i / inner) % nch : 0;
            double z = zp ? lt_tensor_get_f64(zp, ch) : 0;
            want[ch] += lt_tensor_get_f64(r, i) * (lt_tensor_get_f64(x, i) - z);
        }
        for (int64_t ch = 0; ch < nch; ch++) {
            double got = lt_tensor_get_f64(g, ch);
            if (fabs(got - want[ch]) > 1e-9 * (1 + fabs(want[ch])))
                printf("FAIL %s: d scale[%lld] = %.12g, expected %.12g\n", rc->name, (long long)ch, got, want[ch]);
            assert_true(fabs(got - want[ch]) <= 1e-9 * (1 + fabs(want[ch])));
            checked++;
        }
        for (int i = 0; i < nout; i++)
            lt_value_free(outs[i]);
        lt_session_free(ss);
        lt_model_free(m);
    }
    printf("DequantizeLinear: %d scale gradients exact\n", checked);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(all_rules), cmocka_unit_test(exact_dequantize)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
