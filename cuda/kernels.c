/* The cuda backend's kernels over lantern's kernel interface: they check
 * shapes and attributes on the host as the CPU kernels do, allocate their
 * outputs on the device (lt_k_out through the backend) and launch
 * kernels.cu's launchers on the backend's stream. Views (Identity, Reshape,
 * Flatten, Squeeze, Unsqueeze) are the CPU's own kernels: they only make a
 * new shape over the same storage. Labels, axes and shapes are read on the
 * host (the host_inputs of each op). */
#include "cuda_internal.h"
#include "../ir/shape_nn.h"
#include "../runtime/cpu/elementwise_bcast.h"
#include "../runtime/cpu/tensor_util.h"
#include <math.h>
#include <string.h>

#define F64(t) ((t)->dtype == LT_F64)

static cudaStream_t stream_of(lt_kctx *k) { return lt_cuda_of(k->be)->stream; }

static lt_status need(lt_kctx *k, int i, const lt_tensor **t)
{
    *t = lt_k_in(k, i);
    if (!*t)
        return lt_k_fail(k, LT_ERR_INVALID, "input %d is missing", i);
    return LT_OK;
}

static lt_status need_float(lt_kctx *k, const lt_tensor *t, int i)
{
    if (t->dtype != LT_F32 && t->dtype != LT_F64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "input %d is %s; the cuda kernel takes float32 and float64", i,
                         lt_dtype_name(t->dtype));
    return LT_OK;
}

/* Numpy broadcasting of n tensors into sh (strides 0 where broadcast). */
static lt_status broadcast(lt_kctx *k, int n, const lt_tensor *const *ts, lt_cu_shape *sh)
{
    memset(sh, 0, sizeof *sh);
    int rank = 0;
    for (int i = 0; i < n; i++)
        if (ts[i]->rank > rank)
            rank = ts[i]->rank;
    if (rank > LT_CU_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "rank %d is beyond the cuda kernels' %d", rank, LT_CU_MAX_RANK);
    sh->rank = rank;
    sh->n = 1;
    for (int d = 0; d < rank; d++) {
        int64_t dim = 1;
        for (int i = 0; i < n; i++) {
            int off = rank - ts[i]->rank;
            int64_t di = d >= off ? ts[i]->dims[d - off] : 1;
            if (di != 1) {
                if (dim != 1 && dim != di)
                    return lt_k_fail(k, LT_ERR_INVALID, "shapes do not broadcast (dim %d: %lld against %lld)", d,
                                     (long long)dim, (long long)di);
                dim = di;
            }
        }
        sh->dims[d] = dim;
        sh->n *= dim;
    }
    for (int i = 0; i < n; i++) {
        int off = rank - ts[i]->rank;
        int64_t stride = 1;
        for (int d = rank - 1; d >= 0; d--) {
            int64_t di = d >= off ? ts[i]->dims[d - off] : 1;
            sh->st[i][d] = di == 1 ? 0 : stride;
            stride *= di;
        }
    }
    return LT_OK;
}

/* ---- elementwise ---- */
static int binary_code(lt_op op)
{
    switch (op) {
    case LT_OP_ADD: return LT_CU_ADD;
    case LT_OP_SUB: return LT_CU_SUB;
    case LT_OP_MUL: return LT_CU_MUL;
    case LT_OP_DIV: return LT_CU_DIV;
    case LT_OP_POW: return LT_CU_POW;
    case LT_OP_MAX: return LT_CU_MAX;
    case LT_OP_MIN: return LT_CU_MIN;
    case LT_OP_RELU_GRAD: return LT_CU_RELU_GRAD;
    case LT_OP_GREATER: return LT_CU_GREATER;
    case LT_OP_LESS: return LT_CU_LESS;
    case LT_OP_EQUAL: return LT_CU_EQUAL;
    case LT_OP_GREATER_OR_EQUAL: return LT_CU_GREATER_EQ;
    case LT_OP_LESS_OR_EQUAL: return LT_CU_LESS_EQ;
    default: return -1;
    }
}

static lt_status k_binary(lt_kctx *k)
{
    const lt_tensor *a, *b;
    lt_status s;
    if ((s = need(k, 0, &a)) != LT_OK || (s = need(k, 1, &b)) != LT_OK || (s = need_float(k, a, 0)) != LT_OK)
        return s;
    if (a->dtype != b->dtype) /* as lt_ew_binary says it (Pow of two types runs on the host: fits_pow) */
        return lt_k_fail(k, LT_ERR_INVALID, "input types differ (%s and %s)", lt_dtype_name(a->dtype),
                         lt_dtype_name(b->dtype));
    /* before opset 7, broadcast=1 lays B against A from axis on: B viewed
     * with trailing 1s, as the CPU does, then numpy broadcasting */
    lt_tensor bl;
    if ((s = lt_ew_legacy_bcast(k, a, &b, &bl)) != LT_OK)
        return s;
    const lt_tensor *ts[2] = {a, b};
    lt_cu_shape sh;
    if ((s = broadcast(k, 2, ts, &sh)) != LT_OK)
        return s;
    int code = binary_code(k->node->op);
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, code >= LT_CU_GREATER ? LT_BOOL : a->dtype, sh.rank, sh.dims, &y)) != LT_OK)
        return s;
    LT_CUDA_K(k, lt_cu_binary(stream_of(k), code, F64(a), a->data, b->data, y->data, &sh));
    return LT_OK;
}

static bool fits_two_inputs(const lt_node *n) { return n->nin == 2; }

/* Pow of a float32 base and a float64 exponent (or the reverse) is computed
 * in the wider type on the CPU (k_pow); the kernel takes one type. */
static bool fits_pow(const lt_node *n)
{
    return n->nin == 2 && n->in[0] && n->in[1] && n->in[0]->type.dtype == n->in[1]->type.dtype;
}

static lt_status k_where(lt_kctx *k)
{
    const lt_tensor *c, *a, *b;
    lt_status s;
    if ((s = need(k, 0, &c)) != LT_OK || (s = need(k, 1, &a)) != LT_OK || (s = need(k, 2, &b)) != LT_OK ||
        (s = need_float(k, a, 1)) != LT_OK)
        return s;
    if (c->dtype != LT_BOOL || a->dtype != b->dtype)
        return lt_k_fail(k, LT_ERR_INVALID, "Where takes a bool condition and two values of one type");
    const lt_tensor *ts[3] = {c, a, b};
    lt_cu_shape sh;
    if ((s = broadcast(k, 3, ts, &sh)) != LT_OK)
        return s;
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, a->dtype, sh.rank, sh.dims, &y)) != LT_OK)
        return s;
    LT_CUDA_K(k, lt_cu_where(stream_of(k), F64(a), c->data, a->data, b->data, y->data, &sh));
    return LT_OK;
}

static bool fits_where(const lt_node *n)
{
    return n->nin == 3 && n->in[0] && n->in[0]->type.dtype == LT_BOOL;
}

