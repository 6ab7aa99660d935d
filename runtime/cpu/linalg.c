/* CPU kernels: linalg family. MatMul (and MatMulTrans), Gemm and Det here; Einsum in
 * linalg_einsum.c, the quantized ops in linalg_quant.c. */
#include "linalg_util.h"
#include <math.h>
#include <omp.h>
#include <string.h>

/* Integer products by loops: operands widened to int64, sums wrap like the
 * element type does (unsigned arithmetic, truncated on store). */
static lt_status mm_int(lt_kctx *k, const lt_mm_shape *s, const lt_tensor *A, const lt_tensor *B, lt_tensor *Y)
{
    uint64_t *a = lt_k_scratch(k, (size_t)A->numel * sizeof *a);
    uint64_t *b = lt_k_scratch(k, (size_t)B->numel * sizeof *b);
    if (!a || !b)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < A->numel; i++)
        a[i] = (uint64_t)lt_tensor_get_i64(A, i);
    for (int64_t i = 0; i < B->numel; i++)
        b[i] = (uint64_t)lt_tensor_get_i64(B, i);
    int64_t M = s->M, N = s->N, K = s->K;
#pragma omp parallel for if (Y->numel * K > 32768)
    for (int64_t bi = 0; bi < s->nb; bi++) {
        int64_t ia, ib;
        lt_mm_batch_index(s, bi, &ia, &ib);
        const uint64_t *pa = a + ia * M * K, *pb = b + ib * K * N;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                uint64_t acc = 0;
                for (int64_t x = 0; x < K; x++)
                    acc += pa[i * K + x] * pb[x * N + j];
                lt_tensor_set_i64(Y, (bi * M + i) * N + j, (int64_t)acc);
            }
    }
    return LT_OK;
}

/* Float products through BLAS, y = alpha op(a) op(b); dt is LT_F32 or
 * LT_F64 and a, b, y hold it. ta / tb: each matrix of A is stored [K, M] /
 * of B [N, K] (MatMulTrans). */
static lt_status mm_blas(lt_kctx *k, const lt_mm_shape *s, lt_dtype dt, bool ta, bool tb, double alpha,
                         const void *a, const void *b, void *y, int64_t nmat_a, int64_t nmat_b)
{
    int64_t M = s->M, N = s->N, K = s->K;
    if (!lt_linalg_blas_ok(M, N, K))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "matrix sizes exceed BLAS's int range");
    int64_t lda = ta ? M : K, ldb = tb ? K : N;
    /* B is one matrix and A holds every batch in order: one tall product */
    if (!ta && nmat_b == 1 && nmat_a == s->nb && lt_linalg_blas_ok(s->nb * M, N, K)) {
        lt_linalg_gemm(dt, false, tb, s->nb * M, N, K, alpha, a, lda, b, ldb, 0.0, y, N);
        return LT_OK;
    }
    int64_t *off = lt_k_scratch(k, (size_t)s->nb * 3 * sizeof *off);
    if (!off)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < s->nb; i++) {
        int64_t ia, ib;
        lt_mm_batch_index(s, i, &ia, &ib);
        off[i] = ia * M * K;
        off[s->nb + i] = ib * K * N;
        off[2 * s->nb + i] = i * M * N;
    }
    lt_linalg_gemm_batched(dt, ta, tb, M, N, K, alpha, a, lda, off, b, ldb, off + s->nb, 0.0, y, N, off + 2 * s->nb,
                           s->nb);
    return LT_OK;
}

/* MatMul, and MatMulTrans (ta / tb: the last two axes of A / B swapped
 * first; float32 and float64, operands of rank 2 or more; the product
 * times alpha, ir/fold_scale.h) */
