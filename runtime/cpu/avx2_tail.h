/* Lanes [lo, hi) of 8 set (both clamped to 0 .. 8): a mask for the
 * masked loads, which AMD runs fast, unlike the masked stores */
__attribute__((target("avx2,fma"))) static inline __m256i lt_avx2_lanes(int64_t lo, int64_t hi)
{
    lo = lo < 0 ? 0 : lo > 8 ? 8 : lo;
    hi = hi < lo ? lo : hi > 8 ? 8 : hi;
    __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), idx),
                            _mm256_cmpgt_epi32(idx, _mm256_set1_epi32((int)lo - 1)));
}

/* The first n (1 to 8) lanes of an AVX2 register stored without touching
 * the memory past them, for the short rows of the AVX2 kernels
 * (sgemm_small_avx2.c, softmax_avx2.c): plain stores of 8, or 4, 2 and 1
 * lanes, since AMD's masked stores are microcoded. Only for x86-64 GCC
 * builds; the callers' functions carry target("avx2,fma"). */
#ifndef LT_CPU_AVX2_TAIL_H
#define LT_CPU_AVX2_TAIL_H

#include <immintrin.h>
#include <stdint.h>

__attribute__((target("avx2,fma"))) static inline void lt_avx2_store_first(float *c, __m256 x, int n)
{
    if (n == 8) {
        _mm256_storeu_ps(c, x);
        return;
    }
    __m128 h = _mm256_castps256_ps128(x);
    if (n >= 4) {
        _mm_storeu_ps(c, h);
        h = _mm256_extractf128_ps(x, 1);
        c += 4;
        n -= 4;
    }
    if (n >= 2) {
        _mm_storel_pi((__m64 *)c, h);
        h = _mm_movehl_ps(h, h);
        c += 2;
        n -= 2;
    }
    if (n)
        _mm_store_ss(c, h);
}

#endif