static lt_status k_unary(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need_float(k, x, 0)) != LT_OK)
        return s;
    int code;
    double alpha = 0;
    switch (k->node->op) {
    case LT_OP_RELU: code = LT_CU_RELU; break;
    case LT_OP_SIGMOID: code = LT_CU_SIGMOID; break;
    case LT_OP_TANH: code = LT_CU_TANH; break;
    case LT_OP_EXP: code = LT_CU_EXP; break;
    case LT_OP_LOG: code = LT_CU_LOG; break;
    case LT_OP_NEG: code = LT_CU_NEG; break;
    case LT_OP_SQRT: code = LT_CU_SQRT; break;
    case LT_OP_ERF: code = LT_CU_ERF; break;
    case LT_OP_ABS: code = LT_CU_ABS; break;
    case LT_OP_RECIPROCAL: code = LT_CU_RECIPROCAL; break;
    case LT_OP_SIN: code = LT_CU_SIN; break;
    case LT_OP_COS: code = LT_CU_COS; break;
    case LT_OP_FLOOR: code = LT_CU_FLOOR; break;
    case LT_OP_CEIL: code = LT_CU_CEIL; break;
    case LT_OP_SOFTPLUS: code = LT_CU_SOFTPLUS; break;
    case LT_OP_LEAKY_RELU:
        code = LT_CU_LEAKY_RELU;
        alpha = lt_attr_float(k->node, "alpha", 0.01f);
        break;
    case LT_OP_ELU:
        code = LT_CU_ELU;
        alpha = lt_attr_float(k->node, "alpha", 1.0f);
        break;
    case LT_OP_GELU: {
        const char *a = lt_attr_str(k->node, "approximate", "none");
        if (strcmp(a, "tanh") != 0 && strcmp(a, "none") != 0) /* as the CPU refuses it */
            return lt_k_fail(k, LT_ERR_INVALID, "approximate must be 'none' or 'tanh', not '%s'", a);
        code = strcmp(a, "tanh") == 0 ? LT_CU_GELU_TANH : LT_CU_GELU;
        break;
    }
    default: return lt_k_fail(k, LT_ERR_INTERNAL, "no cuda unary kernel for this op");
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y)) != LT_OK)
        return s;
    LT_CUDA_K(k, lt_cu_unary(stream_of(k), code, F64(x), x->data, y->data, x->numel, alpha));
    return LT_OK;
}

/* ---- sums over axes ---- */
/* y = scale * the sum of x over the axes with red[d] set; y keeps x's rank
 * with 1 at the reduced axes (the caller views it as it needs). Where the
 * reduced axes hold nothing every output is empty (the CPU's value for the
 * op: 0 for sums, NaN = 0/0 for ReduceMean, 0 for GlobalAveragePool). */
static lt_status sum_axes(lt_kctx *k, const lt_tensor *x, const bool *red, double scale, double empty, lt_tensor *y)
{
    lt_cu_shape sh, rs;
    memset(&sh, 0, sizeof sh);
    memset(&rs, 0, sizeof rs);
    if (x->rank > LT_CU_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "rank %d is beyond the cuda kernels' %d", x->rank, LT_CU_MAX_RANK);
    int64_t stride[LT_MAX_RANK], st = 1;
    for (int d = x->rank - 1; d >= 0; d--) {
        stride[d] = st;
        st *= x->dims[d];
    }
    sh.n = rs.n = 1;
    for (int d = 0; d < x->rank; d++) {
        if (red[d]) {
            rs.dims[rs.rank] = x->dims[d];
            rs.st[0][rs.rank++] = stride[d];
            rs.n *= x->dims[d];
        } else {
            sh.dims[sh.rank] = x->dims[d];
            sh.st[0][sh.rank++] = stride[d];
            sh.n *= x->dims[d];
        }
    }
    if (rs.n == 0) { /* a reduction of nothing */
        LT_CUDA_K(k, lt_cu_fill(stream_of(k), F64(x), y->data, sh.n, empty));
        return LT_OK;
    }
    LT_CUDA_K(k, lt_cu_reduce_sum(stream_of(k), F64(x), x->data, y->data, &sh, &rs, scale));
    return LT_OK;
}

/* ReduceSum / ReduceMean: axes from input 1 (host) or the attribute,
 * keepdims, noop_with_empty_axes. */
static lt_status k_reduce(lt_kctx *k)
{
    const lt_tensor *x, *ax = lt_k_in(k, 1);
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need_float(k, x, 0)) != LT_OK)
        return s;
    bool red[LT_MAX_RANK] = {false};
    int nax = 0;
    const int64_t *attr_axes = NULL;
    if (ax && (!lt_dtype_is_int(ax->dtype) || ax->rank > 1)) /* as the CPU's reduce_axes */
        return lt_k_fail(k, LT_ERR_INVALID, "axes must be a 1-D integer tensor");
    if (ax)
        nax = (int)ax->numel;
    else
        attr_axes = lt_attr_ints(k->node, "axes", &nax);
    for (int i = 0; i < nax; i++) {
        int64_t v = ax ? lt_tensor_get_i64(ax, i) : attr_axes[i], a = v < 0 ? v + x->rank : v;
        if (a < 0 || a >= x->rank)
            return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)v, x->rank);
        if (red[a])
            return lt_k_fail(k, LT_ERR_INVALID, "axis %lld appears twice", (long long)v);
        red[a] = true;
    }
    bool keep = lt_attr_int(k->node, "keepdims", 1) != 0;
    if (nax == 0) {
        if (lt_attr_int(k->node, "noop_with_empty_axes", 0))
            return lt_k_out_view(k, 0, x, x->rank, x->dims);
        for (int d = 0; d < x->rank; d++)
            red[d] = true;
    }
    int64_t cnt = 1, od[LT_MAX_RANK];
    int orank = 0;
    for (int d = 0; d < x->rank; d++) {
        if (red[d]) {
            cnt *= x->dims[d];
            if (keep)
                od[orank++] = 1;
        } else {
            od[orank++] = x->dims[d];
        }
    }
    bool mean = k->node->op == LT_OP_REDUCE_MEAN;
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, orank, od, &y)) != LT_OK)
        return s;
    /* the mean of nothing is 0/0 = NaN on the CPU (reduce.c finish) */
    return sum_axes(k, x, red, mean && cnt > 0 ? 1.0 / (double)cnt : 1.0, mean ? NAN : 0.0, y);
}

/* ReduceSumLike (g, like): g summed to like's shape (the reverse of
 * broadcasting like to g's). */
static lt_status k_reduce_sum_like(lt_kctx *k)
{
    const lt_tensor *g, *like;
    lt_status s;
    if ((s = need(k, 0, &g)) != LT_OK || (s = need(k, 1, &like)) != LT_OK || (s = need_float(k, g, 0)) != LT_OK)
        return s;
    if (like->rank > g->rank)
        return lt_k_fail(k, LT_ERR_INVALID, "rank %d cannot be summed to rank %d", g->rank, like->rank);
    bool red[LT_MAX_RANK] = {false};
    int off = g->rank - like->rank;
    for (int d = 0; d < g->rank; d++) {
        int64_t ld = d >= off ? like->dims[d - off] : 1;
        if (ld == g->dims[d])
            continue;
        if (ld != 1)
            return lt_k_fail(k, LT_ERR_INVALID, "dim %d of %lld cannot be summed to %lld", d, (long long)g->dims[d],
                             (long long)ld);
        red[d] = true;
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, g->dtype, like->rank, like->dims, &y)) != LT_OK)
        return s;
    return sum_axes(k, g, red, 1.0, 0.0, y);
}

