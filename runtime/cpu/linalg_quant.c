/* Quantized linear algebra: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, MatMulInteger, QLinearMatMul. Rounding is to
 * nearest, ties to even (rintf in the default rounding mode), and the
 * arithmetic is float like the reference runtimes'. */
#include "linalg_util.h"
#include <math.h>

static bool qrange(lt_dtype t, double *lo, double *hi)
{
    switch (t) {
    case LT_U8: *lo = 0; *hi = 255; return true;
    case LT_I8: *lo = -128; *hi = 127; return true;
    case LT_U16: *lo = 0; *hi = 65535; return true;
    case LT_I16: *lo = -32768; *hi = 32767; return true;
    case LT_U4: *lo = 0; *hi = 15; return true;
    case LT_I4: *lo = -8; *hi = 7; return true;
    case LT_U2: *lo = 0; *hi = 3; return true;
    case LT_I2: *lo = -2; *hi = 1; return true;
    default: return false;
    }
}

static float quantize1(float x, float scale, float zp, float lo, float hi)
{
    float v = rintf(x / scale) + zp;
    if (v != v)
        return zp < lo ? lo : zp > hi ? hi : zp;
    return v < lo ? lo : v > hi ? hi : v;
}

/* the float types QuantizeLinear rounds to through Cast's rules (e8m0 is a
 * scale type only) */
static bool qfloat(lt_dtype t) { return lt_dtype_is_narrow_float(t) && t != LT_F8E8M0; }

/* v rounded to the precision the division is done in. The quotient of two
 * values of at most 24 significant bits, rounded to double and then to
 * float32, float16 or bfloat16, equals the quotient rounded there directly
 * (53 >= 2*24+2): no double rounding. */
static double to_precision(lt_dtype p, double v)
{
    switch (p) {
    case LT_F32: return (float)v;
    case LT_F16: return lt_f16_to_f32(lt_f32_to_f16((float)v));
    case LT_BF16: return lt_bf16_to_f32(lt_f32_to_bf16((float)v));
    default: return v; /* float64, and integer scales as the reference divides them */
    }
}

/* Where element i of x finds its scale and zero point in (De)QuantizeLinear:
 * one for the tensor, one per index along axis, or (block_size > 0, opset
 * 21) one per block of block_size indices along axis, the scale then
 * having x's rank with ceil(dims[axis] / block_size) there. */
typedef struct qmap {
    int mode;                /* 0 per tensor, 1 per axis, 2 blocked */
    int64_t inner, A, SA, bs; /* elements after axis, axis size, scale's axis size, block size */
} qmap;

static int64_t qidx(const qmap *q, int64_t i)
{
    if (q->mode == 0)
        return 0;
    int64_t a = (i / q->inner) % q->A;
    if (q->mode == 1)
        return a;
    int64_t o = i / (q->inner * q->A), r = i % q->inner;
    return (o * q->SA + a / q->bs) * q->inner + r;
}

static lt_status qaxis(lt_kctx *k, const lt_tensor *x, const lt_tensor *scale, const lt_tensor *zp, qmap *q)
{
    if (zp && zp->numel != scale->numel)
        return lt_k_fail(k, LT_ERR_RUNTIME, "scale has %lld elements but zero point %lld", (long long)scale->numel,
                         (long long)zp->numel);
    *q = (qmap){.mode = 0, .inner = 1, .A = 1, .SA = 1, .bs = 1};
    int64_t bs = lt_attr_int(k->node, "block_size", 0);
    if (scale->numel == 1 && scale->rank <= 1 && bs <= 0)
        return LT_OK;
    if (bs < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "block_size %lld is negative", (long long)bs);
    if (bs == 0 && scale->rank != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "scale of rank %d needs block_size (block quantization)", scale->rank);
    int64_t axis = lt_attr_int(k->node, "axis", 1);
    if (axis < 0)
        axis += x->rank;
    if (axis < 0 || axis >= x->rank)
        return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d",
                         (long long)lt_attr_int(k->node, "axis", 1), x->rank);
    q->A = x->dims[axis];
    for (int d = (int)axis + 1; d < x->rank; d++)
        q->inner *= x->dims[d];
    if (bs > 0) {
        if (scale->rank != x->rank || (zp && zp->rank != x->rank))
            return lt_k_fail(k, LT_ERR_RUNTIME, "block quantization needs a scale of x's rank %d, got %d", x->rank,
                             scale->rank);
        for (int d = 0; d < x->rank; d++) {
            int64_t want = d == axis ? (x->dims[d] > 0 ? (x->dims[d] - 1) / bs + 1 : 0) : x->dims[d];
            if (scale->dims[d] != want || (zp && zp->dims[d] != want))
                return lt_k_fail(k, LT_ERR_RUNTIME, "scale dim %d is %lld, blocks of %lld need %lld", d,
                                 (long long)scale->dims[d], (long long)bs, (long long)want);
        }
        q->mode = 2;
        q->SA = scale->dims[axis];
        q->bs = bs;
        return LT_OK;
    }
    if (x->dims[axis] != scale->numel)
        return lt_k_fail(k, LT_ERR_RUNTIME, "scale has %lld elements but axis %lld has size %lld",
                         (long long)scale->numel, (long long)axis, (long long)x->dims[axis]);
    q->mode = 1;
    return LT_OK;
}

