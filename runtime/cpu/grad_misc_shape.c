/* CPU kernels: SliceGrad (dy, x, starts, ends, axes, steps) -> dx and
 * PadGrad (dy, x, pads, constant_value, axes) -> dx. Both read their
 * parameters exactly as the forward Slice / Pad do for node->opset. A slice
 * reads every position at most once, so its gradient is one strided copy
 * into zeros; so is constant Pad's (the overlap of x and y). Reflect, edge
 * and wrap read positions repeatedly: their gradient folds dy back one
 * axis at a time (the index map is a product of per-axis maps). */
#include "grad_misc_util.h"
#include "reduce_util.h"
#include "tensor_util.h"
#include <string.h>

/* Elements per fold task along the inner axes. */
#define FOLD_BLOCK 1024

static lt_status copyable(lt_kctx *k, const lt_tensor *dy)
{
    if (dy->dtype == LT_STRING || lt_dtype_size(dy->dtype) == 0)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported", lt_dtype_name(dy->dtype));
    return LT_OK;
}

/* ---- SliceGrad ---- */

/* Slice's parameters: attributes before opset 10, inputs 2..5 after (one
 * later than the forward's: dy comes first). */
static lt_status slice_params(lt_kctx *k, int r, int64_t *starts, int64_t *ends, int64_t *axes, int64_t *steps,
                              int *n)
{
    int ns, ne, na = -1, nst = -1;
    if (k->node->opset < 10) {
        const int64_t *s = lt_attr_ints(k->node, "starts", &ns), *e = lt_attr_ints(k->node, "ends", &ne);
        const int64_t *a = lt_attr_ints(k->node, "axes", &na);
        if (!s || !e)
            return lt_k_fail(k, LT_ERR_INVALID, "starts and ends are required");
        if (ns > LT_MAX_RANK || ne > LT_MAX_RANK || (a && na > LT_MAX_RANK))
            return lt_k_fail(k, LT_ERR_RUNTIME, "more slice entries than the input has axes");
        memcpy(starts, s, sizeof *s * ns);
        memcpy(ends, e, sizeof *e * ne);
        if (a)
            memcpy(axes, a, sizeof *a * na);
        else
            na = -1;
    } else {
        const lt_tensor *s, *e, *a = lt_k_in(k, 4), *st = lt_k_in(k, 5);
        lt_status rc = lt_gm_need(k, 2, "starts", &s);
        if (rc == LT_OK)
            rc = lt_gm_need(k, 3, "ends", &e);
        if (rc == LT_OK)
            rc = lt_tk_ints(k, s, starts, LT_MAX_RANK, &ns, "starts");
        if (rc == LT_OK)
            rc = lt_tk_ints(k, e, ends, LT_MAX_RANK, &ne, "ends");
        if (rc == LT_OK && a)
            rc = lt_tk_ints(k, a, axes, LT_MAX_RANK, &na, "axes");
        if (rc == LT_OK && st)
            rc = lt_tk_ints(k, st, steps, LT_MAX_RANK, &nst, "steps");
        if (rc != LT_OK)
            return rc;
    }
    if (ne != ns || (na >= 0 && na != ns) || (nst >= 0 && nst != ns))
        return lt_k_fail(k, LT_ERR_RUNTIME, "starts, ends, axes and steps differ in length");
    if (na < 0)
        for (int i = 0; i < ns; i++)
            axes[i] = i;
    if (nst < 0)
        for (int i = 0; i < ns; i++)
            steps[i] = 1;
    if (ns > r)
        return lt_k_fail(k, LT_ERR_RUNTIME, "%d slice entries for an input of rank %d", ns, r);
    *n = ns;
    return LT_OK;
}

static lt_status k_slice_grad(lt_kctx *k)
{
    const lt_tensor *dy, *x;
    lt_status st = lt_gm_need(k, 0, "dy", &dy);
    if (st == LT_OK)
        st = lt_gm_need(k, 1, "x", &x);
    if (st == LT_OK)
        st = copyable(k, dy);
    if (st != LT_OK)
        return st;
    int r = x->rank, n = 0;
    int64_t starts[LT_MAX_RANK], ends[LT_MAX_RANK], axes[LT_MAX_RANK], steps[LT_MAX_RANK];
    if ((st = slice_params(k, r, starts, ends, axes, steps, &n)) != LT_OK)
        return st;
    int64_t first[LT_MAX_RANK] = {0}, step[LT_MAX_RANK], dims[LT_MAX_RANK];
    bool seen[LT_MAX_RANK] = {0};
    for (int d = 0; d < r; d++) {
        step[d] = 1;
        dims[d] = x->dims[d];
    }
    for (int i = 0; i < n; i++) {
        int a;
        if (!lt_tk_axis(axes[i], r, &a))
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)axes[i], r);
        if (seen[a])
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %d is sliced twice", a);
        seen[a] = true;
        int64_t dim = x->dims[a], s = starts[i], e = ends[i], t = steps[i], len;
        if (t == 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "step on axis %d is 0", a);
        /* as Slice: negative positions count from the end, then clamp to
         * the range the direction walks (INT64 sentinels land there too) */
        if (s < 0)
            s += dim;
        if (e < 0)
            e += dim;
        if (t > 0) {
            s = s < 0 ? 0 : s > dim ? dim : s;
            e = e < 0 ? 0 : e > dim ? dim : e;
            len = e > s ? (e - s - 1) / t + 1 : 0;
        } else {
            s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
            e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
            int64_t back = t == INT64_MIN ? INT64_MAX : -t;
            len = dim > 0 && s > e ? (s - e - 1) / back + 1 : 0;
        }
        first[a] = s;
        step[a] = t;
        dims[a] = len;
    }
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
typedef enum { PAD_CONSTANT, PAD_REFLECT, PAD_EDGE, PAD_WRAP } pad_mode;

