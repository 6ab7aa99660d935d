/* Gemm and MatMul on cuBLAS (cublasGemmEx, cublasGemmStridedBatchedEx).
 *
 * lantern's tensors are row-major and cuBLAS is column-major: a row-major
 * M x N matrix is the column-major N x M one, its transpose. So
 * Y = op(A) op(B) is computed as Y^T = op(B)^T op(A)^T, i.e. cuBLAS gets B
 * before A with the same transpose flags, m = N and n = M. float32 computes
 * in CUBLAS_COMPUTE_32F (TF32 tensor cores only with LANTERN_TF32=1),
 * float64 in CUBLAS_COMPUTE_64F. */
#include "cuda_internal.h"
#include "../runtime/cpu/control_cells.h"
#include <string.h>

#define F64(t) ((t)->dtype == LT_F64)

/* y's rows are ldy elements apart (n for a dense y) */
static lt_status gemm_call(lt_kctx *k, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk,
                           double alpha, const void *a, int64_t lda, int64_t sa, const void *b, int64_t ldb,
                           int64_t sb, double beta, void *y, int64_t ldy, int64_t sy, int64_t batch);

lt_status lt_cuda_gemm(lt_kctx *k, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                       const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *y)
{
    return gemm_call(k, f64, ta, tb, m, n, kk, alpha, a, lda, 0, b, ldb, 0, beta, y, n, 0, 1);
}

lt_status lt_cuda_gemm_ld(lt_kctx *k, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                          const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *y, int64_t ldy)
{
    return gemm_call(k, f64, ta, tb, m, n, kk, alpha, a, lda, 0, b, ldb, 0, beta, y, ldy, 0, 1);
}

static lt_status gemm_call(lt_kctx *k, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk,
                           double alpha, const void *a, int64_t lda, int64_t sa, const void *b, int64_t ldb,
                           int64_t sb, double beta, void *y, int64_t ldy, int64_t sy, int64_t batch)
{
    lt_cuda *st = lt_cuda_of(k->be);
    if (m > INT32_MAX || n > INT32_MAX || kk > INT32_MAX || lda > INT32_MAX || ldb > INT32_MAX ||
        ldy > INT32_MAX || batch > INT32_MAX)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "matrix sizes beyond cuBLAS's int range");
    if (m == 0 || n == 0 || batch == 0)
        return LT_OK;
    cudaDataType_t dt = f64 ? CUDA_R_64F : CUDA_R_32F;
    cublasComputeType_t ct = f64 ? CUBLAS_COMPUTE_64F : st->tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    float af = (float)alpha, bf = (float)beta;
    const void *pa = f64 ? (const void *)&alpha : (const void *)&af;
    const void *pb = f64 ? (const void *)&beta : (const void *)&bf;
    cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    if (kk == 0) { /* an empty sum: Y = beta Y, where Y is 0 or holds C */
        size_t es = f64 ? 8 : 4;
        if (beta == 0 && ldy == n)
            LT_CUDA_K(k, cudaMemsetAsync(y, 0, (size_t)(m * n * batch) * es, st->stream));
        else if (beta == 0 && batch == 1)
            LT_CUDA_K(k, cudaMemset2DAsync(y, (size_t)ldy * es, 0, (size_t)n * es, (size_t)m, st->stream));
        else if (beta == 0)
            return lt_k_fail(k, LT_ERR_UNSUPPORTED, "an empty inner dimension into strided batched rows on cuda");
        else if (beta != 1)
            return lt_k_fail(k, LT_ERR_UNSUPPORTED, "an empty inner dimension with beta %g on cuda", beta);
        return LT_OK;
    }
    /* column-major: Y^T (n x m) = op(B)^T (n x k) op(A)^T (k x m) */
    if (batch == 1)
        LT_CUBLAS_K(k, cublasGemmEx(st->blas, opb, opa, (int)n, (int)m, (int)kk, pa, b, dt, (int)ldb, a, dt, (int)lda,
                                    pb, y, dt, (int)ldy, ct, CUBLAS_GEMM_DEFAULT));
    else
        LT_CUBLAS_K(k, cublasGemmStridedBatchedEx(st->blas, opb, opa, (int)n, (int)m, (int)kk, pa, b, dt, (int)ldb, sb,
                                                  a, dt, (int)lda, sa, pb, y, dt, (int)ldy, sy, (int)batch, ct,
                                                  CUBLAS_GEMM_DEFAULT));
    return LT_OK;
}