static lt_status quantize_linear(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *scale = lt_k_in(k, 1), *zp = lt_k_in(k, 2);
    if (!x || !scale)
        return lt_k_fail(k, LT_ERR_INVALID, "QuantizeLinear needs x and y_scale");
    int64_t odt = lt_attr_int(k->node, "output_dtype", 0); /* opset 21: the type without a zero point */
    lt_dtype ot = zp ? zp->dtype : odt > 0 && odt < LT_DTYPE_COUNT ? (lt_dtype)odt : LT_U8;
    if (zp && odt > 0 && odt != zp->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "output_dtype %lld differs from the zero point's %s", (long long)odt,
                         lt_dtype_name(zp->dtype));
    double lo = 0, hi = 0;
    bool to_int = qrange(ot, &lo, &hi);
    if (!to_int && !qfloat(ot))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "quantizing to %s is not supported", lt_dtype_name(ot));
    /* opset 25: the division's precision, else the scale's type */
    int64_t prec = lt_attr_int(k->node, "precision", 0);
    lt_dtype pt = prec > 0 && prec < LT_DTYPE_COUNT ? (lt_dtype)prec : scale->dtype;
    if (prec && pt != LT_F32 && pt != LT_F16 && pt != LT_BF16 && pt != LT_F64)
        return lt_k_fail(k, LT_ERR_RUNTIME, "precision %lld is not a float type", (long long)prec);
    bool saturate = lt_attr_int(k->node, "saturate", 1) != 0;
    qmap qm;
    lt_status s = qaxis(k, x, scale, zp, &qm);
    int64_t nch = scale->numel;
    if (s != LT_OK)
        return s;
    lt_tensor *y;
    s = lt_k_out(k, 0, ot, x->rank, x->dims, &y);
    if (s != LT_OK)
        return s;
    double *sc = lt_k_scratch(k, sizeof *sc * (size_t)nch), *z = lt_k_scratch(k, sizeof *z * (size_t)nch);
    if (!sc || !z)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t c = 0; c < nch; c++) {
        sc[c] = to_precision(pt, lt_tensor_get_f64(scale, c));
        z[c] = zp ? lt_tensor_get_f64(zp, c) : 0.0;
    }
    const float *xf = x->dtype == LT_F32 ? x->data : NULL;
#pragma omp parallel for if (x->numel > 32768)
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = qidx(&qm, i);
        double v = to_precision(pt, xf ? xf[i] : lt_tensor_get_f64(x, i));
        double q = to_precision(pt, v / sc[c]);
        if (!to_int) { /* Cast's rules: round to nearest even, saturate or not */
            ((uint8_t *)y->data)[i] = lt_f64_to_narrow(ot, q + z[c], saturate, LT_ROUND_UP);
            continue;
        }
        q = rint(q) + z[c];
        if (q != q) /* x/0 of 0, or a NaN x: the zero point */
            q = z[c];
        q = q < lo ? lo : q > hi ? hi : q;
        if (ot == LT_U8)
            ((uint8_t *)y->data)[i] = (uint8_t)q;
        else if (ot == LT_I8)
            ((int8_t *)y->data)[i] = (int8_t)q;
        else
            lt_tensor_set_i64(y, i, (int64_t)q);
    }
    return LT_OK;
}