/* x's index read by y's position i - pad_begin along an axis of size d, as
 * Pad defines it for each mode; -1 for a constant-mode pad position. */
static int64_t pad_source(int64_t i, int64_t d, pad_mode mode)
{
    if (i >= 0 && i < d)
        return i;
    switch (mode) {
    case PAD_EDGE:
        return i < 0 ? 0 : d - 1;
    case PAD_WRAP:
        i %= d;
        return i < 0 ? i + d : i;
    case PAD_REFLECT: {
        if (d == 1)
            return 0;
        int64_t p = 2 * (d - 1); /* reflection without repeating the edge */
        i %= p;
        if (i < 0)
            i += p;
        return i < d ? i : p - i;
    }
    default:
        return -1;
    }
}

/* pads[0..r) begin, pads[r..2r) end, read as Pad does for node->opset. */
static lt_status pad_params(lt_kctx *k, int r, int64_t *pads, pad_mode *mode)
{
    const char *ms = lt_attr_str(k->node, "mode", "constant");
    if (!strcmp(ms, "constant"))
        *mode = PAD_CONSTANT;
    else if (!strcmp(ms, "reflect"))
        *mode = PAD_REFLECT;
    else if (!strcmp(ms, "edge"))
        *mode = PAD_EDGE;
    else if (!strcmp(ms, "wrap"))
        *mode = PAD_WRAP;
    else
        return lt_k_fail(k, LT_ERR_INVALID, "unknown mode '%s'", ms);
    memset(pads, 0, sizeof *pads * 2 * LT_MAX_RANK);
    int np;
    if (k->node->opset < 11) {
        const int64_t *p = lt_attr_ints(k->node, k->node->opset < 2 ? "paddings" : "pads", &np);
        if (!p)
            return lt_k_fail(k, LT_ERR_INVALID, "the pads attribute is missing");
        if (np != 2 * r)
            return lt_k_fail(k, LT_ERR_RUNTIME, "pads has %d entries for an input of rank %d", np, r);
        memcpy(pads, p, sizeof *p * np);
        return LT_OK;
    }
    const lt_tensor *p, *ax = lt_k_in(k, 4);
    int64_t raw[2 * LT_MAX_RANK], axes[LT_MAX_RANK];
    lt_status st = lt_gm_need(k, 2, "pads", &p);
    if (st == LT_OK)
        st = lt_tk_ints(k, p, raw, 2 * LT_MAX_RANK, &np, "pads");
    if (st != LT_OK)
        return st;
    int na = r;
    if (ax) {
        if ((st = lt_tk_ints(k, ax, axes, LT_MAX_RANK, &na, "axes")) != LT_OK)
            return st;
    } else {
        for (int i = 0; i < r; i++)
            axes[i] = i;
    }
    if (np != 2 * na)
        return lt_k_fail(k, LT_ERR_RUNTIME, "pads has %d entries for %d axes", np, na);
    bool seen[LT_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int a;
        if (!lt_tk_axis(axes[i], r, &a))
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)axes[i], r);
        if (seen[a])
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %d is given twice", a);
        seen[a] = true;
        pads[a] = raw[i];
        pads[r + a] = raw[na + i];
    }
    return LT_OK;
}

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
static lt_status pad_fold(lt_kctx *k, const lt_tensor *dy, const lt_tensor *x, const int64_t *pads, pad_mode mode,
                          lt_tensor *dx)
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
            map[j] = pad_source(j - pads[a], nout, mode);
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
    lt_status st = lt_gm_need(k, 0, "dy", &dy);
    if (st == LT_OK)
        st = lt_gm_need(k, 1, "x", &x);
    if (st == LT_OK)
        st = copyable(k, dy);
    if (st != LT_OK)
        return st;
    int r = x->rank;
    int64_t pads[2 * LT_MAX_RANK], dims[LT_MAX_RANK];
    pad_mode mode = PAD_CONSTANT;
    if ((st = pad_params(k, r, pads, &mode)) != LT_OK)
        return st;
    for (int a = 0; a < r; a++)
        if (__builtin_add_overflow(x->dims[a], pads[a], &dims[a]) ||
            __builtin_add_overflow(dims[a], pads[r + a], &dims[a]) || dims[a] < 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "pads [%lld, %lld] on axis %d of size %lld leave no valid size",
                             (long long)pads[a], (long long)pads[r + a], a, (long long)x->dims[a]);
    if ((st = lt_gm_shape(k, dy, "dy", r, dims)) != LT_OK)
        return st;
    if (mode != PAD_CONSTANT && !lt_dtype_is_float(dy->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "mode %s needs a float type, dy is %s",
                         lt_attr_str(k->node, "mode", ""), lt_dtype_name(dy->dtype));
    lt_tensor *dx;
    if ((st = lt_k_out(k, 0, dy->dtype, r, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return st;
    if (dy->numel == 0) {
        memset(dx->data, 0, lt_tensor_nbytes(dx));
        return LT_OK;
    }
    if (mode != PAD_CONSTANT)
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
