/* CPU features (cpu_features.h). */
#include "cpu_features.h"
#include <stdlib.h>
#include <string.h>

/* LANTERN_CPU caps the instruction sets the kernels may pick: "avx2" leaves
 * out AVX-512, "baseline" every vector extension past x86-64's SSE2. Unset,
 * or any other value, means what the CPU has. */
static int cpu_cap(void)
{
    static int cap = -1; /* benign race: every thread computes the same */
    if (cap < 0) {
        const char *e = getenv("LANTERN_CPU");
        cap = e && !strcmp(e, "baseline") ? 0 : e && !strcmp(e, "avx2") ? 1 : 2;
    }
    return cap;
}

bool lt_cpu_avx512(void)
{
#if defined(__x86_64__) && defined(__GNUC__)
    static int have = -1; /* benign race, as above */
    if (have < 0)
        have = cpu_cap() >= 2 && __builtin_cpu_supports("avx512f");
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
        have = cpu_cap() >= 1 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return have;
#else
    return false;
#endif
}

bool lt_cpu_avx2_gemm(void) { return lt_cpu_avx2() && own_gemm(); }