static lt_status matmul_of(lt_kctx *k, bool ta, bool tb, double alpha)
{
    const lt_tensor *A = lt_k_in(k, 0), *B = lt_k_in(k, 1);
    if (!A || !B)
        return lt_k_fail(k, LT_ERR_INVALID, "needs two tensor inputs");
    if (A->dtype != B->dtype)
        return lt_k_fail(k, LT_ERR_INVALID, "operand types differ (%s and %s)", lt_dtype_name(A->dtype),
                         lt_dtype_name(B->dtype));
    lt_dtype dt = A->dtype;
    if (!lt_dtype_is_float(dt) && !lt_dtype_is_int(dt))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "MatMul of %s is not supported", lt_dtype_name(dt));
    if ((ta || tb) && dt != LT_F32 && dt != LT_F64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "transposed operands of %s are not supported", lt_dtype_name(dt));
    if (alpha != 1.0 && !lt_dtype_is_float(dt))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "alpha on %s operands is not supported", lt_dtype_name(dt));
    if ((ta && A->rank < 2) || (tb && B->rank < 2))
        return lt_k_fail(k, LT_ERR_RUNTIME, "a transposed operand must have rank 2 or more (ranks %d and %d)",
                         A->rank, B->rank);
    /* the shapes the product sees: the stored ones with the swaps */
    lt_tensor va = *A, vb = *B;
    if (ta) {
        va.dims[A->rank - 2] = A->dims[A->rank - 1];
        va.dims[A->rank - 1] = A->dims[A->rank - 2];
    }
    if (tb) {
        vb.dims[B->rank - 2] = B->dims[B->rank - 1];
        vb.dims[B->rank - 1] = B->dims[B->rank - 2];
    }
    lt_mm_shape s;
    char why[256];
    if (!lt_mm_shape_of(&va, &vb, &s, why, sizeof why))
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s", why);
    lt_tensor *Y;
    lt_status st = lt_k_out(k, 0, dt, s.out_rank, s.out_dims, &Y);
    if (st != LT_OK || Y->numel == 0)
        return st;
    int64_t na = s.M * s.K != 0 ? A->numel / (s.M * s.K) : 0, nbm = s.K * s.N != 0 ? B->numel / (s.K * s.N) : 0;
    if (s.K == 0) {
        memset(Y->data, 0, lt_tensor_nbytes(Y));
        return LT_OK;
    }
    if (dt == LT_F32 || dt == LT_F64)
        return mm_blas(k, &s, dt, ta, tb, alpha, A->data, B->data, Y->data, na, nbm);
    if (lt_dtype_is_int(dt))
        return mm_int(k, &s, A, B, Y);
    /* half types: compute in float, round once at the end */
    const float *a = lt_linalg_as_f32(k, A), *b = lt_linalg_as_f32(k, B);
    float *y = lt_k_scratch(k, (size_t)Y->numel * sizeof *y);
    if (!a || !b || !y)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    st = mm_blas(k, &s, LT_F32, false, false, alpha, a, b, y, na, nbm);
    for (int64_t i = 0; i < Y->numel && st == LT_OK; i++)
        lt_tensor_set_f64(Y, i, y[i]);
    return st;
}

static lt_status matmul(lt_kctx *k) { return matmul_of(k, false, false, 1.0); }

/* One operand of a product with views (ir/fold_heads.h): its [B, H, R, C]
 * stored matrices, each starting at off[b * H + h] with row stride *ld,
 * read from x as viewed by v (6 ints, NULL: x itself of rank 4) */
typedef struct mm_side {
    int64_t B, H, R, C, ld;
} mm_side;

static lt_status view_side(lt_kctx *k, const char *name, const lt_tensor *x, const int64_t *v, int vl, mm_side *s)
{
    if (!v) {
        if (x->rank != 4)
            return lt_k_fail(k, LT_ERR_RUNTIME, "an operand without %s must have rank 4 here (rank %d)", name,
                             x->rank);
        *s = (mm_side){x->dims[0], x->dims[1], x->dims[2], x->dims[3], x->dims[3]};
        return LT_OK;
    }
    if (vl != 6 || x->rank < 1)
        return lt_k_fail(k, LT_ERR_INVALID, "%s must hold 6 integers over a tensor of rank 1 or more", name);
    int64_t H = v[0], R = v[1], C = v[2], off = v[3], sh = v[4], sr = v[5];
    int64_t per = x->dims[0] ? x->numel / x->dims[0] : 0;
    if (H < 1 || R < 1 || C < 1 || off < 0 || sh < 0 || sr < 1 || off + (H - 1) * sh + (R - 1) * sr + C > per)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%s [%lld, %lld, %lld] at %lld (strides %lld, %lld) leaves a sample of "
                         "%lld elements", name, (long long)H, (long long)R, (long long)C, (long long)off,
                         (long long)sh, (long long)sr, (long long)per);
    *s = (mm_side){x->dims[0], H, R, C, sr};
    return LT_OK;
}

