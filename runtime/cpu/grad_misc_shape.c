/* CPU kernels: SliceGrad (dy, x, starts, ends, axes, steps) -> dx and
 * PadGrad (dy, x, pads, constant_value, axes) -> dx. Both read their
 * parameters with the forward Slice / Pad's own code (tensor_util.h; the
 * inputs sit one later, after dy). A slice reads every position at most
 * once, so its gradient is one strided copy into zeros; so is constant
 * Pad's (the overlap of x and y). Reflect, edge and wrap read positions
 * repeatedly: their gradient folds dy back one axis at a time (the index
 * map is a product of per-axis maps, Pad's own). */
#include "grad_misc_util.h"
#include "reduce_util.h"
#include "tensor_util.h"
#include <string.h>

/* Elements per fold task along the inner axes. */
#define FOLD_BLOCK 1024

/* Inputs dy and x, dy of a type whose elements can be copied. */
static lt_status dy_and_x(lt_kctx *k, const lt_tensor **dy, const lt_tensor **x)
{
    lt_status st = lt_gm_need(k, 0, "dy", dy);
    if (st == LT_OK)
        st = lt_gm_need(k, 1, "x", x);
    if (st == LT_OK && ((*dy)->dtype == LT_STRING || lt_dtype_size((*dy)->dtype) == 0))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported", lt_dtype_name((*dy)->dtype));
    return st;
}

/* ---- SliceGrad ---- */

static lt_status k_slice_grad(lt_kctx *k)
{
    const lt_tensor *dy, *x;
    lt_status st = dy_and_x(k, &dy, &x);
    if (st != LT_OK)
        return st;
    int r = x->rank;
    int64_t first[LT_MAX_RANK], step[LT_MAX_RANK], dims[LT_MAX_RANK];
    if ((st = lt_tk_slice(k, x, 2, first, step, dims)) != LT_OK)
        return st;
    if ((st = lt_gm_shape(k, dy, "dy", r, dims)) != LT_OK)
        return st;
    lt_tensor *dx;
    if ((st = lt_k_out(k, 0, dy->dtype, r, x->dims, &dx)) != LT_OK)
        return st;
    size_t es = lt_dtype_size(dy->dtype);
    lt_gm_zero(dx->data, lt_tensor_nbytes(dx));
    if (dy->numel == 0)
        return LT_OK;
    /* write dx in ascending order: a reversed axis starts at its lowest
     * position and reads dy backwards */
    int64_t xs[LT_MAX_RANK], ys[LT_MAX_RANK], dst_s[LT_MAX_RANK], src_s[LT_MAX_RANK], doff = 0, soff = 0;
    lt_tk_strides(r, x->dims, xs);
    lt_tk_strides(r, dims, ys);
    for (int d = 0; d < r; d++) {
        if (dims[d] == 1) { /* a lone element: its step may be huge */
            doff += first[d] * xs[d];
            dst_s[d] = xs[d];
            src_s[d] = ys[d];
        } else if (step[d] > 0) {
            doff += first[d] * xs[d];
            dst_s[d] = xs[d] * step[d];
            src_s[d] = ys[d];
        } else {
            doff += (first[d] + (dims[d] - 1) * step[d]) * xs[d];
            dst_s[d] = -step[d] * xs[d];
            soff += (dims[d] - 1) * ys[d];
            src_s[d] = -ys[d];
        }
    }
    lt_tk_copy((char *)dx->data + (size_t)doff * es, dst_s, (const char *)dy->data + (size_t)soff * es, src_s, r,
               dims, es);
    return LT_OK;
}

/* ---- PadGrad ---- */

/* out (outer x nout x inner) = sum over j of in[outer, j, inner] placed at
 * map[j] (out zeroed here). Tasks (o, block of inner) own disjoint output
 * elements and add in j order. */
#define FOLD(T)                                                                                         \
    static void fold_##T(const T *in, T *out, const int64_t *map, int64_t outer, int64_t nin, int64_t nout, \
                         int64_t inner)                                                                 \
    {                                                                                                   \
        int64_t nb = (inner + FOLD_BLOCK - 1) / FOLD_BLOCK, tasks = outer * nb;                         \
        _Pragma("omp parallel for schedule(static) if (outer * nin * inner > LT_GM_PAR_MIN)")           \
        for (int64_t t = 0; t < tasks; t++) {                                                           \
            int64_t o = t / nb, i0 = (t % nb) * FOLD_BLOCK;                                             \
            int64_t n = inner - i0 < FOLD_BLOCK ? inner - i0 : FOLD_BLOCK;                              \
            for (int64_t j = 0; j < nout; j++)                                                          \
                memset(out + (o * nout + j) * inner + i0, 0, sizeof(T) * (size_t)n);                    \
            for (int64_t j = 0; j < nin; j++) {                                                         \
                if (map[j] < 0)                                                                         \
                    continue;                                                                           \
                const T *s = in + (o * nin + j) * inner + i0;                                           \
                T *d = out + (o * nout + map[j]) * inner + i0;                                          \
                _Pragma("omp simd") for (int64_t i = 0; i < n; i++) d[i] += s[i];                       \
            }                                                                                           \
        }                                                                                               \
    }
