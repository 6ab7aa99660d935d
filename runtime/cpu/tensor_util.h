/* Private helpers shared by the tensor-family kernels (runtime/cpu/tensor*.c):
 * reading integer lists from inputs, axis normalisation, and the strided
 * element copy that Transpose, Slice, Expand, Tile, Concat, Split and the
 * depth/space ops are all built on. */
#ifndef LT_CPU_TENSOR_UTIL_H
#define LT_CPU_TENSOR_UTIL_H

#include "../runtime.h"
#include "par.h"

/* Strided copies may split every dim in two (Tile), hence twice the rank. */
#define LT_TK_MAX_RANK (2 * LT_MAX_RANK)
/* Below this many elements a copy stays on one thread. */
#define LT_TK_PAR_MIN LT_PAR_ELEMS

/* dst[i0..] = src[i0..] over `dims`, offsets in elements through the given
 * strides (src strides may be 0 for broadcasting or negative for reversed
 * slices). Size-1 dims are dropped and contiguous dims merged first; an
 * innermost transpose runs through cache-sized tiles. */
void lt_tk_copy(void *dst, const int64_t *dst_strides, const void *src, const int64_t *src_strides, int rank,
                const int64_t *dims, size_t esize);
/* Row-major element strides of a shape. */
void lt_tk_strides(int rank, const int64_t *dims, int64_t *strides);
/* n copies of the element at elem. */
void lt_tk_fill(void *dst, int64_t n, const void *elem, size_t esize);

/* Normalises axis against rank (negative counts from the end); false when
 * it is out of range. */
bool lt_tk_axis(int64_t axis, int rank, int *out);

/* Reads a 0-D or 1-D integer tensor into out[0..*n); fails (with a message
 * naming `what`) when it is not an integer tensor or has more than max
 * values. */
lt_status lt_tk_ints(lt_kctx *k, const lt_tensor *t, int64_t *out, int max, int *n, const char *what);

/* The op's input i, or a failed status when it is missing or not a tensor. */
lt_status lt_tk_need(lt_kctx *k, int i, const lt_tensor **t);

/* Split's arguments for input x: *axis (checked against x's rank) and
 * *sizes (kernel scratch), the outputs' lengths along it, one per output:
 * the split input (opset 13 on) or attribute, else num_outputs' chunks
 * (opset 18), else equal parts; checked to add up to the axis' length. */
lt_status lt_tk_split_args(lt_kctx *k, const lt_tensor *x, int *axis, int64_t **sizes);

/* ConstantOfShape's arguments: the shape (input 0, read on the host) into
 * dims[0..*rank), checked non-negative, and the fill value: its type and
 * its one element (the `value` attribute, float32 0 by default). */
lt_status lt_tk_constant_of_shape_args(lt_kctx *k, int64_t *dims, int *rank, lt_dtype *dt, const void **elem);

/* Shared by Pad and CenterCropPad: output[o] = x[o - pads_begin] where that
 * lies inside x, else the element at cval (constant mode) or the reflected,
 * edge or wrapped element. pads holds begin[rank] then end[rank]. */
typedef enum { LT_PAD_CONSTANT, LT_PAD_REFLECT, LT_PAD_EDGE, LT_PAD_WRAP } lt_pad_mode;
lt_status lt_tk_pad(lt_kctx *k, const lt_tensor *x, const int64_t *pads, lt_pad_mode mode, const void *cval);

/* The pieces of Pad that PadGrad (grad_misc_shape.c) reads the same way.
 * Pad's mode and pads[0..r) begin, pads[r..2r) end for a rank-r input: the
 * attribute before opset 11, else input in0 with the axes at in0 + 2. */
lt_status lt_tk_pad_params(lt_kctx *k, int in0, int r, int64_t *pads, lt_pad_mode *mode);
/* The padded shape; fails when a pad leaves an axis negative or overflows. */
lt_status lt_tk_pad_dims(lt_kctx *k, const lt_tensor *x, const int64_t *pads, int64_t *dims);
/* x's index that position i - pad_begin reads along an axis of size d; -1
 * for a constant-mode pad position. */
int64_t lt_tk_pad_index(int64_t i, int64_t d, lt_pad_mode mode);

/* Slice (and SliceGrad): starts, ends, axes and steps from the attributes
 * before opset 10, else inputs in0..in0+3, resolved against x as per axis
 * the first position read, the step and the length read. */
lt_status lt_tk_slice(lt_kctx *k, const lt_tensor *x, int in0, int64_t *first, int64_t *step, int64_t *dims);

/* Registrars of the other tensor-family files, called by lt_cpu_register_tensor. */
void lt_tk_register_copy(lt_kernel_fn *tab);
void lt_tk_register_pad(lt_kernel_fn *tab);
void lt_tk_register_gen(lt_kernel_fn *tab);

#endif
