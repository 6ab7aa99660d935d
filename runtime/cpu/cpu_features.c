/* CPU features (cpu_features.h). */
#include "cpu_features.h"
#include <stdlib.h>
#include <string.h>

bool lt_cpu_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static int have = -1; /* benign race: every thread computes the same */
    if (have < 0)
        have = __builtin_cpu_supports("avx512f");
    return have;
#else
    return false;
#endif
}

/* LANTERN_GEMM=blas: every matrix product to OpenBLAS */
static bool own_gemm(void)
{
    static int own = -1; /* benign race, as above */
    if (own < 0) {
        const char *g = getenv("LANTERN_GEMM");
        own = !(g && !strcmp(g, "blas"));
    }
    return own;
}

bool lt_cpu_avx512_gemm(void) { return lt_cpu_avx512() && own_gemm(); }

bool lt_cpu_avx2(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static int have = -1; /* benign race, as above */
    if (have < 0)
        have = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return have;
#else
    return false;
#endif
}

bool lt_cpu_avx2_gemm(void) { return lt_cpu_avx2() && own_gemm(); }