FOLD(float)
FOLD(double)
#undef FOLD

/* Reflect, edge and wrap: fold each padded axis of dy back onto x's. */
static lt_status pad_fold(lt_kctx *k, const lt_tensor *dy, const lt_tensor *x, const int64_t *pads,
                          lt_pad_mode mode, lt_tensor *dx)
{
    int r = x->rank;
    bool f64 = dy->dtype == LT_F64, native = f64 || dy->dtype == LT_F32;
    size_t es = f64 ? sizeof(double) : sizeof(float);
    const void *cur = native ? dy->data : (const void *)lt_red_load_f32(k, dy);
    if (!cur)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    int64_t cd[LT_MAX_RANK];
    memcpy(cd, dy->dims, sizeof *cd * (size_t)r);
    int last = -1;
    for (int a = 0; a < r; a++)
        if (pads[a] != 0 || pads[r + a] != 0)
            last = a;
    for (int a = 0; a <= last; a++) {
        if (pads[a] == 0 && pads[r + a] == 0)
            continue;
        int64_t outer = lt_red_prod(cd, 0, a), inner = lt_red_prod(cd, a + 1, r), nin = cd[a], nout = x->dims[a];
        int64_t *map = lt_k_scratch(k, sizeof *map * (size_t)(nin ? nin : 1));
        void *next = a == last && native ? dx->data : lt_k_scratch(k, es * (size_t)(outer * nout * inner));
        if (!map || !next)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
        for (int64_t j = 0; j < nin; j++)
            map[j] = lt_tk_pad_index(j - pads[a], nout, mode);
        if (f64)
            fold_double(cur, next, map, outer, nin, nout, inner);
        else
            fold_float(cur, next, map, outer, nin, nout, inner);
        cur = next;
        cd[a] = nout;
    }
    if (!native)
        lt_red_store_f32(cur, dx);
    else if (last < 0) /* nothing padded: dx is dy */
        memcpy(dx->data, cur, es * (size_t)dx->numel);
    return LT_OK;
}

static lt_status k_pad_grad(lt_kctx *k)
{
    const lt_tensor *dy, *x;
    lt_status st = dy_and_x(k, &dy, &x);
    if (st != LT_OK)
        return st;
    int r = x->rank;
    int64_t pads[2 * LT_MAX_RANK], dims[LT_MAX_RANK];
    lt_pad_mode mode = LT_PAD_CONSTANT;
    if ((st = lt_tk_pad_params(k, 2, r, pads, &mode)) != LT_OK || (st = lt_tk_pad_dims(k, x, pads, dims)) != LT_OK)
        return st;
    if ((st = lt_gm_shape(k, dy, "dy", r, dims)) != LT_OK)
        return st;
    if (mode != LT_PAD_CONSTANT && !lt_dtype_is_float(dy->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "mode %s needs a float type, dy is %s",
                         lt_attr_str(k->node, "mode", ""), lt_dtype_name(dy->dtype));
    lt_tensor *dx;
    if ((st = lt_k_out(k, 0, dy->dtype, r, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return st;
    if (dy->numel == 0) {
        memset(dx->data, 0, lt_tensor_nbytes(dx));
        return LT_OK;
    }
    if (mode != LT_PAD_CONSTANT)
        return pad_fold(k, dy, x, pads, mode, dx);
    /* constant: dx is the part of dy over x, zero where x was cropped away */
    size_t es = lt_dtype_size(dy->dtype);
    int64_t box[LT_MAX_RANK], xs[LT_MAX_RANK], ys[LT_MAX_RANK], xoff = 0, yoff = 0;
    bool empty = false;
    lt_tk_strides(r, x->dims, xs);
    lt_tk_strides(r, dims, ys);
    for (int a = 0; a < r; a++) {
        int64_t lo = pads[a] < 0 ? -pads[a] : 0, hi = dims[a] - pads[a];
        if (hi > x->dims[a])
            hi = x->dims[a];
        box[a] = hi > lo ? hi - lo : 0;
        empty |= box[a] == 0;
        xoff += lo * xs[a];
        yoff += (lo + pads[a]) * ys[a];
    }
    bool whole = !empty;
    for (int a = 0; a < r && whole; a++)
        whole = box[a] == x->dims[a];
    if (!whole)
        lt_gm_zero(dx->data, lt_tensor_nbytes(dx));
    if (!empty)
        lt_tk_copy((char *)dx->data + (size_t)xoff * es, xs, (const char *)dy->data + (size_t)yoff * es, ys, r, box,
                   es);
    return LT_OK;
}

void lt_cpu_register_grad_misc_shape(lt_kernel_fn *tab)
{
    tab[LT_OP_SLICE_GRAD] = k_slice_grad;
    tab[LT_OP_PAD_GRAD] = k_pad_grad;
}