/* GlobalAveragePool: the mean over every spatial axis, kept as 1s; an
 * (N, C) input has none (a copy) and an empty plane gives 0, as on the CPU
 * (nn_pool.c global_pool). */
static lt_status k_global_avg_pool(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need_float(k, x, 0)) != LT_OK)
        return s;
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input of rank %d (needs N and C)", x->rank);
    bool red[LT_MAX_RANK] = {false};
    int64_t od[LT_MAX_RANK], cnt = 1;
    for (int d = 0; d < x->rank; d++) {
        red[d] = d >= 2;
        od[d] = d >= 2 ? 1 : x->dims[d];
        if (d >= 2)
            cnt *= x->dims[d];
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, od, &y)) != LT_OK)
        return s;
    return sum_axes(k, x, red, cnt > 0 ? 1.0 / (double)cnt : 1.0, 0.0, y);
}

/* Expand (x, shape): x broadcast with shape (read on the host). */
static lt_status k_expand(lt_kctx *k)
{
    const lt_tensor *x, *shp;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need(k, 1, &shp)) != LT_OK)
        return s;
    if (!lt_dtype_is_int(shp->dtype) || shp->rank != 1 || shp->numel > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_INVALID, "shape must be a 1-D integer tensor of at most %d values", LT_MAX_RANK);
    lt_tensor want;
    memset(&want, 0, sizeof want);
    want.rank = (int)shp->numel;
    for (int i = 0; i < want.rank; i++) {
        want.dims[i] = lt_tensor_get_i64(shp, i);
        if (want.dims[i] < 0)
            return lt_k_fail(k, LT_ERR_INVALID, "shape value %lld is negative", (long long)want.dims[i]);
    }
    const lt_tensor *ts[2] = {x, &want};
    lt_cu_shape sh;
    if ((s = broadcast(k, 2, ts, &sh)) != LT_OK)
        return s;
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, sh.rank, sh.dims, &y)) != LT_OK)
        return s;
    LT_CUDA_K(k, lt_cu_binary(stream_of(k), LT_CU_COPY, F64(x), x->data, NULL, y->data, &sh));
    return LT_OK;
}

/* ---- softmax ---- */
/* The (outer, c, inner) split of the op's axis (opset-dependent as on the
 * CPU: before 13 the input is coerced to 2-D around axis). */
static lt_status softmax_split(lt_kctx *k, const lt_tensor *x, int64_t *outer, int64_t *c, int64_t *inner)
{
    bool legacy = k->node->opset < 13;
    int64_t axis = lt_attr_int(k->node, "axis", legacy ? 1 : -1);
    int rank = x->rank;
    int64_t a = axis < 0 ? axis + rank : axis;
    if (!(legacy && axis == rank) && (a < 0 || a >= rank))
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis, rank);
    *outer = 1;
    for (int d = 0; d < a; d++)
        *outer *= x->dims[d];
    *c = 1;
    *inner = 1;
    if (legacy) {
        for (int d = (int)a; d < rank; d++)
            *c *= x->dims[d];
    } else {
        *c = x->dims[a];
        for (int d = (int)a + 1; d < rank; d++)
            *inner *= x->dims[d];
    }
    return LT_OK;
}

static lt_status k_softmax(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need_float(k, x, 0)) != LT_OK)
        return s;
    int64_t outer, c, inner;
    if ((s = softmax_split(k, x, &outer, &c, &inner)) != LT_OK)
        return s;
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y)) != LT_OK)
        return s;
    LT_CUDA_K(k, lt_cu_softmax(stream_of(k), F64(x), x->data, y->data, outer, c, inner,
                               k->node->op == LT_OP_LOG_SOFTMAX));
    return LT_OK;
}

static lt_status k_softmax_grad(lt_kctx *k)
{
    const lt_tensor *dy, *y;
    lt_status s;
    if ((s = need(k, 0, &dy)) != LT_OK || (s = need(k, 1, &y)) != LT_OK || (s = need_float(k, y, 1)) != LT_OK)
        return s;
    if (dy->dtype != y->dtype || dy->numel != y->numel)
        return lt_k_fail(k, LT_ERR_INVALID, "dy and y differ in type or size");
    int64_t outer, c, inner;
    if ((s = softmax_split(k, y, &outer, &c, &inner)) != LT_OK)
        return s;
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, y->dtype, y->rank, y->dims, &dx)) != LT_OK)
        return s;
    LT_CUDA_K(k, lt_cu_softmax_grad(stream_of(k), F64(y), dy->data, y->data, dx->data, outer, c, inner,
                                    k->node->op == LT_OP_LOG_SOFTMAX_GRAD));
    return LT_OK;
}

/* ---- SoftmaxCrossEntropyLoss, NegativeLogLikelihoodLoss and their
 * gradients. Targets and weights are read on the host, checked as the CPU
 * checks them, and turned into one class and one coefficient per position
 * (the weight; for the gradients over the total weight for mean, times
 * dloss); the device does the rest. */
typedef struct {
    int64_t n, c, d, npos;
    bool none, mean;
    double wsum; /* the total weight of the counted targets */
    lt_buf *dev; /* cls (int64) then coef (double), on the device */
} loss_prep;

