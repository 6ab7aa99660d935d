/* What the convolution panels share: the AVX-512 ones (nn_conv_panels.c:
 * 32 columns in two halves of 16 lanes, tiles of 8 output channels) and
 * the AVX2 ones (nn_conv_panels_avx2.c: 16 columns in two halves of 8,
 * tiles of 6). The columns of y over the batch run (image, position); a
 * panel takes 2 half columns at a time, and a segment is a run of them
 * that one load or store serves: positions along one grid row of one image
 * (split) or all of one image's (by_image), never across the two halves. */
#ifndef LT_CPU_NN_PANELS_H
#define LT_CPU_NN_PANELS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct lt_panel_seg {
    int64_t img, pos, oy, ox; /* the first position of image img (pos = oy OW + ox) */
    int64_t n, lane;          /* n positions, from panel lane `lane` on */
} lt_panel_seg;

/* The segments of the panel of columns [col0, col0 + 2 half) clipped to
 * ncols, L positions an image, OW a grid row: at most 2 half + 2 of them */
static inline int lt_panel_segments(int64_t col0, int64_t ncols, int64_t L, int64_t OW, bool by_image, int64_t half,
                                    lt_panel_seg *out)
{
    int cnt = 0;
    int64_t end = col0 + 2 * half < ncols ? col0 + 2 * half : ncols;
    for (int64_t col = col0; col < end;) {
        int64_t lane = col - col0, img = col / L, pos = col % L;
        int64_t n = by_image ? L - pos : OW - pos % OW;
        int64_t room = (lane < half ? half : 2 * half) - lane;
        n = n < room ? n : room;
        n = n < end - col ? n : end - col;
        out[cnt++] = (lt_panel_seg){img, pos, pos / OW, pos % OW, n, lane};
        col += n;
    }
    return cnt;
}

/* w [M, R] -> panels of mr rows: pa[(p R + r) mr + i] = w[p mr + i, r], 0
 * past M; row panels p0..p1 */
static inline void lt_panel_pack_weights(const float *w, int64_t M, int64_t R, int64_t mr, float *pa, int64_t p0,
                                         int64_t p1)
{
    for (int64_t p = p0; p < p1; p++) {
        float *d = pa + p * R * mr;
        for (int64_t i = 0; i < mr; i++) {
            int64_t o = p * mr + i;
            if (o >= M) {
                for (int64_t r = 0; r < R; r++)
                    d[r * mr + i] = 0;
                continue;
            }
            const float *s = w + o * R;
            for (int64_t r = 0; r < R; r++)
                d[r * mr + i] = s[r];
        }
    }
}

#endif
