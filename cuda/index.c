/* The cuda backend's index and padding kernels, host side: GatherElements
 * and GatherElementsGrad, GatherND, ScatterND (reductions none, add, mul,
 * max, min) and Pad and PadGrad (every mode, negative pads, axes). Indices,
 * pads, axes and the constant are read on the host (host inputs), checked
 * with the CPU kernels' messages, turned into normalized indices, slice
 * offsets or per-axis index maps, and uploaded; the data stays on the
 * device (index.cu). */
#include "cuda_internal.h"
#include "../runtime/cpu/index_util.h"
#include "../runtime/cpu/tensor_util.h"
#include <stdlib.h>
#include <string.h>

static cudaStream_t stream_of(lt_kctx *k) { return lt_cuda_of(k->be)->stream; }

static lt_status need(lt_kctx *k, int i, const lt_tensor **t)
{
    *t = lt_k_in(k, i);
    if (!*t)
        return lt_k_fail(k, LT_ERR_INVALID, "input %d is missing or not a tensor", i);
    return LT_OK;
}

static lt_status need_index_type(lt_kctx *k, const lt_tensor *ind)
{
    if (ind->dtype != LT_I32 && ind->dtype != LT_I64)
        return lt_k_fail(k, LT_ERR_INVALID, "indices must be int32 or int64, got %s", lt_dtype_name(ind->dtype));
    return LT_OK;
}

static int64_t prod(const int64_t *dims, int lo, int hi)
{
    int64_t p = 1;
    for (int i = lo; i < hi; i++)
        p *= dims[i];
    return p;
}

static void strides_of(int r, const int64_t *dims, int64_t *st)
{
    int64_t s = 1;
    for (int d = r - 1; d >= 0; d--) {
        st[d] = s;
        s *= dims[d];
    }
}

/* v wrapped once if negative; false when still outside [0, bound) */
static bool wrap(int64_t *v, int64_t bound)
{
    int64_t x = *v < 0 ? *v + bound : *v;
    if (x < 0 || x >= bound)
        return false;
    *v = x;
    return true;
}

/* n int64 of the host's (the kernel's scratch) in a pool buffer of the
 * device. Released by the caller. */
static lt_status upload_i64(lt_kctx *k, const int64_t *h, int64_t n, lt_buf **b)
{
    lt_status s = lt_cuda_scratch(k, sizeof(int64_t) * (size_t)(n > 0 ? n : 1), b);
    if (s != LT_OK || n <= 0)
        return s;
    cudaError_t e = lt_cuda_upload_bytes(k->be, (*b)->data, h, sizeof(int64_t) * (size_t)n);
    if (e != cudaSuccess) {
        lt_buf_release(*b);
        *b = NULL;
        return lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cuda_upload_bytes", "CUDA", cudaGetErrorString(e));
    }
    return LT_OK;
}

static int64_t *host_scratch(lt_kctx *k, int64_t n)
{
    return lt_k_scratch(k, sizeof(int64_t) * (size_t)(n > 0 ? n : 1));
}

/* ---- GatherElements and its gradient ---- */

/* Checks data and indices as the CPU kernel does and gives the walk of the
 * indices' shape over data (axis stride apart) and the normalized indices
 * on the device. */
static lt_status elements_plan(lt_kctx *k, const lt_tensor *x, const lt_tensor *ind, lt_cu_shape *sh,
                               int64_t *axstride, lt_buf **dix)
{
    lt_status s = need_index_type(k, ind);
    if (s != LT_OK)
        return s;
    int r = x->rank;
    if (r < 1 || ind->rank != r)
        return lt_k_fail(k, LT_ERR_INVALID, "data (rank %d) and indices (rank %d) must have the same rank >= 1", r,
                         ind->rank);
    if (r > LT_CU_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "rank %d exceeds the cuda kernel's %d", r, LT_CU_MAX_RANK);
    int64_t a = lt_attr_int(k->node, "axis", 0);
    if (a < -r || a >= r)
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)a, r);
    int axis = (int)(a < 0 ? a + r : a);
    for (int d = 0; d < r; d++)
        if (d != axis && ind->dims[d] > x->dims[d])
            return lt_k_fail(k, LT_ERR_INVALID, "indices dim %d (%lld) exceeds data dim %d (%lld)", d,
                             (long long)ind->dims[d], d, (long long)x->dims[d]);
    int64_t xs[LT_MAX_RANK], n = x->dims[axis], m = ind->numel;
    strides_of(r, x->dims, xs);
    int64_t *idx = host_scratch(k, m);
    if (!idx)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for %lld indices", (long long)m);
    for (int64_t i = 0; i < m; i++) {
        int64_t v = lt_tensor_get_i64(ind, i);
        idx[i] = v;
        if (!wrap(&idx[i], n))
            return lt_k_fail(k, LT_ERR_INVALID,
                             "index %lld (at position %lld of indices) is out of range for axis %d of size %lld",
                             (long long)v, (long long)i, axis, (long long)n);
    }
    memset(sh, 0, sizeof *sh);
    sh->rank = r;
    sh->n = m;
    for (int d = 0; d < r; d++) {
        sh->dims[d] = ind->dims[d];
        sh->st[0][d] = d == axis ? 0 : xs[d];
    }
    *axstride = xs[axis];
    return upload_i64(k, idx, m, dix);
}

