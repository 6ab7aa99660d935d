/* Output sizes shared by the image family's shape rules and CPU kernels
 * (Resize, Upsample). */
#ifndef LT_SHAPE_IMAGE_H
#define LT_SHAPE_IMAGE_H

#include "ir.h"

/* The length an axis of in entries takes under a float scale:
 * floor(in * scale) with the product in float32, as onnxruntime computes
 * it and as PyTorch's float64 product of the scale it exported agrees
 * (5 * 2.6f is 13.0f; in float64 12.9999995 would floor to 12); in
 * float64 past 2^24 entries, which float32 cannot count exactly. */
int64_t lt_resize_len(int64_t in, double scale);

#endif
