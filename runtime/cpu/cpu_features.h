/* What the CPU running lantern can do, asked once per process: the build
 * targets baseline x86-64, and kernels compiled for wider vectors are
 * picked at run time through these. LANTERN_CPU=avx2 or =baseline caps
 * what they report, so that one machine can run every tier's kernels. */
#ifndef LT_CPU_FEATURES_H
#define LT_CPU_FEATURES_H

#include <stdbool.h>

/* AVX-512F (and not capped by LANTERN_CPU) */
bool lt_cpu_avx512(void);
/* AVX-512F, and LANTERN_GEMM is not "blas" (which leaves every matrix
 * product to OpenBLAS, for comparisons that must use its kernels): whether
 * lantern's own AVX-512 matrix kernels may run */
bool lt_cpu_avx512_gemm(void);
/* AVX2 and FMA (every AVX-512 CPU lantern meets has them too) */
bool lt_cpu_avx2(void);
/* AVX2 and FMA, and LANTERN_GEMM is not "blas": lantern's own AVX2 matrix
 * kernels (the recurrent products, the small-product GEMM) may run */
bool lt_cpu_avx2_gemm(void);

#endif