static lt_status k_gather_elements(lt_kctx *k)
{
    const lt_tensor *x, *ind;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need(k, 1, &ind)) != LT_OK)
        return s;
    lt_cu_shape sh;
    int64_t axs = 0;
    lt_buf *dix = NULL;
    if ((s = elements_plan(k, x, ind, &sh, &axs, &dix)) != LT_OK)
        return s;
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, ind->rank, ind->dims, &y)) == LT_OK && y->numel > 0) {
        cudaError_t e = lt_cu_gather_elements(stream_of(k), lt_dtype_size(x->dtype), x->data, dix->data, y->data, &sh,
                                              axs);
        if (e != cudaSuccess)
            s = lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cu_gather_elements", "CUDA", cudaGetErrorString(e));
    }
    lt_buf_release(dix);
    return s;
}

/* GatherElementsGrad (dy, indices, data) -> ddata: zeros shaped like data,
 * dy added at the gathered positions (data is read for its shape only) */
static lt_status k_gather_elements_grad(lt_kctx *k)
{
    const lt_tensor *dy, *ind, *x;
    lt_status s;
    if ((s = need(k, 0, &dy)) != LT_OK || (s = need(k, 1, &ind)) != LT_OK || (s = need(k, 2, &x)) != LT_OK)
        return s;
    if (dy->dtype != LT_F32 && dy->dtype != LT_F64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "dy is %s; the cuda kernel takes float32 and float64",
                         lt_dtype_name(dy->dtype));
    bool same = dy->rank == ind->rank;
    for (int d = 0; same && d < dy->rank; d++)
        same = dy->dims[d] == ind->dims[d];
    if (!same)
        return lt_k_fail(k, LT_ERR_INVALID, "dy must have the indices' shape");
    lt_cu_shape sh;
    int64_t axs = 0;
    lt_buf *dix = NULL;
    if ((s = elements_plan(k, x, ind, &sh, &axs, &dix)) != LT_OK)
        return s;
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, dy->dtype, x->rank, x->dims, &dx)) == LT_OK && dx->numel > 0) {
        cudaStream_t st = stream_of(k);
        const char *call = "cudaMemsetAsync"; /* the one that failed, for the message */
        cudaError_t e = cudaMemsetAsync(dx->data, 0, lt_tensor_nbytes(dx), st);
        if (e == cudaSuccess) {
            call = "lt_cu_gather_elements_grad";
            e = lt_cu_gather_elements_grad(st, dy->dtype == LT_F64, dy->data, dix->data, dx->data, &sh, axs);
        }
        if (e != cudaSuccess)
            s = lt_cuda_kfail(k, __FILE__, __LINE__, call, "CUDA", cudaGetErrorString(e));
    }
    lt_buf_release(dix);
    return s;
}