/* MatMulTrans with viewA / viewB / viewY (ir/fold_heads.h): the batched
 * product over [B, H] of matrices read and written in place in strided
 * storage (attention's heads inside the projections' rows) */
static lt_status matmul_views(lt_kctx *k, bool ta, bool tb, double alpha)
{
    const lt_tensor *A = lt_k_in(k, 0), *B = lt_k_in(k, 1);
    if (!A || !B)
        return lt_k_fail(k, LT_ERR_INVALID, "needs two tensor inputs");
    if (A->dtype != B->dtype || (A->dtype != LT_F32 && A->dtype != LT_F64))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "views need float32 or float64 operands of one type (%s and %s)",
                         lt_dtype_name(A->dtype), lt_dtype_name(B->dtype));
    int la = 0, lb = 0;
    const int64_t *va = lt_attr_ints(k->node, "viewA", &la), *vb = lt_attr_ints(k->node, "viewB", &lb);
    bool vy = lt_attr_int(k->node, "viewY", 0) != 0;
    mm_side sa, sb;
    lt_status st = view_side(k, "viewA", A, va, la, &sa);
    if (st == LT_OK)
        st = view_side(k, "viewB", B, vb, lb, &sb);
    if (st != LT_OK)
        return st;
    int64_t M = ta ? sa.C : sa.R, K = ta ? sa.R : sa.C, kb = tb ? sb.C : sb.R, N = tb ? sb.R : sb.C;
    if (sa.B != sb.B || sa.H != sb.H || K != kb)
        return lt_k_fail(k, LT_ERR_RUNTIME, "operands [%lld, %lld, %lld, %lld] and [%lld, %lld, %lld, %lld] (as "
                         "transposed) do not multiply", (long long)sa.B, (long long)sa.H, (long long)M, (long long)K,
                         (long long)sb.B, (long long)sb.H, (long long)kb, (long long)N);
    int64_t nb = sa.B * sa.H, H = sa.H;
    int64_t yd[4] = {sa.B, vy ? M : H, vy ? H : M, N};
    lt_tensor *Y;
    st = lt_k_out(k, 0, A->dtype, 4, yd, &Y);
    if (st != LT_OK || Y->numel == 0)
        return st;
    if (K == 0) {
        memset(Y->data, 0, lt_tensor_nbytes(Y));
        return LT_OK;
    }
    if (!lt_linalg_blas_ok(M, N, K) || !lt_linalg_blas_ok(sa.ld, sb.ld, H * N))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "matrix sizes exceed BLAS's int range");
    int64_t *off = lt_k_scratch(k, (size_t)nb * 3 * sizeof *off);
    if (!off)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    int64_t pa = A->numel / sa.B, pb = B->numel / sb.B;
    for (int64_t b = 0; b < sa.B; b++)
        for (int64_t h = 0; h < H; h++) {
            int64_t i = b * H + h;
            off[i] = va ? b * pa + va[3] + h * va[4] : i * sa.R * sa.C;
            off[nb + i] = vb ? b * pb + vb[3] + h * vb[4] : i * sb.R * sb.C;
            off[2 * nb + i] = vy ? (b * M * H + h) * N : i * M * N;
        }
    lt_linalg_gemm_batched(A->dtype, ta, tb, M, N, K, alpha, A->data, sa.ld, off, B->data, sb.ld, off + nb, 0.0,
                           Y->data, vy ? H * N : N, off + 2 * nb, nb);
    return LT_OK;
}

static lt_status matmul_trans(lt_kctx *k)
{
    bool ta = lt_attr_int(k->node, "transA", 0) != 0, tb = lt_attr_int(k->node, "transB", 0) != 0;
    double alpha = lt_attr_float(k->node, "alpha", 1.0f);
    if (lt_attr_find(k->node, "viewA") || lt_attr_find(k->node, "viewB") || lt_attr_int(k->node, "viewY", 0))
        return matmul_views(k, ta, tb, alpha);
    return matmul_of(k, ta, tb, alpha);
}