static lt_status loss_setup(lt_kctx *k, const lt_tensor *x, const lt_tensor *t, const lt_tensor *w,
                            const lt_tensor *dloss, loss_prep *L)
{
    lt_status s;
    if ((s = need_float(k, x, dloss ? 1 : 0)) != LT_OK)
        return s;
    if (x->rank < 2)
        return lt_k_fail(k, LT_ERR_INVALID, "input must be (N, C, ...), got rank %d", x->rank);
    if (!lt_dtype_is_int(t->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "target must be an integer tensor, got %s", lt_dtype_name(t->dtype));
    bool ok = t->rank == x->rank - 1 && t->dims[0] == x->dims[0];
    for (int i = 1; ok && i < t->rank; i++)
        ok = t->dims[i] == x->dims[i + 1];
    if (!ok)
        return lt_k_fail(k, LT_ERR_INVALID, "target shape must be the input's without its class axis (N, d1, ...)");
    L->n = x->dims[0];
    L->c = x->dims[1];
    L->d = 1;
    for (int i = 2; i < x->rank; i++)
        L->d *= x->dims[i];
    L->npos = L->n * L->d;
    if (w && (!lt_dtype_is_float(w->dtype) || w->rank != 1 || w->dims[0] != L->c))
        return lt_k_fail(k, LT_ERR_INVALID, "weight must be a float tensor of shape (%lld)", (long long)L->c);
    const char *r = lt_attr_str(k->node, "reduction", "mean");
    L->none = !strcmp(r, "none");
    L->mean = !strcmp(r, "mean");
    if (!L->none && !L->mean && strcmp(r, "sum"))
        return lt_k_fail(k, LT_ERR_INVALID, "reduction must be none, sum or mean, got '%s'", r);
    if (dloss && (L->none ? dloss->numel != L->npos : dloss->numel != 1))
        return lt_k_fail(k, LT_ERR_INVALID, "dloss has %lld values", (long long)dloss->numel);
    bool has_ii = lt_attr_find(k->node, "ignore_index") != NULL;
    int64_t ii = lt_attr_int(k->node, "ignore_index", 0);
    size_t np = (size_t)(L->npos ? L->npos : 1);
    int64_t *cls = lt_k_scratch(k, np * sizeof *cls);
    double *coef = lt_k_scratch(k, np * sizeof *coef);
    if (!cls || !coef)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    double wsum = 0;
    for (int64_t i = 0; i < L->npos; i++) {
        int64_t cl = lt_tensor_get_i64(t, i);
        double wt = 0;
        if (has_ii && cl == ii) {
            cl = -1;
        } else {
            if (cl < 0 || cl >= L->c)
                return lt_k_fail(k, LT_ERR_INVALID, "target %lld at position %lld is outside [0, %lld)", (long long)cl,
                                 (long long)i, (long long)L->c);
            wt = w ? lt_tensor_get_f64(w, cl) : 1.0;
        }
        cls[i] = cl;
        coef[i] = wt * (dloss ? lt_tensor_get_f64(dloss, L->none ? i : 0) : 1.0);
        wsum += wt;
    }
    /* mean: the gradient's coefficients over the total weight (0 where it
     * is 0, as loss_prep); the forward divides the device's sum by it
     * (lt_cu_nll) as nll_core does, so that nothing counted (every target
     * ignored, or no positions) gives 0/0 = NaN, not a sum of zeros */
    L->wsum = wsum;
    if (L->mean && dloss)
        for (int64_t i = 0; i < L->npos; i++)
            coef[i] = wsum != 0 ? coef[i] / wsum : 0.0;
    if ((s = lt_cuda_scratch(k, np * (sizeof *cls + sizeof *coef), &L->dev)) != LT_OK)
        return s;
    /* the host arrays are scratch of this node only */
    cudaError_t e = lt_cuda_upload_bytes(k->be, L->dev->data, cls, np * sizeof *cls);
    if (e == cudaSuccess)
        e = lt_cuda_upload_bytes(k->be, (char *)L->dev->data + np * sizeof *cls, coef, np * sizeof *coef);
    if (e != cudaSuccess) {
        lt_buf_release(L->dev);
        return lt_cuda_kfail(k, __FILE__, __LINE__, "cudaMemcpyAsync (targets)", "CUDA", cudaGetErrorString(e));
    }
    return LT_OK;
}

static const int64_t *dev_cls(const loss_prep *L) { return L->dev->data; }
static const double *dev_coef(const loss_prep *L)
{
    return (const double *)((const char *)L->dev->data + (size_t)(L->npos ? L->npos : 1) * sizeof(int64_t));
}

static lt_status k_loss(lt_kctx *k)
{
    const lt_tensor *x, *t, *w = lt_k_in(k, 2);
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need(k, 1, &t)) != LT_OK)
        return s;
    loss_prep L;
    if ((s = loss_setup(k, x, t, w, NULL, &L)) != LT_OK)
        return s;
    bool sce = k->node->op == LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS;
    lt_tensor *y, *lpt = NULL;
    lt_buf *tmp = NULL;
    const void *lp = x->data;
    if (sce) {
        if (lt_k_want(k, 1))
            s = lt_k_out(k, 1, x->dtype, x->rank, x->dims, &lpt);
        else
            s = lt_cuda_scratch(k, lt_tensor_nbytes(x), &tmp);
        if (s == LT_OK) {
            void *dst = lpt ? lpt->data : tmp->data;
            cudaError_t e = lt_cu_softmax(stream_of(k), F64(x), x->data, dst, L.n, L.c, L.d, 1);
            if (e != cudaSuccess)
                s = lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cu_softmax", "CUDA", cudaGetErrorString(e));
            lp = dst;
        }
    }
    if (s == LT_OK)
        s = L.none ? lt_k_out(k, 0, x->dtype, t->rank, t->dims, &y) : lt_k_out(k, 0, x->dtype, 0, NULL, &y);
    if (s == LT_OK) {
        cudaError_t e = lt_cu_nll(stream_of(k), F64(x), lp, dev_cls(&L), dev_coef(&L), y->data, L.n, L.c, L.d, L.none,
                                  L.mean ? L.wsum : 1.0);
        if (e != cudaSuccess)
            s = lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cu_nll", "CUDA", cudaGetErrorString(e));
    }
    lt_buf_release(tmp);
    lt_buf_release(L.dev);
    return s;
}

static lt_status k_loss_grad(lt_kctx *k)
{
    const lt_tensor *g, *x, *t, *w = lt_k_in(k, 3);
    lt_status s;
    if ((s = need(k, 0, &g)) != LT_OK || (s = need(k, 1, &x)) != LT_OK || (s = need(k, 2, &t)) != LT_OK)
        return s;
    loss_prep L;
    if ((s = loss_setup(k, x, t, w, g, &L)) != LT_OK)
        return s;
    bool sce = k->node->op == LT_OP_SCE_LOSS_GRAD;
    lt_tensor *dx;
    cudaError_t e = cudaSuccess;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx)) == LT_OK) {
        const char *call = "lt_cu_softmax"; /* the one that failed, for the message */
        if (sce)
            e = lt_cu_softmax(stream_of(k), F64(x), x->data, dx->data, L.n, L.c, L.d, 0);
        if (e == cudaSuccess) {
            call = "lt_cu_sce_grad";
            e = lt_cu_sce_grad(stream_of(k), F64(x), dx->data, dev_cls(&L), dev_coef(&L), L.n, L.c, L.d, sce);
        }
        if (e != cudaSuccess)
            s = lt_cuda_kfail(k, __FILE__, __LINE__, call, "CUDA", cudaGetErrorString(e));
    }
    lt_buf_release(L.dev);
    return s;
}

/* ---- 2-D pooling (NCHW); other ranks, storage_order 1 and MaxPool's
 * Indices output run on the host ---- */
static bool fits_pool(const lt_node *n)
{
    if (!n->in[0] || n->in[0]->type.rank != 4)
        return false;
    if (lt_attr_int(n, "storage_order", 0) != 0)
        return false;
    int kl = 0;
    lt_attr_ints(n, "kernel_shape", &kl);
    if (kl != 2)
        return false;
    return !(n->op == LT_OP_MAX_POOL && n->nout > 1 && n->out[1]);
}

/* The window geometry as the CPU works it out (ir/shape_nn.h: pads from
 * auto_pad or the attribute, ceil_mode). */
static lt_status pool_params(lt_kctx *k, const lt_tensor *x, lt_cu_pool *p)
{
    int kl = 0;
    const int64_t *ks = lt_attr_ints(k->node, "kernel_shape", &kl);
    if (kl != 2 || x->rank != 4)
        return lt_k_fail(k, LT_ERR_INVALID, "the cuda pools are 2-D (kernel_shape of 2, input of rank 4)");
    lt_nn_geom g;
    char why[256];
    if (!lt_nn_window(k->node, 2, x->dims + 2, ks, lt_attr_int(k->node, "ceil_mode", 0) != 0, &g, why, sizeof why))
        return lt_k_fail(k, LT_ERR_INVALID, "%s", why);
    memset(p, 0, sizeof *p);
    p->planes = x->dims[0] * x->dims[1];
    p->h = x->dims[2];
    p->w = x->dims[3];
    p->oh = g.grid[0];
    p->ow = g.grid[1];
    p->kh = (int)g.k[0];
    p->kw = (int)g.k[1];
    p->sh = (int)g.s[0];
    p->sw = (int)g.s[1];
    p->dh = (int)g.d[0];
    p->dw = (int)g.d[1];
    p->ph = (int)g.pb[0];
    p->pw = (int)g.pb[1];
    p->peh = (int)g.pe[0];
    p->pew = (int)g.pe[1];
    p->count_pad = lt_attr_int(k->node, "count_include_pad", 0) != 0;
    return LT_OK;
}