static lt_status dequantize_linear(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *scale = lt_k_in(k, 1), *zp = lt_k_in(k, 2);
    if (!x || !scale)
        return lt_k_fail(k, LT_ERR_INVALID, "DequantizeLinear needs x and x_scale");
    bool xfloat = qfloat(x->dtype);
    if (!lt_dtype_is_int(x->dtype) && !lt_dtype_is_narrow_int(x->dtype) && !xfloat)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "dequantizing %s is not supported", lt_dtype_name(x->dtype));
    if (!lt_dtype_is_float(scale->dtype) && scale->dtype != LT_F8E8M0)
        return lt_k_fail(k, LT_ERR_INVALID, "x_scale must be a float tensor");
    if (zp && zp->dtype != x->dtype)
        return lt_k_fail(k, LT_ERR_RUNTIME, "x_zero_point is %s but x is %s", lt_dtype_name(zp->dtype),
                         lt_dtype_name(x->dtype));
    /* opset 23: output_dtype, else the scale's type */
    int64_t odt = lt_attr_int(k->node, "output_dtype", 0);
    lt_dtype ot = odt > 0 && odt < LT_DTYPE_COUNT ? (lt_dtype)odt : scale->dtype;
    if (!lt_dtype_is_float(ot))
        return lt_k_fail(k, LT_ERR_RUNTIME, "the output would be %s (a float8e8m0 scale needs output_dtype)",
                         lt_dtype_name(ot));
    qmap qm;
    lt_status s = qaxis(k, x, scale, zp, &qm);
    int64_t nch = scale->numel;
    if (s != LT_OK)
        return s;
    lt_tensor *y;
    s = lt_k_out(k, 0, ot, x->rank, x->dims, &y);
    if (s != LT_OK)
        return s;
    float *sc = lt_k_scratch(k, sizeof *sc * (size_t)nch);
    double *z = lt_k_scratch(k, sizeof *z * (size_t)nch), *sc64 = lt_k_scratch(k, sizeof *sc64 * (size_t)nch);
    if (!sc || !z || !sc64)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t c = 0; c < nch; c++) {
        sc64[c] = lt_tensor_get_f64(scale, c);
        sc[c] = (float)sc64[c]; /* e8m0 2^-127 .. 2^127: float holds every one */
        z[c] = zp ? lt_tensor_get_f64(zp, c) : 0;
    }
    float *yf = y->dtype == LT_F32 ? y->data : NULL;
    /* a float64 output (a model widened by grad --f64) multiplies in float64 */
    bool wide = y->dtype == LT_F64;
#pragma omp parallel for if (x->numel > 32768)
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = qidx(&qm, i);
        double d = xfloat ? lt_tensor_get_f64(x, i) - z[c] : (double)(lt_tensor_get_i64(x, i) - (int64_t)z[c]);
        if (wide) {
            ((double *)y->data)[i] = d * sc64[c];
            continue;
        }
        float v = (float)d * sc[c];
        if (yf)
            yf[i] = v;
        else
            lt_tensor_set_f64(y, i, v);
    }
    return LT_OK;
}

static lt_status dynamic_quantize_linear(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x || x->dtype != LT_F32)
        return lt_k_fail(k, LT_ERR_INVALID, "DynamicQuantizeLinear needs a float32 input");
    const float *xf = x->data;
    /* the range always includes 0 so that 0 is exact */
    float mn = 0.0f, mx = 0.0f;
    for (int64_t i = 0; i < x->numel; i++) {
        if (xf[i] < mn)
            mn = xf[i];
        if (xf[i] > mx)
            mx = xf[i];
    }
    float scale = (mx - mn) / 255.0f;
    float zp = 0.0f;
    if (scale > 0) {
        zp = rintf((0.0f - mn) / scale);
        zp = zp < 0 ? 0 : zp > 255 ? 255 : zp;
    }
    lt_tensor *y, *ys, *yz;
    lt_status s = lt_k_out(k, 0, LT_U8, x->rank, x->dims, &y);
    if (s == LT_OK)
        s = lt_k_out(k, 1, LT_F32, 0, NULL, &ys);
    if (s == LT_OK)
        s = lt_k_out(k, 2, LT_U8, 0, NULL, &yz);
    if (s != LT_OK)
        return s;
    *(float *)ys->data = scale;
    *(uint8_t *)yz->data = (uint8_t)zp;
    uint8_t *yq = y->data;
#pragma omp parallel for if (x->numel > 32768)
    for (int64_t i = 0; i < x->numel; i++)
        yq[i] = scale > 0 ? (uint8_t)quantize1(xf[i], scale, zp, 0, 255) : (uint8_t)zp;
    return LT_OK;
}

/* Zero point (or scale) layout for a matrix operand: one value, one per row
 * (or column) shared by all matrices, or one per matrix and row. */