static lt_status gemm(lt_kctx *k)
{
    const lt_tensor *A = lt_k_in(k, 0), *B = lt_k_in(k, 1), *C = lt_k_in(k, 2);
    if (!A || !B)
        return lt_k_fail(k, LT_ERR_INVALID, "Gemm needs inputs A and B");
    if (A->rank != 2 || B->rank != 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "A and B must be matrices (ranks %d and %d)", A->rank, B->rank);
    lt_dtype dt = A->dtype;
    if (B->dtype != dt || (C && C->dtype != dt))
        return lt_k_fail(k, LT_ERR_INVALID, "operand types differ");
    if (!lt_dtype_is_float(dt) && !lt_dtype_is_int(dt))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "Gemm of %s is not supported", lt_dtype_name(dt));
    bool ta = lt_attr_int(k->node, "transA", 0) != 0, tb = lt_attr_int(k->node, "transB", 0) != 0;
    double alpha = lt_attr_float(k->node, "alpha", 1.0f), beta = lt_attr_float(k->node, "beta", 1.0f);
    int64_t M = ta ? A->dims[1] : A->dims[0], K = ta ? A->dims[0] : A->dims[1];
    int64_t kb = tb ? B->dims[1] : B->dims[0], N = tb ? B->dims[0] : B->dims[1];
    if (K != kb)
        return lt_k_fail(k, LT_ERR_RUNTIME, "inner dimensions differ: op(A) is [%lld,%lld], op(B) is [%lld,%lld]",
                         (long long)M, (long long)K, (long long)kb, (long long)N);
    /* C broadcasts one way to [M,N]: strides 0 along its dims of size 1 */
    int64_t cm = 0, cn = 0;
    if (C) {
        int64_t c0 = C->rank == 2 ? C->dims[0] : 1, c1 = C->rank >= 1 ? C->dims[C->rank - 1] : 1;
        if (C->rank > 2 || (c0 != 1 && c0 != M) || (c1 != 1 && c1 != N))
            return lt_k_fail(k, LT_ERR_RUNTIME, "C of rank %d (last dims %lld) does not broadcast to [%lld,%lld]",
                             C->rank, (long long)c1, (long long)M, (long long)N);
        cm = c0 == 1 ? 0 : c1;
        cn = c1 == 1 ? 0 : 1;
    }
    int64_t yd[2] = {M, N};
    lt_tensor *Y;
    lt_status st = lt_k_out(k, 0, dt, 2, yd, &Y);
    if (st != LT_OK || Y->numel == 0)
        return st;
    bool use_c = C && beta != 0;
    if (lt_dtype_is_int(dt)) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                int64_t acc = 0;
                for (int64_t x = 0; x < K; x++)
                    acc += lt_tensor_get_i64(A, ta ? x * M + i : i * K + x) *
                           lt_tensor_get_i64(B, tb ? j * K + x : x * N + j);
                double v = alpha * (double)acc;
                if (use_c)
                    v += beta * (double)lt_tensor_get_i64(C, i * cm + j * cn);
                lt_tensor_set_i64(Y, i * N + j, (int64_t)v);
            }
        return LT_OK;
    }
    if (!lt_linalg_blas_ok(M, N, K))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "matrix sizes exceed BLAS's int range");
    lt_dtype ct = dt == LT_F64 ? LT_F64 : LT_F32;
    const void *a = A->data, *b = B->data;
    void *y = Y->data;
    if (dt != ct) {
        a = lt_linalg_as_f32(k, A);
        b = lt_linalg_as_f32(k, B);
        y = lt_k_scratch(k, (size_t)Y->numel * sizeof(float));
        if (!a || !b || !y)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    if (use_c && C->dtype == ct) {
        /* the common bias row (or matrix) in the compute type: a whole row
         * of C as one copy */
        size_t es = ct == LT_F32 ? sizeof(float) : sizeof(double);
        for (int64_t i = 0; i < M; i++) {
            if (cn == 1) {
                memcpy((char *)y + (size_t)(i * N) * es, (const char *)C->data + (size_t)(i * cm) * es,
                       (size_t)N * es);
            } else if (ct == LT_F32) {
                const float *cs = (const float *)C->data + i * cm;
                float *yr = (float *)y + i * N;
                for (int64_t j = 0; j < N; j++)
                    yr[j] = cs[j * cn];
            } else {
                const double *cs = (const double *)C->data + i * cm;
                double *yr = (double *)y + i * N;
                for (int64_t j = 0; j < N; j++)
                    yr[j] = cs[j * cn];
            }
        }
    } else if (use_c) {
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double v = lt_tensor_get_f64(C, i * cm + j * cn);
                if (ct == LT_F32)
                    ((float *)y)[i * N + j] = (float)v;
                else
                    ((double *)y)[i * N + j] = v;
            }
    }
    lt_linalg_gemm(ct, ta, tb, M, N, K, alpha, a, A->dims[1], b, B->dims[1], use_c ? beta : 0.0, y, N);
    if (dt != ct)
        for (int64_t i = 0; i < Y->numel; i++)
            lt_tensor_set_f64(Y, i, ((float *)y)[i]);
    return LT_OK;
}