static lt_status k_pool(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need_float(k, x, 0)) != LT_OK)
        return s;
    lt_cu_pool p;
    if ((s = pool_params(k, x, &p)) != LT_OK)
        return s;
    int64_t od[4] = {x->dims[0], x->dims[1], p.oh, p.ow};
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, 4, od, &y)) != LT_OK)
        return s;
    if (k->node->op == LT_OP_MAX_POOL)
        LT_CUDA_K(k, lt_cu_maxpool(stream_of(k), F64(x), x->data, y->data, &p));
    else
        LT_CUDA_K(k, lt_cu_avgpool(stream_of(k), F64(x), x->data, y->data, &p));
    return LT_OK;
}

/* MaxPoolGrad / AveragePoolGrad (dy, x) -> dx. */
static lt_status k_pool_grad(lt_kctx *k)
{
    const lt_tensor *dy, *x;
    lt_status s;
    if ((s = need(k, 0, &dy)) != LT_OK || (s = need(k, 1, &x)) != LT_OK || (s = need_float(k, x, 1)) != LT_OK)
        return s;
    lt_cu_pool p;
    if ((s = pool_params(k, x, &p)) != LT_OK)
        return s;
    if (dy->rank != 4 || dy->dims[0] != x->dims[0] || dy->dims[1] != x->dims[1] || dy->dims[2] != p.oh ||
        dy->dims[3] != p.ow || dy->dtype != x->dtype)
        return lt_k_fail(k, LT_ERR_INVALID, "dy does not have the pool's output shape");
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx)) != LT_OK)
        return s;
    cudaStream_t st = stream_of(k);
    LT_CUDA_K(k, cudaMemsetAsync(dx->data, 0, lt_tensor_nbytes(dx), st));
    if (k->node->op == LT_OP_MAX_POOL_GRAD)
        LT_CUDA_K(k, lt_cu_maxpool_grad(st, F64(x), dy->data, x->data, dx->data, &p));
    else
        LT_CUDA_K(k, lt_cu_avgpool_grad(st, F64(x), dy->data, dx->data, &p));
    return LT_OK;
}

/* ---- data movement ---- */
static lt_status k_transpose(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK)
        return s;
    int np = 0;
    const int64_t *perm = lt_attr_ints(k->node, "perm", &np);
    int r = x->rank;
    if (r > LT_CU_MAX_RANK || (perm && np != r))
        return lt_k_fail(k, LT_ERR_INVALID, "perm has %d entries for rank %d", np, r);
    int64_t stride[LT_MAX_RANK], st = 1, od[LT_MAX_RANK];
    bool seen[LT_MAX_RANK] = {false};
    for (int d = r - 1; d >= 0; d--) {
        stride[d] = st;
        st *= x->dims[d];
    }
    lt_cu_shape sh;
    memset(&sh, 0, sizeof sh);
    sh.rank = r;
    sh.n = x->numel;
    for (int d = 0; d < r; d++) {
        int64_t p = perm ? perm[d] : r - 1 - d;
        if (p < 0)
            p += r;
        if (p < 0 || p >= r || seen[p])
            return lt_k_fail(k, LT_ERR_INVALID, "perm is not a permutation of 0..%d", r - 1);
        seen[p] = true;
        od[d] = x->dims[p];
        sh.dims[d] = x->dims[p];
        sh.st[0][d] = stride[p];
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, r, od, &y)) != LT_OK)
        return s;
    LT_CUDA_K(k, lt_cu_gather_strided(stream_of(k), lt_dtype_size(x->dtype), x->data, y->data, &sh, 0));
    return LT_OK;
}

/* rows rows of width bytes from src (rows spitch bytes apart) to dst
 * (dpitch apart), on the backend's stream. cudaMemcpy2D refuses a pitch
 * past the device's maximum (cudaDevAttrMaxPitch, 2^31 - 1 bytes on
 * current GPUs), which a large Concat or Split reaches; rows that far apart
 * are few (the tensor holds rows times the pitch), so they go one plain
 * copy each, as does a single row. */
static cudaError_t copy_rows(lt_kctx *k, void *dst, size_t dpitch, const void *src, size_t spitch, size_t width,
                             size_t rows)
{
    cudaStream_t st = stream_of(k);
    if (rows > 1) {
        int maxp = 0;
        if (cudaDeviceGetAttribute(&maxp, cudaDevAttrMaxPitch, lt_cuda_of(k->be)->device) != cudaSuccess)
            (void)cudaGetLastError(); /* not left for the next launch's check: the rows are copied one by one */
        else if (maxp > 0 && dpitch <= (size_t)maxp && spitch <= (size_t)maxp)
            return cudaMemcpy2DAsync(dst, dpitch, src, spitch, width, rows, cudaMemcpyDeviceToDevice, st);
    }
    for (size_t r = 0; r < rows; r++) {
        cudaError_t e = cudaMemcpyAsync((char *)dst + r * dpitch, (const char *)src + r * spitch, width,
                                        cudaMemcpyDeviceToDevice, st);
        if (e != cudaSuccess)
            return e;
    }
    return cudaSuccess;
}

static lt_status k_concat(lt_kctx *k)
{
    const lt_tensor *x0 = NULL;
    for (int i = 0; i < k->nin && !x0; i++)
        x0 = lt_k_in(k, i);
    if (!x0)
        return lt_k_fail(k, LT_ERR_INVALID, "Concat has no inputs");
    int64_t axis = lt_attr_int(k->node, "axis", 0);
    int r = x0->rank;
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis >= r)
        return lt_k_fail(k, LT_ERR_INVALID, "axis is out of range for rank %d", r);
    int64_t od[LT_MAX_RANK];
    memcpy(od, x0->dims, sizeof(int64_t) * (size_t)r);
    od[axis] = 0;
    for (int i = 0; i < k->nin; i++) {
        const lt_tensor *t = lt_k_in(k, i);
        if (!t)
            continue;
        bool ok = t->rank == r && t->dtype == x0->dtype;
        for (int d = 0; ok && d < r; d++)
            ok = d == axis || t->dims[d] == x0->dims[d];
        if (!ok)
            return lt_k_fail(k, LT_ERR_INVALID, "input %d does not fit the others but along axis %lld", i,
                             (long long)axis);
        od[axis] += t->dims[axis];
    }
    lt_tensor *y;
    lt_status s;
    if ((s = lt_k_out(k, 0, x0->dtype, r, od, &y)) != LT_OK || y->numel == 0)
        return s;
    size_t es = lt_dtype_size(x0->dtype);
    int64_t outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= od[d];
    for (int d = (int)axis + 1; d < r; d++)
        inner *= od[d];
    size_t at = 0, pitch = (size_t)od[axis] * (size_t)inner * es;
    for (int i = 0; i < k->nin; i++) {
        const lt_tensor *t = lt_k_in(k, i);
        if (!t || t->numel == 0)
            continue;
        size_t width = (size_t)t->dims[axis] * (size_t)inner * es;
        LT_CUDA_K(k, copy_rows(k, (char *)y->data + at, pitch, t->data, width, width, (size_t)outer));
        at += width;
    }
    return LT_OK;
}

