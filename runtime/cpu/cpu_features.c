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

bool lt_cpu_avx512_gemm(void)
{
    static int have = -1; /* benign race, as above */
    if (have < 0) {
        const char *g = getenv("LANTERN_GEMM");
        have = lt_cpu_avx512() && !(g && !strcmp(g, "blas"));
    }
    return have;
}