/* Determinant of one n x n matrix by LU with partial pivoting; a is
 * overwritten. */
static double lu_det(double *a, int64_t n)
{
    double det = 1.0;
    for (int64_t c = 0; c < n; c++) {
        int64_t p = c;
        for (int64_t r = c + 1; r < n; r++)
            if (fabs(a[r * n + c]) > fabs(a[p * n + c]))
                p = r;
        if (a[p * n + c] == 0.0)
            return 0.0;
        if (p != c) {
            for (int64_t j = 0; j < n; j++) {
                double t = a[c * n + j];
                a[c * n + j] = a[p * n + j];
                a[p * n + j] = t;
            }
            det = -det;
        }
        double piv = a[c * n + c];
        det *= piv;
        for (int64_t r = c + 1; r < n; r++) {
            double f = a[r * n + c] / piv;
            if (f == 0.0)
                continue;
            for (int64_t j = c + 1; j < n; j++)
                a[r * n + j] -= f * a[c * n + j];
        }
    }
    return det;
}

static lt_status det(lt_kctx *k)
{
    const lt_tensor *X = lt_k_in(k, 0);
    if (!X)
        return lt_k_fail(k, LT_ERR_INVALID, "Det needs an input");
    if (!lt_dtype_is_float(X->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "Det of %s is not supported", lt_dtype_name(X->dtype));
    if (X->rank < 2 || X->dims[X->rank - 1] != X->dims[X->rank - 2])
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must be [..., M, M] (rank %d)", X->rank);
    int64_t n = X->dims[X->rank - 1];
    lt_tensor *Y;
    lt_status st = lt_k_out(k, 0, X->dtype, X->rank - 2, X->dims, &Y);
    if (st != LT_OK || Y->numel == 0)
        return st;
    int nt = omp_get_max_threads();
    size_t nn = (size_t)(n * n);
    double *work = lt_k_scratch(k, (nn ? nn : 1) * sizeof(double) * (size_t)nt);
    if (!work)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
#pragma omp parallel for num_threads(nt) if (Y->numel * nn * n > 32768)
    for (int64_t b = 0; b < Y->numel; b++) {
        double *a = work + nn * (size_t)omp_get_thread_num();
        for (size_t i = 0; i < nn; i++)
            a[i] = lt_tensor_get_f64(X, b * (int64_t)nn + (int64_t)i);
        lt_tensor_set_f64(Y, b, lu_det(a, n));
    }
    return LT_OK;
}

void lt_cpu_register_linalg(lt_kernel_fn *tab)
{
    tab[LT_OP_MAT_MUL] = matmul;
    tab[LT_OP_MAT_MUL_TRANS] = matmul_trans;
    tab[LT_OP_GEMM] = gemm;
    tab[LT_OP_DET] = det;
    lt_linalg_register_einsum(tab);
    lt_linalg_register_quant(tab);
}