/* Split (input[, split]) {axis, split, num_outputs}: the sizes as the CPU
 * reads them (the split input on the host), each wanted output one copy
 * of its columns (copy_rows). */
static lt_status k_split(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK)
        return s;
    int axis;
    int64_t *sizes;
    if ((s = lt_tk_split_args(k, x, &axis, &sizes)) != LT_OK)
        return s;
    size_t es = lt_dtype_size(x->dtype);
    int64_t outer = 1, inner = 1, dims[LT_MAX_RANK], off = 0;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = axis + 1; d < x->rank; d++)
        inner *= x->dims[d];
    memcpy(dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
    size_t pitch = (size_t)x->dims[axis] * (size_t)inner * es;
    for (int i = 0; i < k->nout; i++) {
        dims[axis] = sizes[i];
        if (lt_k_want(k, i)) {
            lt_tensor *y;
            if ((s = lt_k_out(k, i, x->dtype, x->rank, dims, &y)) != LT_OK)
                return s;
            size_t width = (size_t)sizes[i] * (size_t)inner * es;
            if (width && outer)
                LT_CUDA_K(k, copy_rows(k, y->data, width, (const char *)x->data + (size_t)off * inner * es, pitch,
                                       width, (size_t)outer));
        }
        off += sizes[i];
    }
    return LT_OK;
}

/* The strided walk of a slice of x (first position, step and length per
 * axis, lt_tk_slice's) as lt_cu_shape strides over x and a base offset. */
static void slice_walk(const lt_tensor *x, const int64_t *first, const int64_t *step, const int64_t *cnt,
                       lt_cu_shape *sh, int64_t *off)
{
    int r = x->rank;
    memset(sh, 0, sizeof *sh);
    sh->rank = r;
    sh->n = 1;
    int64_t stride = 1;
    *off = 0;
    for (int d = r - 1; d >= 0; d--) {
        sh->dims[d] = cnt[d];
        sh->st[0][d] = step[d] * stride;
        *off += first[d] * stride;
        stride *= x->dims[d];
    }
    for (int d = 0; d < r; d++)
        sh->n *= cnt[d];
}

/* Slice (data, starts, ends[, axes[, steps]]), or the attributes before
 * opset 10: the parameters read as the CPU reads them (lt_tk_slice), then
 * one strided copy. */
static lt_status k_slice(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK)
        return s;
    if (x->rank > LT_CU_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "rank %d is beyond the cuda kernels' %d", x->rank, LT_CU_MAX_RANK);
    int64_t first[LT_MAX_RANK], step[LT_MAX_RANK], cnt[LT_MAX_RANK], off;
    if ((s = lt_tk_slice(k, x, 1, first, step, cnt)) != LT_OK)
        return s;
    lt_cu_shape sh;
    slice_walk(x, first, step, cnt, &sh, &off);
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, x->rank, cnt, &y)) != LT_OK || y->numel == 0)
        return s;
    LT_CUDA_K(k, lt_cu_gather_strided(stream_of(k), lt_dtype_size(x->dtype), x->data, y->data, &sh, off));
    return LT_OK;
}

/* SliceGrad (dy, x, starts, ends, axes, steps) -> dx: zeros of x's shape
 * (x is read for its shape only) with dy written where the slice read. */
static lt_status k_slice_grad(lt_kctx *k)
{
    const lt_tensor *dy, *x;
    lt_status s;
    if ((s = need(k, 0, &dy)) != LT_OK || (s = need(k, 1, &x)) != LT_OK)
        return s;
    if (x->rank > LT_CU_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "rank %d is beyond the cuda kernels' %d", x->rank, LT_CU_MAX_RANK);
    int64_t first[LT_MAX_RANK], step[LT_MAX_RANK], cnt[LT_MAX_RANK], off;
    if ((s = lt_tk_slice(k, x, 2, first, step, cnt)) != LT_OK)
        return s;
    bool ok = dy->rank == x->rank;
    for (int d = 0; ok && d < x->rank; d++)
        ok = dy->dims[d] == cnt[d];
    if (!ok)
        return lt_k_fail(k, LT_ERR_INVALID, "dy does not have the slice's shape");
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, dy->dtype, x->rank, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return s;
    LT_CUDA_K(k, cudaMemsetAsync(dx->data, 0, lt_tensor_nbytes(dx), stream_of(k)));
    lt_cu_shape sh;
    slice_walk(x, first, step, cnt, &sh, &off);
    LT_CUDA_K(k, lt_cu_scatter_strided(stream_of(k), lt_dtype_size(dy->dtype), dy->data, dx->data, &sh, off));
    return LT_OK;
}

/* The positions of one index along the middle axis of an (outer, ax,
 * inner) tensor, as a strided walk over (outer, inner): base offset
 * index * inner. */
static void single_index_walk(int64_t outer, int64_t ax, int64_t inner, lt_cu_shape *sh)
{
    sh->rank = 2;
    sh->n = outer * inner;
    sh->dims[0] = outer;
    sh->dims[1] = inner;
    sh->st[0][0] = ax * inner;
    sh->st[0][1] = 1;
}

/* Gather (data, indices): indices read on the host and checked; one index
 * is a strided copy, more are uploaded. */
