/* Depthwise convolution on the CPU (nn_conv_depthwise.c): 1-D or 2-D
 * windows, group = C input channels, M = C * mult output channels (output
 * channel o reads input channel o / mult), any strides, dilations and pads,
 * float32 (esz 4) or float64 (esz 8); x [N, C, img...], w [M, 1, k...],
 * y / dy [N, M, grid...]. */
#ifndef LT_CPU_NN_CONV_DEPTHWISE_H
#define LT_CPU_NN_CONV_DEPTHWISE_H

#include "ir/shape_nn.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* the most taps a filter may have here (the filter gradient's sums) */
#define LT_NN_DW_MAX_TAPS 1024

/* whether the convolution is depthwise and of a shape these kernels take */
bool lt_nn_depthwise_usable(const lt_nn_geom *g, int64_t groups, int64_t c, int64_t m);
/* y = conv(x, w) + b (b may be NULL) */
void lt_nn_depthwise_fwd(size_t esz, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const void *x,
                         const void *w, const void *b, void *y);
/* dx = the data gradient of dy (written, not accumulated) */
void lt_nn_depthwise_grad_data(size_t esz, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const void *dy,
                               const void *w, void *dx);
/* dw = the filter gradient of dy, summed over the batch (written) */
void lt_nn_depthwise_grad_filter(size_t esz, const lt_nn_geom *g, int64_t n, int64_t c, int64_t m, const void *dy,
                                 const void *x, void *dw);

#endif
