/* Private helpers of the linalg kernel files (the rnn family uses the GEMM
 * too): GEMM split over the OpenMP pool (OpenBLAS itself is pinned to one
 * thread), numpy-style batch broadcasting for matrix products, and the
 * registrars of the split files. */
#ifndef LT_CPU_LINALG_UTIL_H
#define LT_CPU_LINALG_UTIL_H

#include "../runtime.h"

/* Row-major C[M,N] = alpha * op(A) * op(B) + beta * C for dt LT_F32 or
 * LT_F64 (pointers to that type; alpha/beta converted). op(A) is [M,K]:
 * A is stored [M,K] with row stride lda, or [K,M] when ta. Large products
 * are split by rows or columns over OpenMP threads. Callers guarantee
 * M, N, K, lda, ldb, ldc fit in an int (lt_linalg_blas_ok). */
void lt_linalg_gemm(lt_dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const void *A,
                    int64_t lda, const void *B, int64_t ldb, double beta, void *C, int64_t ldc);

/* The float form with AVX-512 kernels (sgemm_avx512.c); false, with C
 * untouched, when the CPU lacks AVX-512 or the shape is better left to
 * OpenBLAS (fewer than 32 columns). */
bool lt_sgemm_avx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* lt_sgemm_avx512 with op(B) the columns of two matrices side by side:
 * C [M, N1 + N2] = alpha op(A) [B1 | B2] + beta C, B1 [K, N1] and B2
 * [K, N2] row-major with strides ldb1, ldb2 (two products over the same
 * op(A) that pack it once); false, with C untouched, where
 * lt_sgemm_avx512 would be for N1 + N2 columns. */
bool lt_sgemm_avx512_cat(bool ta, int64_t M, int64_t N1, int64_t N2, int64_t K, float alpha, const float *A,
                         int64_t lda, const float *B1, int64_t ldb1, const float *B2, int64_t ldb2, float beta,
                         float *C, int64_t ldc);

/* lt_sgemm_avx512 and lt_sgemm_avx512_cat with AVX2 and FMA
 * (sgemm_avx2.c), for CPUs without AVX-512: any shape with M, N, K >= 1;
 * false, with C untouched, without AVX2 and FMA or with LANTERN_GEMM=blas.
 * linalg_gemm.c picks the shapes where it beats OpenBLAS. */