static lt_status k_gather(lt_kctx *k)
{
    const lt_tensor *x, *ix;
    lt_status s;
    if ((s = need(k, 0, &x)) != LT_OK || (s = need(k, 1, &ix)) != LT_OK)
        return s;
    if (!lt_dtype_is_int(ix->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "indices must be integers, got %s", lt_dtype_name(ix->dtype));
    int64_t axis = lt_attr_int(k->node, "axis", 0);
    int r = x->rank;
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis >= r || r - 1 + ix->rank > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_INVALID, "axis or rank out of range");
    int64_t ax = x->dims[axis], m = ix->numel, outer = 1, inner = 1;
    int64_t *idx = lt_k_scratch(k, sizeof(int64_t) * (size_t)(m ? m : 1));
    if (!idx)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    for (int64_t i = 0; i < m; i++) {
        int64_t v = lt_tensor_get_i64(ix, i);
        if (v < -ax || v >= ax)
            return lt_k_fail(k, LT_ERR_INVALID,
                             "index %lld (at position %lld of indices) is out of range for axis %d of size %lld",
                             (long long)v, (long long)i, (int)axis, (long long)ax);
        idx[i] = v < 0 ? v + ax : v;
    }
    int64_t od[LT_MAX_RANK];
    int orank = 0;
    for (int d = 0; d < axis; d++) {
        od[orank++] = x->dims[d];
        outer *= x->dims[d];
    }
    for (int d = 0; d < ix->rank; d++)
        od[orank++] = ix->dims[d];
    for (int d = (int)axis + 1; d < r; d++) {
        od[orank++] = x->dims[d];
        inner *= x->dims[d];
    }
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, x->dtype, orank, od, &y)) != LT_OK || y->numel == 0)
        return s;
    cudaStream_t st = stream_of(k);
    if (m == 1) {
        /* one index (a loop's step reading its time slice): one strided
         * copy, nothing uploaded */
        lt_cu_shape sh;
        memset(&sh, 0, sizeof sh);
        single_index_walk(outer, ax, inner, &sh);
        LT_CUDA_K(k, lt_cu_gather_strided(st, lt_dtype_size(x->dtype), x->data, y->data, &sh, idx[0] * inner));
        return LT_OK;
    }
    lt_buf *dix;
    if ((s = lt_cuda_scratch(k, sizeof(int64_t) * (size_t)m, &dix)) != LT_OK)
        return s;
    const char *call = "lt_cuda_upload_bytes"; /* the one that failed, for the message */
    cudaError_t e = lt_cuda_upload_bytes(k->be, dix->data, idx, sizeof(int64_t) * (size_t)m);
    if (e == cudaSuccess) {
        call = "lt_cu_gather";
        e = lt_cu_gather(st, lt_dtype_size(x->dtype), x->data, dix->data, y->data, outer, ax, inner, m);
    }
    lt_buf_release(dix);
    if (e != cudaSuccess)
        return lt_cuda_kfail(k, __FILE__, __LINE__, call, "CUDA", cudaGetErrorString(e));
    return LT_OK;
}

/* GatherGrad (dy, indices, data) -> ddata: zeros shaped like data, dy's
 * rows added at the indices (read on the host, checked, uploaded), the row
 * the attribute padding_idx names (if any) cleared after; data is read on
 * the host for its shape only. */
static lt_status k_gather_grad(lt_kctx *k)
{
    const lt_tensor *dy, *ix, *x;
    lt_status s;
    if ((s = need(k, 0, &dy)) != LT_OK || (s = need(k, 1, &ix)) != LT_OK || (s = need(k, 2, &x)) != LT_OK ||
        (s = need_float(k, dy, 0)) != LT_OK)
        return s;
    if (!lt_dtype_is_int(ix->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "indices must be integers, got %s", lt_dtype_name(ix->dtype));
    int64_t axis = lt_attr_int(k->node, "axis", 0);
    int r = x->rank;
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis >= r)
        return lt_k_fail(k, LT_ERR_INVALID, "axis is out of range for rank %d", r);
    int64_t ax = x->dims[axis], m = ix->numel, outer = 1, inner = 1;
    for (int d = 0; d < axis; d++)
        outer *= x->dims[d];
    for (int d = (int)axis + 1; d < r; d++)
        inner *= x->dims[d];
    if (dy->numel != outer * m * inner)
        return lt_k_fail(k, LT_ERR_INVALID, "dy has %lld values, the gather gave %lld", (long long)dy->numel,
                         (long long)(outer * m * inner));
    const lt_attr *pad = lt_attr_find(k->node, "padding_idx");
    if (pad && (pad->i < 0 || pad->i >= ax))
        return lt_k_fail(k, LT_ERR_INVALID, "padding_idx %lld is out of range for axis %lld of size %lld",
                         (long long)pad->i, (long long)axis, (long long)ax);
    int64_t *idx = lt_k_scratch(k, sizeof(int64_t) * (size_t)(m ? m : 1));
    if (!idx)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    for (int64_t i = 0; i < m; i++) {
        int64_t v = lt_tensor_get_i64(ix, i);
        if (v < -ax || v >= ax) /* bad input, as on the CPU (grad_misc_gather.c) */
            return lt_k_fail(k, LT_ERR_INVALID,
                             "index %lld (at position %lld of indices) is out of range for axis %d of size %lld",
                             (long long)v, (long long)i, (int)axis, (long long)ax);
        idx[i] = v < 0 ? v + ax : v;
    }
    lt_tensor *dx;
    if ((s = lt_k_out(k, 0, dy->dtype, x->rank, x->dims, &dx)) != LT_OK || dx->numel == 0)
        return s;
    cudaStream_t st = stream_of(k);
    LT_CUDA_K(k, cudaMemsetAsync(dx->data, 0, lt_tensor_nbytes(dx), st));
    if (dy->numel == 0)
        return LT_OK;
    if (m == 1 && !(pad && idx[0] == pad->i)) {
        /* one index: dy written into its slice (nothing to add up) */
        lt_cu_shape sh;
        memset(&sh, 0, sizeof sh);
        single_index_walk(outer, ax, inner, &sh);
        LT_CUDA_K(k, lt_cu_scatter_strided(st, lt_dtype_size(dy->dtype), dy->data, dx->data, &sh, idx[0] * inner));
        return LT_OK;
    }
    lt_buf *dix;
    if ((s = lt_cuda_scratch(k, sizeof(int64_t) * (size_t)m, &dix)) != LT_OK)
        return s;
    const char *call = "lt_cuda_upload_bytes"; /* the one that failed, for the message */
    cudaError_t e = lt_cuda_upload_bytes(k->be, dix->data, idx, sizeof(int64_t) * (size_t)m);
    if (e == cudaSuccess) {
        call = "lt_cu_scatter_add";
        e = lt_cu_scatter_add(st, dy->dtype == LT_F64, dy->data, dix->data, dx->data, outer, ax, inner, m);
    }
    lt_buf_release(dix);
    if (e != cudaSuccess)
        return lt_cuda_kfail(k, __FILE__, __LINE__, call, "CUDA", cudaGetErrorString(e));
    /* an embedding's padding row (ad/padding_rows.c) takes nothing back */
    if (pad) {
        size_t es = lt_dtype_size(dy->dtype), row = es * (size_t)inner;
        for (int64_t o = 0; o < outer; o++)
            LT_CUDA_K(k, cudaMemsetAsync((char *)dx->data + (size_t)(o * ax + pad->i) * row, 0, row, st));
    }
    return LT_OK;
}

/* Inputs of float type or, for Gather and Transpose, any fixed-size type. */
static bool fits_any_data(const lt_node *n)
{
    return n->in[0] && n->in[0]->type.dtype != LT_STRING && lt_dtype_size(n->in[0]->type.dtype) > 0;
}

/* The value types a device tensor may have (the backend's outputs: float,
 * or bool as the masks ConstantOfShape often makes). */
static bool constant_type(lt_dtype dt) { return dt == LT_F32 || dt == LT_F64 || dt == LT_BOOL; }

/* ConstantOfShape of another value type runs on the host: the kernel
 * cannot refuse it at run time, when there is no host to fall back to. */
static bool fits_constant_of_shape(const lt_node *n)
{
    const lt_tensor *v = lt_attr_tensor(n, "value");
    return !v || constant_type(v->dtype);
}

/* ConstantOfShape(shape) {value}: the shape read on the host, the output
 * filled on the device with value's one element, its bytes as they are as
 * the CPU's lt_tk_fill (float32 0 by default). */