static lt_status qparam_mode(lt_kctx *k, const lt_tensor *p, const char *what, int64_t per, int64_t nmat,
                             int *mode)
{
    if (!p || p->numel == 1)
        *mode = 0;
    else if (p->numel == per)
        *mode = 1;
    else if (p->numel == per * nmat)
        *mode = 2;
    else
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s has %lld elements (expected 1, %lld or %lld)", what,
                         (long long)p->numel, (long long)per, (long long)(per * nmat));
    return LT_OK;
}

static double qparam(const lt_tensor *p, int mode, int64_t mat, int64_t idx, int64_t per, bool as_int)
{
    if (!p)
        return as_int ? 0.0 : 1.0;
    int64_t i = mode == 0 ? 0 : mode == 1 ? idx : mat * per + idx;
    return as_int && !qfloat(p->dtype) ? (double)lt_tensor_get_i64(p, i) : lt_tensor_get_f64(p, i);
}

/* an operand's element: integers exactly, float8 (QLinearMatMul, opset 21)
 * by value */
static double qvalue(const lt_tensor *t, int64_t i)
{
    return qfloat(t->dtype) ? lt_tensor_get_f64(t, i) : (double)lt_tensor_get_i64(t, i);
}

/* acc = (A - za) x (B - zb) in double (exact for 8-bit operands), written
 * as nb matrices of [M, N]. Scales sa/sb (or NULL) are checked too. */
static lt_status int_matmul(lt_kctx *k, const lt_tensor *A, const lt_tensor *za, const lt_tensor *sa,
                            const lt_tensor *B, const lt_tensor *zb, const lt_tensor *sb, lt_mm_shape *s,
                            double **acc, int *msa, int *msb)
{
    char why[256];
    if (!lt_mm_shape_of(A, B, s, why, sizeof why))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s", why);
    bool f8 = sa != NULL; /* QLinearMatMul takes float8 operands too */
    if (!(lt_dtype_is_int(A->dtype) || (f8 && qfloat(A->dtype))) ||
        !(lt_dtype_is_int(B->dtype) || (f8 && qfloat(B->dtype))))
        return lt_k_fail(k, LT_ERR_INVALID, "operands must be integer%s tensors", f8 ? " or float8" : "");
    int64_t M = s->M, N = s->N, K = s->K;
    int64_t na = M * K != 0 ? A->numel / (M * K) : 0, nbm = K * N != 0 ? B->numel / (K * N) : 0;
    int mza = 0, mzb = 0;
    lt_status st = qparam_mode(k, za, "A's zero point", M, na, &mza);
    if (st == LT_OK)
        st = qparam_mode(k, zb, "B's zero point", N, nbm, &mzb);
    if (st == LT_OK && sa)
        st = qparam_mode(k, sa, "A's scale", M, na, msa);
    if (st == LT_OK && sb)
        st = qparam_mode(k, sb, "B's scale", N, nbm, msb);
    if (st != LT_OK)
        return st;
    if (!lt_linalg_blas_ok(M, N, K))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "matrix sizes exceed BLAS's int range");
    double *a = lt_k_scratch(k, sizeof *a * (size_t)A->numel);
    double *b = lt_k_scratch(k, sizeof *b * (size_t)B->numel);
    *acc = lt_k_scratch(k, sizeof **acc * (size_t)(s->nb * M * N));
    int64_t *off = lt_k_scratch(k, sizeof *off * 3 * (size_t)s->nb);
    if (!a || !b || !*acc || !off)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < A->numel; i++) {
        int64_t mat = i / (M * K), row = (i / K) % M;
        a[i] = qvalue(A, i) - qparam(za, mza, mat, row, M, true);
    }
    for (int64_t i = 0; i < B->numel; i++) {
        int64_t mat = i / (K * N), col = i % N;
        b[i] = qvalue(B, i) - qparam(zb, mzb, mat, col, N, true);
    }
    for (int64_t i = 0; i < s->nb; i++) {
        int64_t ia, ib;
        lt_mm_batch_index(s, i, &ia, &ib);
        off[i] = ia * M * K;
        off[s->nb + i] = ib * K * N;
        off[2 * s->nb + i] = i * M * N;
    }
    lt_linalg_gemm_batched(LT_F64, false, false, M, N, K, 1.0, a, K, off, b, N, off + s->nb, 0.0, *acc, N,
                           off + 2 * s->nb, s->nb);
    return LT_OK;
}