/* Gemm (A, B[, C]) {alpha, beta, transA, transB}: Y = alpha op(A) op(B) + beta C,
 * C broadcast to (M, N). */
static lt_status k_gemm(lt_kctx *k)
{
    const lt_tensor *a = lt_k_in(k, 0), *b = lt_k_in(k, 1), *c = lt_k_in(k, 2);
    if (!a || !b)
        return lt_k_fail(k, LT_ERR_INVALID, "inputs A and B are required");
    if (a->rank != 2 || b->rank != 2 || a->dtype != b->dtype || (c && c->dtype != a->dtype) ||
        (a->dtype != LT_F32 && a->dtype != LT_F64))
        return lt_k_fail(k, LT_ERR_INVALID, "Gemm takes two matrices of float32 or float64");
    bool ta = lt_attr_int(k->node, "transA", 0) != 0, tb = lt_attr_int(k->node, "transB", 0) != 0;
    double alpha = lt_attr_float(k->node, "alpha", 1.0f), beta = lt_attr_float(k->node, "beta", 1.0f);
    int64_t m = ta ? a->dims[1] : a->dims[0], kk = ta ? a->dims[0] : a->dims[1];
    int64_t kb = tb ? b->dims[1] : b->dims[0], n = tb ? b->dims[0] : b->dims[1];
    if (kk != kb)
        return lt_k_fail(k, LT_ERR_INVALID, "op(A) is %lldx%lld but op(B) is %lldx%lld", (long long)m, (long long)kk,
                         (long long)kb, (long long)n);
    int64_t yd[2] = {m, n};
    lt_tensor *y;
    lt_status s;
    if ((s = lt_k_out(k, 0, a->dtype, 2, yd, &y)) != LT_OK)
        return s;
    bool use_c = c && beta != 0 && c->numel > 0;
    if (use_c) { /* Y = C broadcast, then Y = alpha AB + beta Y */
        lt_cu_shape sh;
        memset(&sh, 0, sizeof sh);
        if (c->rank > 2)
            return lt_k_fail(k, LT_ERR_INVALID, "C of rank %d", c->rank);
        sh.rank = 2;
        sh.n = m * n;
        sh.dims[0] = m;
        sh.dims[1] = n;
        int64_t cd0 = c->rank == 2 ? c->dims[0] : 1, cd1 = c->rank >= 1 ? c->dims[c->rank - 1] : 1;
        if ((cd0 != 1 && cd0 != m) || (cd1 != 1 && cd1 != n))
            return lt_k_fail(k, LT_ERR_INVALID, "C does not broadcast to %lldx%lld", (long long)m, (long long)n);
        sh.st[0][0] = cd0 == 1 ? 0 : cd1;
        sh.st[0][1] = cd1 == 1 ? 0 : 1;
        LT_CUDA_K(k, lt_cu_binary(lt_cuda_of(k->be)->stream, LT_CU_COPY, F64(a), c->data, NULL, y->data, &sh));
    }
    return gemm_call(k, F64(a), ta, tb, m, n, kk, alpha, a->data, a->dims[1], 0, b->data, b->dims[1], 0,
                     use_c ? beta : 0.0, y->data, n, 0, 1);
}

/* MatMul with numpy semantics: rank-1 operands promoted (and their axis
 * dropped from the result), batch axes broadcast. One strided-batched call
 * when each side's batch is all or nothing, else one call per batch. */