static lt_status k_constant_of_shape(lt_kctx *k)
{
    int64_t dims[LT_MAX_RANK];
    int n;
    lt_dtype dt;
    const void *elem;
    lt_status s = lt_tk_constant_of_shape_args(k, dims, &n, &dt, &elem);
    if (s != LT_OK)
        return s;
    if (!constant_type(dt)) /* fits_constant_of_shape kept it from the device */
        return lt_k_fail(k, LT_ERR_INTERNAL, "the cuda kernel fills float32, float64 or bool, not %s",
                         lt_dtype_name(dt));
    lt_tensor *y;
    if ((s = lt_k_out(k, 0, dt, n, dims, &y)) != LT_OK || y->numel == 0)
        return s;
    LT_CUDA_K(k, lt_cu_fill_elem(stream_of(k), lt_dtype_size(dt), y->data, y->numel, elem));
    return LT_OK;
}

void lt_cuda_register_kernels(lt_cu_op *tab)
{
    lt_cpu_kernels_init(); /* the views below are the CPU's */
    static const lt_op binary[] = {LT_OP_ADD, LT_OP_SUB, LT_OP_MUL, LT_OP_DIV, LT_OP_RELU_GRAD};
    for (size_t i = 0; i < sizeof binary / sizeof *binary; i++)
        tab[binary[i]] = (lt_cu_op){k_binary, 0, 0, NULL};
    tab[LT_OP_POW] = (lt_cu_op){k_binary, 0, 0, fits_pow};
    tab[LT_OP_MAX] = (lt_cu_op){k_binary, 0, 0, fits_two_inputs};
    tab[LT_OP_MIN] = (lt_cu_op){k_binary, 0, 0, fits_two_inputs};
    static const lt_op compare[] = {LT_OP_GREATER, LT_OP_LESS, LT_OP_EQUAL, LT_OP_GREATER_OR_EQUAL,
                                    LT_OP_LESS_OR_EQUAL};
    for (size_t i = 0; i < sizeof compare / sizeof *compare; i++)
        tab[compare[i]] = (lt_cu_op){k_binary, 0, 0, NULL};
    tab[LT_OP_WHERE] = (lt_cu_op){k_where, 0, 1u, fits_where};
    static const lt_op unary[] = {LT_OP_RELU, LT_OP_SIGMOID,    LT_OP_TANH, LT_OP_EXP,   LT_OP_LOG,
                                  LT_OP_NEG,  LT_OP_SQRT,       LT_OP_ERF,  LT_OP_ABS,   LT_OP_RECIPROCAL,
                                  LT_OP_SIN,  LT_OP_COS,        LT_OP_FLOOR, LT_OP_CEIL, LT_OP_SOFTPLUS,
                                  LT_OP_ELU,  LT_OP_LEAKY_RELU, LT_OP_GELU};
    for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
        tab[unary[i]] = (lt_cu_op){k_unary, 0, 0, NULL};
    /* views: the CPU's kernels make them without touching the data */
    tab[LT_OP_IDENTITY] = (lt_cu_op){lt_cpu_kernels[LT_OP_IDENTITY], 0, 1u, fits_any_data};
    tab[LT_OP_FLATTEN] = (lt_cu_op){lt_cpu_kernels[LT_OP_FLATTEN], 0, 1u, fits_any_data};
    tab[LT_OP_RESHAPE] = (lt_cu_op){lt_cpu_kernels[LT_OP_RESHAPE], 1u << 1, 1u, fits_any_data};
    tab[LT_OP_SQUEEZE] = (lt_cu_op){lt_cpu_kernels[LT_OP_SQUEEZE], 1u << 1, 1u, fits_any_data};
    tab[LT_OP_UNSQUEEZE] = (lt_cu_op){lt_cpu_kernels[LT_OP_UNSQUEEZE], 1u << 1, 1u, fits_any_data};
    tab[LT_OP_REDUCE_SUM] = (lt_cu_op){k_reduce, 1u << 1, 0, NULL};
    tab[LT_OP_REDUCE_MEAN] = (lt_cu_op){k_reduce, 1u << 1, 0, NULL};
    tab[LT_OP_REDUCE_SUM_LIKE] = (lt_cu_op){k_reduce_sum_like, 0, 1u << 1, NULL};
    tab[LT_OP_GLOBAL_AVERAGE_POOL] = (lt_cu_op){k_global_avg_pool, 0, 0, NULL};
    tab[LT_OP_EXPAND] = (lt_cu_op){k_expand, 1u << 1, 0, NULL};
    tab[LT_OP_SOFTMAX] = (lt_cu_op){k_softmax, 0, 0, NULL};
    tab[LT_OP_LOG_SOFTMAX] = (lt_cu_op){k_softmax, 0, 0, NULL};
    tab[LT_OP_SOFTMAX_GRAD] = (lt_cu_op){k_softmax_grad, 0, 0, NULL};
    tab[LT_OP_LOG_SOFTMAX_GRAD] = (lt_cu_op){k_softmax_grad, 0, 0, NULL};
    tab[LT_OP_SOFTMAX_CROSS_ENTROPY_LOSS] = (lt_cu_op){k_loss, (1u << 1) | (1u << 2), 0, NULL};
    tab[LT_OP_NEGATIVE_LOG_LIKELIHOOD_LOSS] = (lt_cu_op){k_loss, (1u << 1) | (1u << 2), 0, NULL};
    tab[LT_OP_SCE_LOSS_GRAD] = (lt_cu_op){k_loss_grad, 1u | (1u << 2) | (1u << 3), 0, NULL};
    tab[LT_OP_NLL_LOSS_GRAD] = (lt_cu_op){k_loss_grad, 1u | (1u << 2) | (1u << 3), 0, NULL};
    tab[LT_OP_MAX_POOL] = (lt_cu_op){k_pool, 0, 0, fits_pool};
    tab[LT_OP_AVERAGE_POOL] = (lt_cu_op){k_pool, 0, 0, fits_pool};
    tab[LT_OP_MAX_POOL_GRAD] = (lt_cu_op){k_pool_grad, 0, 0, fits_pool};
    tab[LT_OP_AVERAGE_POOL_GRAD] = (lt_cu_op){k_pool_grad, 0, 0, fits_pool};
    tab[LT_OP_TRANSPOSE] = (lt_cu_op){k_transpose, 0, 1u, fits_any_data};
    tab[LT_OP_CONCAT] = (lt_cu_op){k_concat, 0, ~(uint64_t)0, fits_any_data};
    tab[LT_OP_SPLIT] = (lt_cu_op){k_split, 1u << 1, 1u, fits_any_data};
    tab[LT_OP_GATHER] = (lt_cu_op){k_gather, 1u << 1, 1u, fits_any_data};
    tab[LT_OP_SLICE] = (lt_cu_op){k_slice, 0x1Eu, 1u, fits_any_data};
    tab[LT_OP_SLICE_GRAD] = (lt_cu_op){k_slice_grad, 0x3Cu, 0x3u, fits_any_data};
    tab[LT_OP_GATHER_GRAD] = (lt_cu_op){k_gather_grad, (1u << 1) | (1u << 2), 0, NULL};
    tab[LT_OP_CONSTANT_OF_SHAPE] = (lt_cu_op){k_constant_of_shape, 1u, 0, fits_constant_of_shape};
}