/* ---- GatherND ---- */
static lt_status k_gather_nd(lt_kctx *k)
{
    const lt_tensor *x, *ind;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need(k, 1, &ind)) != LT_OK || (s = need_index_type(k, ind)) != LT_OK)
        return s;
    int r = x->rank, q = ind->rank, orank = 0;
    int64_t b = 0, kk = 0, od[LT_MAX_RANK], strides[LT_MAX_RANK];
    if ((s = lt_ix_gather_nd_shape(k, x, ind, "output", &b, &kk, &orank, od)) != LT_OK)
        return s;
    for (int j = 0; j < kk; j++)
        strides[j] = prod(x->dims, (int)b + j + 1, r);
    int64_t slice = prod(x->dims, (int)(b + kk), r), bstride = prod(x->dims, (int)b, r);
    int64_t nt = prod(ind->dims, (int)b, q - 1), total = prod(ind->dims, 0, q - 1);
    int64_t *off = host_scratch(k, total);
    if (!off)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for %lld offsets", (long long)total);
    for (int64_t t = 0; t < total; t++) {
        off[t] = (t / (nt ? nt : 1)) * bstride;
        for (int j = 0; j < kk; j++) {
            int64_t v = lt_tensor_get_i64(ind, t * kk + j), w = v;
            if (!wrap(&w, x->dims[b + j]))
                return lt_k_fail(k, LT_ERR_INVALID,
                                 "index %lld (at position %lld of indices) is out of range for axis %d of size %lld",
                                 (long long)v, (long long)(t * kk + j), (int)b + j, (long long)x->dims[b + j]);
            off[t] += w * strides[j];
        }
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, orank, od, &y)) != LT_OK || y->numel == 0)
        return s;
    lt_buf *doff;
    if ((s = upload_i64(k, off, total, &doff)) != LT_OK)
        return s;
    cudaError_t e = lt_cu_gather_slices(stream_of(k), lt_dtype_size(x->dtype), x->data, doff->data, y->data, total,
                                        slice);
    lt_buf_release(doff);
    if (e != cudaSuccess)
        return lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cu_gather_slices", "CUDA", cudaGetErrorString(e));
    return LT_OK;
}

/* ---- ScatterND ---- */

/* (offset, tuple) pairs ordered by offset, then tuple */
static int by_offset(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    if (x[0] != y[0])
        return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : x[1] > y[1];
}

static lt_status k_scatter_nd(lt_kctx *k)
{
    const lt_tensor *x, *ind, *u;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need(k, 1, &ind)) != LT_OK || (s = need(k, 2, &u)) != LT_OK ||
        (s = need_index_type(k, ind)) != LT_OK)
        return s;
    const char *rs = lt_attr_str(k->node, "reduction", "none");
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    int red = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(rs, names[i]))
            red = i; /* LT_CU_RED_* in this order */
    if (red < 0)
        return lt_k_fail(k, LT_ERR_INVALID, "unknown reduction '%s'", rs);
    if ((x->dtype != LT_F32 && x->dtype != LT_F64) || u->dtype != x->dtype)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "data and updates must be float32 or float64 of one type");
    int r = x->rank, q = ind->rank;
    int64_t kk = 0;
    if ((s = lt_ix_scatter_nd_shape(k, x, ind, u, &kk)) != LT_OK)
        return s;
    int64_t strides[LT_MAX_RANK];
    for (int j = 0; j < kk; j++)
        strides[j] = prod(x->dims, j + 1, r);
    int64_t slice = prod(x->dims, (int)kk, r), nt = prod(ind->dims, 0, q - 1);
    /* pairs[2t] = offset, pairs[2t + 1] = t */
    int64_t *pairs = host_scratch(k, 2 * nt);
    if (!pairs)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for %lld offsets", (long long)nt);
    for (int64_t t = 0; t < nt; t++) {
        int64_t off = 0;
        for (int j = 0; j < kk; j++) {
            int64_t v = lt_tensor_get_i64(ind, t * kk + j), w = v;
            if (!wrap(&w, x->dims[j]))
                return lt_k_fail(k, LT_ERR_INVALID,
                                 "index %lld (tuple %lld, component %d) is out of range for dim %d of size %lld",
                                 (long long)v, (long long)t, j, j, (long long)x->dims[j]);
            off += w * strides[j];
        }
        pairs[2 * t] = off;
        pairs[2 * t + 1] = t;
    }
    /* the device arrays: offsets (first nk), then the tuples they take */
    int64_t nk = nt;
    int64_t *arr = host_scratch(k, 2 * nt);
    if (!arr)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for %lld offsets", (long long)nt);
    if (red == LT_CU_RED_NONE) {
        /* in index order the last update to an offset wins: keep that one */
        qsort(pairs, (size_t)nt, 2 * sizeof *pairs, by_offset);
        nk = 0;
        for (int64_t i = 0; i < nt; i++)
            if (i + 1 == nt || pairs[2 * (i + 1)] != pairs[2 * i]) {
                arr[nk] = pairs[2 * i];
                pairs[2 * nk + 1] = pairs[2 * i + 1]; /* nk <= i: nothing unread is overwritten */
                nk++;
            }
        for (int64_t i = 0; i < nk; i++)
            arr[nk + i] = pairs[2 * i + 1];
    } else {
        for (int64_t t = 0; t < nt; t++) {
            arr[t] = pairs[2 * t];
            arr[nt + t] = t;
        }
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y)) != LT_OK || y->numel == 0)
        return s;
    cudaStream_t st = stream_of(k);
    LT_CUDA_K(k, cudaMemcpyAsync(y->data, x->data, lt_tensor_nbytes(x), cudaMemcpyDeviceToDevice, st));
    if (nk == 0 || slice == 0)
        return LT_OK;
    lt_buf *darr;
    if ((s = upload_i64(k, arr, 2 * nk, &darr)) != LT_OK)
        return s;
    const int64_t *doff = darr->data;
    cudaError_t e = lt_cu_scatter_slices(st, x->dtype == LT_F64, y->data, doff, doff + nk, u->data, nk, slice, red);
    lt_buf_release(darr);
    if (e != cudaSuccess)
        return lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cu_scatter_slices", "CUDA", cudaGetErrorString(e));
    return LT_OK;
}