static lt_status matmul_integer(lt_kctx *k)
{
    const lt_tensor *A = lt_k_in(k, 0), *B = lt_k_in(k, 1), *za = lt_k_in(k, 2), *zb = lt_k_in(k, 3);
    if (!A || !B)
        return lt_k_fail(k, LT_ERR_INVALID, "MatMulInteger needs A and B");
    lt_mm_shape s;
    double *acc;
    lt_status st = int_matmul(k, A, za, NULL, B, zb, NULL, &s, &acc, NULL, NULL);
    if (st != LT_OK)
        return st;
    lt_tensor *Y;
    st = lt_k_out(k, 0, LT_I32, s.out_rank, s.out_dims, &Y);
    if (st != LT_OK)
        return st;
    int32_t *y = Y->data;
    for (int64_t i = 0; i < Y->numel; i++)
        y[i] = (int32_t)(uint32_t)(uint64_t)(int64_t)acc[i]; /* wraps like 32-bit accumulation */
    return LT_OK;
}

static lt_status qlinear_matmul(lt_kctx *k)
{
    const lt_tensor *A = lt_k_in(k, 0), *sa = lt_k_in(k, 1), *za = lt_k_in(k, 2), *B = lt_k_in(k, 3),
                    *sb = lt_k_in(k, 4), *zb = lt_k_in(k, 5), *sy = lt_k_in(k, 6), *zy = lt_k_in(k, 7);
    if (!A || !sa || !B || !sb || !sy)
        return lt_k_fail(k, LT_ERR_INVALID, "QLinearMatMul needs a, a_scale, b, b_scale and y_scale");
    lt_dtype ot = zy ? zy->dtype : A->dtype; /* the reference's rule without a zero point */
    double lo = 0, hi = 0;
    bool to_float = qfloat(ot) && ot != LT_F4E2M1 && (lt_dtype_size(ot) == 1);
    if ((ot != LT_U8 && ot != LT_I8 && !to_float) || (!to_float && !qrange(ot, &lo, &hi)))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "output type %s is not supported", lt_dtype_name(ot));
    if (sy->numel != 1 || (zy && zy->numel != 1))
        return lt_k_fail(k, LT_ERR_RUNTIME, "y_scale and y_zero_point must be scalars");
    lt_mm_shape s;
    double *acc;
    int msa = 0, msb = 0;
    lt_status st = int_matmul(k, A, za, sa, B, zb, sb, &s, &acc, &msa, &msb);
    if (st != LT_OK)
        return st;
    lt_tensor *Y;
    st = lt_k_out(k, 0, ot, s.out_rank, s.out_dims, &Y);
    if (st != LT_OK)
        return st;
    float ys = (float)lt_tensor_get_f64(sy, 0), yz = zy ? (float)qvalue(zy, 0) : 0.0f;
    int64_t M = s.M, N = s.N, K = s.K;
    int64_t na = M * K != 0 ? A->numel / (M * K) : 1, nbm = K * N != 0 ? B->numel / (K * N) : 1;
    for (int64_t bi = 0; bi < s.nb; bi++) {
        int64_t ia, ib;
        lt_mm_batch_index(&s, bi, &ia, &ib);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                float as = (float)qparam(sa, msa, ia < na ? ia : 0, i, M, false);
                float bs = (float)qparam(sb, msb, ib < nbm ? ib : 0, j, N, false);
                float mult = as * bs / ys;
                int64_t o = (bi * M + i) * N + j;
                if (to_float) { /* Cast's rules, saturating */
                    ((uint8_t *)Y->data)[o] = lt_f64_to_narrow(ot, (double)((float)acc[o] * mult) + yz, true,
                                                               LT_ROUND_UP);
                    continue;
                }
                float q = quantize1((float)acc[o] * mult, 1.0f, yz, (float)lo, (float)hi);
                lt_tensor_set_i64(Y, o, (int64_t)q);
            }
    }
    return LT_OK;
}

void lt_linalg_register_quant(lt_kernel_fn *tab)
{
    tab[LT_OP_QUANTIZE_LINEAR] = quantize_linear;
    tab[LT_OP_DEQUANTIZE_LINEAR] = dequantize_linear;
    tab[LT_OP_DYNAMIC_QUANTIZE_LINEAR] = dynamic_quantize_linear;
    tab[LT_OP_MAT_MUL_INTEGER] = matmul_integer;
    tab[LT_OP_Q_LINEAR_MAT_MUL] = qlinear_matmul;
}