static lt_status k_matmul(lt_kctx *k)
{
    const lt_tensor *a = lt_k_in(k, 0), *b = lt_k_in(k, 1);
    if (!a || !b)
        return lt_k_fail(k, LT_ERR_INVALID, "inputs A and B are required");
    if (a->dtype != b->dtype || (a->dtype != LT_F32 && a->dtype != LT_F64) || a->rank < 1 || b->rank < 1)
        return lt_k_fail(k, LT_ERR_INVALID, "MatMul takes two float32 or float64 tensors of rank 1 or more");
    int64_t ad[LT_MAX_RANK + 1], bd[LT_MAX_RANK + 1];
    int ar = a->rank, br = b->rank;
    memcpy(ad, a->dims, sizeof(int64_t) * (size_t)ar);
    memcpy(bd, b->dims, sizeof(int64_t) * (size_t)br);
    bool a1 = ar == 1, b1 = br == 1;
    if (a1) { /* (K) -> (1, K) */
        ad[1] = ad[0];
        ad[0] = 1;
        ar = 2;
    }
    if (b1) { /* (K) -> (K, 1) */
        bd[1] = 1;
        br = 2;
    }
    int64_t m = ad[ar - 2], kk = ad[ar - 1], n = bd[br - 1];
    if (bd[br - 2] != kk)
        return lt_k_fail(k, LT_ERR_INVALID, "inner dimensions differ: %lld and %lld", (long long)kk,
                         (long long)bd[br - 2]);
    int nb = (ar > br ? ar : br) - 2;
    int64_t batch[LT_MAX_RANK], abat[LT_MAX_RANK], bbat[LT_MAX_RANK];
    int64_t nbatch = 1, na = 1, nbb = 1;
    for (int i = 0; i < nb; i++) {
        int ia = i - (nb - (ar - 2)), ib = i - (nb - (br - 2));
        abat[i] = ia >= 0 ? ad[ia] : 1;
        bbat[i] = ib >= 0 ? bd[ib] : 1;
        if (abat[i] != bbat[i] && abat[i] != 1 && bbat[i] != 1)
            return lt_k_fail(k, LT_ERR_INVALID, "batch dims do not broadcast (%lld against %lld)", (long long)abat[i],
                             (long long)bbat[i]);
        batch[i] = abat[i] == 1 ? bbat[i] : abat[i];
        nbatch *= batch[i];
        na *= abat[i];
        nbb *= bbat[i];
    }
    int64_t yd[LT_MAX_RANK];
    int yr = 0;
    for (int i = 0; i < nb; i++)
        yd[yr++] = batch[i];
    if (!a1)
        yd[yr++] = m;
    if (!b1)
        yd[yr++] = n;
    lt_tensor *y;
    lt_status s;
    if ((s = lt_k_out(k, 0, a->dtype, yr, yd, &y)) != LT_OK || y->numel == 0)
        return s;
    bool f64 = F64(a);
    if ((na == nbatch || na == 1) && (nbb == nbatch || nbb == 1))
        return gemm_call(k, f64, false, false, m, n, kk, 1.0, a->data, kk, na == 1 ? 0 : m * kk, b->data, n,
                         nbb == 1 ? 0 : kk * n, 0.0, y->data, n, m * n, nbatch);
    /* general broadcast: walk the batch index */
    size_t es = f64 ? 8 : 4;
    for (int64_t t = 0; t < nbatch; t++) {
        int64_t rem = t, ia = 0, ib = 0, sa = 1, sb = 1;
        for (int i = nb - 1; i >= 0; i--) {
            int64_t q = rem % batch[i];
            rem /= batch[i];
            ia += (abat[i] == 1 ? 0 : q) * sa;
            ib += (bbat[i] == 1 ? 0 : q) * sb;
            sa *= abat[i];
            sb *= bbat[i];
        }
        s = gemm_call(k, f64, false, false, m, n, kk, 1.0, (const char *)a->data + (size_t)(ia * m * kk) * es, kk, 0,
                      (const char *)b->data + (size_t)(ib * kk * n) * es, n, 0, 0.0,
                      (char *)y->data + (size_t)(t * m * n) * es, n, 0, 1);
        if (s != LT_OK)
            return s;
    }
    return LT_OK;
}

/* AccGemm(cell, A, B) {alpha, transA, transB}: cell [M, N] += alpha op(A)
 * op(B), the product added into the device cell by the GEMM itself. */
static lt_status k_acc_gemm(lt_kctx *k)
{
    lt_acc_gemm g;
    lt_status s = lt_acc_gemm_args(k, &g);
    if (s != LT_OK)
        return s;
    /* cells are updated in place by design */
    return gemm_call(k, F64(g.c), g.ta, g.tb, g.M, g.N, g.K, g.alpha, g.a->data, g.a->dims[1], 0, g.b->data,
                     g.b->dims[1], 0, 1.0, ((lt_tensor *)g.c)->data, g.N, 0, 1);
}

void lt_cuda_register_blas(lt_cu_op *tab)
{
    tab[LT_OP_ACC_GEMM] = (lt_cu_op){k_acc_gemm, 0, 0, NULL, true};
    tab[LT_OP_GEMM] = (lt_cu_op){k_gemm, 0, 0, NULL};
    tab[LT_OP_MAT_MUL] = (lt_cu_op){k_matmul, 0, 0, NULL};
}