/* ---- Pad and PadGrad ---- */

/* The per-axis maps of padding x (dims: the padded shape) on the device. */
static lt_status pad_maps(lt_kctx *k, const lt_tensor *x, const int64_t *pads, const int64_t *dims, lt_pad_mode mode,
                          lt_cu_pad_maps *mp, lt_buf **dmap)
{
    int r = x->rank;
    int64_t total = 0;
    for (int a = 0; a < r; a++) {
        if (mode != LT_PAD_CONSTANT && x->dims[a] == 0)
            return lt_k_fail(k, LT_ERR_INVALID, "axis %d is empty: nothing to reflect, wrap or extend", a);
        mp->off[a] = total;
        total += dims[a];
    }
    int64_t *map = host_scratch(k, total);
    if (!map)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int a = 0; a < r; a++)
        for (int64_t o = 0; o < dims[a]; o++)
            map[mp->off[a] + o] = lt_tk_pad_index(o - pads[a], x->dims[a], mode);
    return upload_i64(k, map, total, dmap);
}

/* sh: a walk over dims with x's strides */
static void pad_walk(const lt_tensor *x, const int64_t *dims, lt_cu_shape *sh)
{
    memset(sh, 0, sizeof *sh);
    sh->rank = x->rank;
    sh->n = prod(dims, 0, x->rank);
    strides_of(x->rank, x->dims, sh->st[0]);
    memcpy(sh->dims, dims, sizeof *dims * (size_t)x->rank);
}

static lt_status k_pad(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status s = need(k, 0, &x);
    if (s != LT_OK)
        return s;
    int r = x->rank;
    if (r > LT_CU_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "rank %d exceeds the cuda kernel's %d", r, LT_CU_MAX_RANK);
    int64_t pads[2 * LT_MAX_RANK], dims[LT_MAX_RANK];
    lt_pad_mode mode;
    if ((s = lt_tk_pad_params(k, 1, r, pads, &mode)) != LT_OK || (s = lt_tk_pad_dims(k, x, pads, dims)) != LT_OK)
        return s;
    double cval = 0;
    if (k->node->opset < 11) {
        cval = lt_attr_float(k->node, "value", 0.0f);
    } else {
        const lt_tensor *cv = lt_k_in(k, 2);
        if (cv && cv->numel > 0) {
            if (cv->dtype != x->dtype)
                return lt_k_fail(k, LT_ERR_INVALID, "constant_value is %s, the input %s", lt_dtype_name(cv->dtype),
                                 lt_dtype_name(x->dtype));
            cval = lt_tensor_get_f64(cv, 0);
        }
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, r, dims, &y)) != LT_OK || y->numel == 0)
        return s;
    cudaStream_t st = stream_of(k);
    if (r == 0) {
        LT_CUDA_K(k, cudaMemcpyAsync(y->data, x->data, lt_tensor_nbytes(x), cudaMemcpyDeviceToDevice, st));
        return LT_OK;
    }
    lt_cu_pad_maps mp;
    lt_buf *dmap;
    if ((s = pad_maps(k, x, pads, dims, mode, &mp, &dmap)) != LT_OK)
        return s;
    lt_cu_shape sh;
    pad_walk(x, dims, &sh);
    cudaError_t e = lt_cu_pad(st, x->dtype == LT_F64, x->data, y->data, dmap->data, &sh, &mp, cval);
    lt_buf_release(dmap);
    if (e != cudaSuccess)
        return lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cu_pad", "CUDA", cudaGetErrorString(e));
    return LT_OK;
}