bool lt_sgemm_avx2(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
bool lt_sgemm_avx2_cat(bool ta, int64_t M, int64_t N1, int64_t N2, int64_t K, float alpha, const float *A,
                       int64_t lda, const float *B1, int64_t ldb1, const float *B2, int64_t ldb2, float beta,
                       float *C, int64_t ldc);
/* op(A) packed once for every chunk of a product split by columns
 * (linalg_gemm.c), where lt_sgemm_avx2 would pack it in each: whether it
 * packs op(A) at all (lt_sgemm_avx2_packs_a), the packed length in floats,
 * the packing (false without AVX2 and FMA), and a product from the packed
 * op(A) (alpha folded in there) with the same bits as lt_sgemm_avx2's */
bool lt_sgemm_avx2_packs_a(bool ta, int64_t lda, float alpha);
int64_t lt_sgemm_avx2_packed_a_len(int64_t M, int64_t K);
bool lt_sgemm_avx2_pack_a(bool ta, int64_t M, int64_t K, float alpha, const float *A, int64_t lda, float *pa);
bool lt_sgemm_avx2_prepacked(const float *pa, int64_t M, int64_t N, int64_t K, bool tb, const float *B,
                             int64_t ldb, float beta, float *C, int64_t ldc);
/* AVX2 and FMA but no AVX-512 (and LANTERN_GEMM not "blas"): where float
 * products go to lt_sgemm_avx2 (an AVX-512 CPU keeps its own routing) */
bool lt_sgemm_avx2_here(void);
/* Whether lt_sgemm_avx2 beats OpenBLAS on a product (bench/bench_gemm.c):
 * at least its 16-column tile's width twice over, or no fewer columns
 * than rows (narrower ones do better as C^T), and op(B) under 4 MiB (at a
 * 1024-square chunk the two kernels are level). */
static inline bool lt_sgemm_avx2_pays(int64_t M, int64_t N, int64_t K)
{
    return (N >= 32 || N >= M) && (double)K * (double)N < (double)(1 << 20);
}

/* The float form for products of at most 64 columns with K * N <= 16384,
 * or <= 131072 when op(B) is B itself and alpha is 1 (sgemm_small.c);
 * on a CPU without AVX-512 (or LANTERN_GEMM=blas), the AVX2 form below
 * (at most 32 columns); false, with C untouched, when neither runs or the
 * shape is outside those bounds. */
bool lt_sgemm_small(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                    const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* lt_sgemm_small over nb products whose A, B, C start at element offsets
 * offa[i], offb[i], offc[i] (attention's per-head products), on the
 * calling thread; false, with C untouched, where lt_sgemm_small would be. */
bool lt_sgemm_small_batched(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                            int64_t lda, const int64_t *offa, const float *B, int64_t ldb, const int64_t *offb,
                            float beta, float *C, int64_t ldc, const int64_t *offc, int64_t nb);

/* lt_sgemm_small and lt_sgemm_small_batched with AVX2 and FMA
 * (sgemm_small_avx2.c), for products of at most 32 columns within the same
 * K * N bounds; false, with C untouched, without AVX2 and FMA, with
 * LANTERN_GEMM=blas, or outside those bounds. */
bool lt_sgemm_small_avx2(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                         int64_t lda, const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
bool lt_sgemm_small_avx2_batched(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A,
                                 int64_t lda, const int64_t *offa, const float *B, int64_t ldb, const int64_t *offb,
                                 float beta, float *C, int64_t ldc, const int64_t *offc, int64_t nb);

/* The float form when M, N or K is 1 (gemv_avx512.c): a vector times a
 * matrix read once, or a rank-1 update; false, with C untouched, for other
 * shapes or without AVX-512. */
bool lt_sgemv_avx512(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                     const float *B, int64_t ldb, float beta, float *C, int64_t ldc);
/* The same with AVX2 and FMA (gemv_avx2.c), for CPUs without AVX-512;
 * false, with C untouched, for other shapes, without AVX2 and FMA, or
 * with LANTERN_GEMM=blas. */
bool lt_sgemv_avx2(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float *A, int64_t lda,
                   const float *B, int64_t ldb, float beta, float *C, int64_t ldc);

/* nb independent products; A, B, C of product i start at element offsets
 * offa[i], offb[i], offc[i]. Parallel over the batch when there are many. */
void lt_linalg_gemm_batched(lt_dtype dt, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
                            const void *A, int64_t lda, const int64_t *offa, const void *B, int64_t ldb,
                            const int64_t *offb, double beta, void *C, int64_t ldc, const int64_t *offc,
                            int64_t nb);

/* Whether every size fits BLAS's int. */
bool lt_linalg_blas_ok(int64_t a, int64_t b, int64_t c);

/* Shapes of a numpy matmul: 1-D operands promoted, batch dims broadcast. */
typedef struct lt_mm_shape {
    int64_t M, N, K;
    int64_t nb;                    /* number of output batches */
    int out_rank;
    int64_t out_dims[LT_MAX_RANK];
    int nbr;                       /* broadcast batch rank */
    int64_t bdims[LT_MAX_RANK];    /* broadcast batch dims */
    int64_t sa[LT_MAX_RANK];       /* per batch dim: stride in A's matrices (0 = broadcast) */
    int64_t sb[LT_MAX_RANK];
} lt_mm_shape;

/* Fills s from the operand shapes; on a mismatch writes a message to why
 * and returns false. */
bool lt_mm_shape_of(const lt_tensor *a, const lt_tensor *b, lt_mm_shape *s, char *why, size_t why_len);
/* Matrix index (not element offset) of batch i in A and in B. */
void lt_mm_batch_index(const lt_mm_shape *s, int64_t i, int64_t *ia, int64_t *ib);

/* Converts any numeric tensor to a float / double scratch copy (or returns
 * the data itself when it already has that type). NULL on OOM. */
const float *lt_linalg_as_f32(lt_kctx *k, const lt_tensor *t);
const double *lt_linalg_as_f64(lt_kctx *k, const lt_tensor *t);

void lt_linalg_register_einsum(lt_kernel_fn *tab);
void lt_linalg_register_quant(lt_kernel_fn *tab);

#endif
