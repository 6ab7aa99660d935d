/* Sliding-window geometry shared by the nn family's shape rules and CPU
 * kernels (Conv, ConvTranspose, the pools, Col2Im): one place decides output
 * sizes and pads from strides, dilations, pads and auto_pad. */
#ifndef LT_SHAPE_NN_H
#define LT_SHAPE_NN_H

#include "ir.h"

/* A window sweeping an image: window position p along axis i reads image
 * coordinate p*s[i] - pb[i] + j*d[i] for kernel tap j. For Conv and the
 * pools the image is the input and the grid of positions the output; for
 * ConvTranspose (and Col2Im) the grid is the input and the image the output.
 * Sizes are -1 where unknown (shape inference only). */
typedef struct lt_nn_geom {
    int nsp; /* spatial axes */
    int64_t img[LT_MAX_RANK];
    int64_t grid[LT_MAX_RANK];
    int64_t k[LT_MAX_RANK];
    int64_t s[LT_MAX_RANK];
    int64_t d[LT_MAX_RANK];
    int64_t pb[LT_MAX_RANK]; /* pads at the beginning (may be < 0 for ConvTranspose) */
    int64_t pe[LT_MAX_RANK]; /* pads at the end */
} lt_nn_geom;

/* Conv and pools: img and kernel given (kernel sizes must be known), fills
 * strides, dilations, pads (from auto_pad or the pads attribute) and grid.
 * ceil_mode rounds the grid up (pools). False with a message in why on a
 * definite error (bad attribute, kernel larger than the padded input). */
bool lt_nn_window(const lt_node *n, int nsp, const int64_t *img, const int64_t *kernel, bool ceil_mode,
                  lt_nn_geom *g, char *why, size_t len);

/* ConvTranspose: grid (its input) and kernel given; fills the output image
 * from output_shape, auto_pad, pads and output_padding. */
bool lt_nn_window_transpose(const lt_node *n, int nsp, const int64_t *grid, const int64_t *kernel, lt_nn_geom *g,
                            char *why, size_t len);

/* product of n sizes, -1 when one is unknown or it overflows */
int64_t lt_nn_prod(int n, const int64_t *v);

#endif