/* PadGrad (dy, x, pads, constant_value, axes) -> dx: every dy element that
 * Pad read from x added back there (x is read for its shape only) */
static lt_status k_pad_grad(lt_kctx *k)
{
    const lt_tensor *dy, *x;
    lt_status s;
    if ((s = need(k, 0, &dy)) != LT_OK || (s = need(k, 1, &x)) != LT_OK)
        return s;
    int r = x->rank;
    if (r > LT_CU_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "rank %d exceeds the cuda kernel's %d", r, LT_CU_MAX_RANK);
    if (dy->dtype != LT_F32 && dy->dtype != LT_F64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "dy is %s; the cuda kernel takes float32 and float64",
                         lt_dtype_name(dy->dtype));
    int64_t pads[2 * LT_MAX_RANK], dims[LT_MAX_RANK];
    lt_pad_mode mode = LT_PAD_CONSTANT;
    if ((s = lt_tk_pad_params(k, 2, r, pads, &mode)) != LT_OK || (s = lt_tk_pad_dims(k, x, pads, dims)) != LT_OK)
        return s;
    bool same = dy->rank == r;
    for (int d = 0; same && d < r; d++)
        same = dy->dims[d] == dims[d];
    if (!same)
        return lt_k_fail(k, LT_ERR_INVALID, "dy does not have the padded shape");
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, dy->dtype, r, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return s;
    cudaStream_t st = stream_of(k);
    if (r == 0) {
        LT_CUDA_K(k, cudaMemcpyAsync(dx->data, dy->data, lt_tensor_nbytes(dx), cudaMemcpyDeviceToDevice, st));
        return LT_OK;
    }
    LT_CUDA_K(k, cudaMemsetAsync(dx->data, 0, lt_tensor_nbytes(dx), st));
    if (dy->numel == 0)
        return LT_OK;
    lt_cu_pad_maps mp;
    lt_buf *dmap;
    if ((s = pad_maps(k, x, pads, dims, mode, &mp, &dmap)) != LT_OK)
        return s;
    lt_cu_shape sh;
    pad_walk(x, dims, &sh);
    cudaError_t e = lt_cu_pad_grad(st, dy->dtype == LT_F64, dy->data, dx->data, dmap->data, &sh, &mp);
    lt_buf_release(dmap);
    if (e != cudaSuccess)
        return lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cu_pad_grad", "CUDA", cudaGetErrorString(e));
    return LT_OK;
}

/* data of any fixed-size type (the gathers only move elements) */
static bool fits_any_data(const lt_node *n)
{
    return n->in[0] && n->in[0]->type.dtype != LT_STRING && lt_dtype_size(n->in[0]->type.dtype) > 0 &&
           lt_dtype_size(n->in[0]->type.dtype) <= 8;
}

void lt_cuda_register_index(lt_cu_op *tab)
{
    tab[LT_OP_GATHER_ELEMENTS] = (lt_cu_op){k_gather_elements, 1u << 1, 1u, fits_any_data};
    tab[LT_OP_GATHER_ELEMENTS_GRAD] = (lt_cu_op){k_gather_elements_grad, 1u << 1, 0, NULL};
    tab[LT_OP_GATHER_ND] = (lt_cu_op){k_gather_nd, 1u << 1, 1u, fits_any_data};
    tab[LT_OP_SCATTER_ND] = (lt_cu_op){k_scatter_nd, 1u << 1, 0, NULL};
    tab[LT_OP_PAD] = (lt_cu_op){k_pad, (1u << 1) | (1u << 2) | (1u << 3), 0, NULL};
    tab[LT_OP_PAD_GRAD] = (lt_cu_op){k_pad_grad, (1u << 2) | (1u << 3) | (1u << 4), 0, NULL};
}
