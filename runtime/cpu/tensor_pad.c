/* CPU kernels: tensor-family ops that rearrange borders and blocks: Pad,
 * CenterCropPad (both through one index-map engine), ReverseSequence,
 * DepthToSpace and SpaceToDepth. PadGrad reads Pad's parameters and index
 * map through the functions here. */
#include "tensor_util.h"
#include <omp.h>
#include <string.h>

/* A run on the innermost output axis: n elements from source position s
 * onwards, or n copies of the pad value when s < 0. */
typedef struct {
    int64_t o, s, n;
} seg;

typedef struct {
    int r;
    const int64_t *odims, *xs; /* output dims, input element strides */
    int64_t **map;             /* map[a][o]: input index along axis a, -1 = pad value */
    const seg *segs;
    int64_t nseg;
    const unsigned char *x, *cval;
    unsigned char *y;
    size_t es;
} pad_job;

static void pad_rows(const pad_job *j, int64_t lo, int64_t hi)
{
    int r = j->r;
    int64_t idx[LT_MAX_RANK] = {0}, rem = lo, n = j->odims[r - 1];
    for (int a = r - 2; a >= 0; a--) {
        idx[a] = rem % j->odims[a];
        rem /= j->odims[a];
    }
    for (int64_t row = lo; row < hi; row++) {
        unsigned char *y = j->y + (size_t)(row * n) * j->es;
        int64_t soff = 0;
        bool inside = true;
        for (int a = 0; a < r - 1 && inside; a++) {
            int64_t m = j->map[a][idx[a]];
            inside = m >= 0;
            soff += m * j->xs[a];
        }
        if (!inside) {
            lt_tk_fill(y, n, j->cval, j->es);
        } else {
            for (int64_t s = 0; s < j->nseg; s++) {
                const seg *g = &j->segs[s];
                if (g->s < 0)
                    lt_tk_fill(y + (size_t)g->o * j->es, g->n, j->cval, j->es);
                else
                    memcpy(y + (size_t)g->o * j->es, j->x + (size_t)(soff + g->s) * j->es, (size_t)g->n * j->es);
            }
        }
        for (int a = r - 2; a >= 0; a--) {
            if (++idx[a] < j->odims[a])
                break;
            idx[a] = 0;
        }
    }
}

int64_t lt_tk_pad_index(int64_t i, int64_t d, lt_pad_mode mode)
{
    if (i >= 0 && i < d)
        return i;
    switch (mode) {
    case LT_PAD_EDGE:
        return i < 0 ? 0 : d - 1;
    case LT_PAD_WRAP:
        i %= d;
        return i < 0 ? i + d : i;
    case LT_PAD_REFLECT: {
        if (d == 1)
            return 0;
        /* reflection without repeating the edge is periodic in 2(d-1) */
        int64_t p = 2 * (d - 1);
        i %= p;
        if (i < 0)
            i += p;
        return i < d ? i : p - i;
    }
    default:
        return -1;
    }
}

lt_status lt_tk_pad_dims(lt_kctx *k, const lt_tensor *x, const int64_t *pads, int64_t *dims)
{
    int r = x->rank;
    for (int a = 0; a < r; a++) {
        if (__builtin_add_overflow(x->dims[a], pads[a], &dims[a]) ||
            __builtin_add_overflow(dims[a], pads[r + a], &dims[a]) || dims[a] < 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "pads [%lld, %lld] on axis %d of size %lld leave no valid size",
                             (long long)pads[a], (long long)pads[r + a], a, (long long)x->dims[a]);
    }
    return LT_OK;
}

lt_status lt_tk_pad(lt_kctx *k, const lt_tensor *x, const int64_t *pads, lt_pad_mode mode, const void *cval)
{
    int r = x->rank;
    int64_t dims[LT_MAX_RANK];
    lt_status st = lt_tk_pad_dims(k, x, pads, dims);
    if (st != LT_OK)
        return st;
    lt_tensor *y;
    st = lt_k_out(k, 0, x->dtype, r, dims, &y);
    if (st != LT_OK || y->numel == 0)
        return st;
    size_t es = lt_dtype_size(x->dtype);
    if (r == 0) {
        memcpy(y->data, x->data, es);
        return LT_OK;
    }
    int64_t total = 0;
    for (int a = 0; a < r; a++) {
        if (mode != LT_PAD_CONSTANT && x->dims[a] == 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %d is empty: nothing to reflect, wrap or extend", a);
        total += dims[a];
    }
    int64_t *maps = lt_k_scratch(k, sizeof *maps * (size_t)total);
    seg *segs = lt_k_scratch(k, sizeof *segs * (size_t)dims[r - 1]);
    int64_t *map[LT_MAX_RANK], xs[LT_MAX_RANK];
    if (!maps || !segs)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int a = 0, at = 0; a < r; at += dims[a], a++) {
        map[a] = maps + at;
        for (int64_t o = 0; o < dims[a]; o++)
            map[a][o] = lt_tk_pad_index(o - pads[a], x->dims[a], mode);
    }
    /* runs of consecutive sources (or of pad values) on the innermost axis */
    int64_t nseg = 0, n = dims[r - 1], *m = map[r - 1];
    for (int64_t o = 0; o < n; o++) {
        seg *last = nseg ? &segs[nseg - 1] : NULL;
        if (last && ((m[o] < 0 && last->s < 0) || (m[o] >= 0 && last->s >= 0 && m[o] == last->s + last->n)))
            last->n++;
        else
            segs[nseg++] = (seg){o, m[o], 1};
    }
    lt_tk_strides(r, x->dims, xs);
    pad_job j = {r, dims, xs, map, segs, nseg, x->data, cval, y->data, es};
    int64_t rows = y->numel / n;
    if (y->numel < LT_TK_PAR_MIN || rows < 2) {
        pad_rows(&j, 0, rows);
        return LT_OK;
    }
#pragma omp parallel
    {
        int nt = omp_get_num_threads(), id = omp_get_thread_num();
        int64_t lo = rows * id / nt, hi = rows * (id + 1) / nt;
        if (lo < hi)
            pad_rows(&j, lo, hi);
    }
    return LT_OK;
}

/* The element the pad value would have as x's dtype, from a double. */
static void elem_from(lt_dtype dt, double v, unsigned char *out)
{
    memset(out, 0, 16);
    if (dt == LT_STRING) {
        const char *empty = lt_str_intern("", 0);
        memcpy(out, &empty, sizeof empty);
        return;
    }
    lt_tensor t = {.dtype = dt, .data = out};
    lt_tensor_set_f64(&t, 0, v);
}

lt_status lt_tk_pad_params(lt_kctx *k, int in0, int r, int64_t *pads, lt_pad_mode *mode)
{
    const char *ms = lt_attr_str(k->node, "mode", "constant");
    if (!strcmp(ms, "constant"))
        *mode = LT_PAD_CONSTANT;
    else if (!strcmp(ms, "reflect"))
        *mode = LT_PAD_REFLECT;
    else if (!strcmp(ms, "edge"))
        *mode = LT_PAD_EDGE;
    else if (!strcmp(ms, "wrap"))
        *mode = LT_PAD_WRAP;
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
    const lt_tensor *p, *ax = lt_k_in(k, in0 + 2);
    int64_t raw[2 * LT_MAX_RANK], axes[LT_MAX_RANK];
    lt_status st = lt_tk_need(k, in0, &p);
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

static lt_status k_pad(lt_kctx *k)
{
    const lt_tensor *x;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st != LT_OK)
        return st;
    int64_t pads[2 * LT_MAX_RANK];
    lt_pad_mode mode;
    if ((st = lt_tk_pad_params(k, 1, x->rank, pads, &mode)) != LT_OK)
        return st;
    unsigned char cval[16];
    if (k->node->opset < 11) {
        elem_from(x->dtype, lt_attr_float(k->node, "value", 0.0f), cval);
        return lt_tk_pad(k, x, pads, mode, cval);
    }
    const lt_tensor *cv = lt_k_in(k, 2);
    elem_from(x->dtype, 0, cval);
    if (cv && cv->numel > 0) {
        if (cv->dtype != x->dtype)
            return lt_k_fail(k, LT_ERR_RUNTIME, "constant_value is %s, the input %s", lt_dtype_name(cv->dtype),
                             lt_dtype_name(x->dtype));
        memcpy(cval, cv->data, lt_dtype_size(x->dtype));
    }
    return lt_tk_pad(k, x, pads, mode, cval);
}

static lt_status k_center_crop_pad(lt_kctx *k)
{
    const lt_tensor *x, *s;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st == LT_OK)
        st = lt_tk_need(k, 1, &s);
    if (st != LT_OK)
        return st;
    int r = x->rank, ns, na;
    int64_t shape[LT_MAX_RANK], axes[LT_MAX_RANK], pads[2 * LT_MAX_RANK] = {0};
    st = lt_tk_ints(k, s, shape, LT_MAX_RANK, &ns, "shape");
    if (st != LT_OK)
        return st;
    const int64_t *a = lt_attr_ints(k->node, "axes", &na);
    if (a) {
        if (na > LT_MAX_RANK)
            return lt_k_fail(k, LT_ERR_RUNTIME, "%d axes for an input of rank %d", na, r);
        memcpy(axes, a, sizeof *a * na);
    } else {
        na = r;
        for (int i = 0; i < r; i++)
            axes[i] = i;
    }
    if (ns != na)
        return lt_k_fail(k, LT_ERR_RUNTIME, "shape has %d entries for %d axes", ns, na);
    bool seen[LT_MAX_RANK] = {0};
    for (int i = 0; i < na; i++) {
        int ax;
        if (!lt_tk_axis(axes[i], r, &ax))
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %lld is out of range for rank %d", (long long)axes[i], r);
        if (seen[ax])
            return lt_k_fail(k, LT_ERR_RUNTIME, "axis %d is given twice", ax);
        if (shape[i] < 0)
            return lt_k_fail(k, LT_ERR_RUNTIME, "shape[%d] is negative", i);
        seen[ax] = true;
        /* the extra (or missing) element of an odd difference goes at the end */
        int64_t diff = shape[i] - x->dims[ax];
        int64_t before = diff >= 0 ? diff / 2 : -((-diff) / 2);
        pads[ax] = before;
        pads[r + ax] = diff - before;
    }
    unsigned char zero[16];
    elem_from(x->dtype, 0, zero);
    return lt_tk_pad(k, x, pads, LT_PAD_CONSTANT, zero);
}

static lt_status k_reverse_sequence(lt_kctx *k)
{
    const lt_tensor *x, *lens;
    lt_status st = lt_tk_need(k, 0, &x);
    if (st == LT_OK)
        st = lt_tk_need(k, 1, &lens);
    if (st != LT_OK)
        return st;
    int64_t ta = lt_attr_int(k->node, "time_axis", 0), ba = lt_attr_int(k->node, "batch_axis", 1);
    if (x->rank < 2 || !((ta == 0 && ba == 1) || (ta == 1 && ba == 0)))
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs rank >= 2 and time/batch axes 0 and 1 (got rank %d, %lld, %lld)",
                         x->rank, (long long)ta, (long long)ba);
    int64_t T = x->dims[ta], B = x->dims[ba], xs[LT_MAX_RANK];
    if (!lt_dtype_is_int(lens->dtype) || lens->rank != 1 || lens->numel != B)
        return lt_k_fail(k, LT_ERR_RUNTIME, "sequence_lens must be an integer vector of %lld lengths", (long long)B);
    for (int64_t b = 0; b < B; b++) {
        int64_t l = lt_tensor_get_i64(lens, b);
        if (l < 0 || l > T)
            return lt_k_fail(k, LT_ERR_RUNTIME, "sequence_lens[%lld] = %lld is outside [0, %lld]", (long long)b,
                             (long long)l, (long long)T);
    }
    lt_tensor *y;
    st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (st != LT_OK || y->numel == 0)
        return st;
    lt_tk_strides(x->rank, x->dims, xs);
    size_t es = lt_dtype_size(x->dtype), inner = (size_t)xs[1] * es;
    int64_t st_t = xs[ta], st_b = xs[ba];
    const unsigned char *src = x->data;
    unsigned char *dst = y->data;
#pragma omp parallel for schedule(static) if (y->numel >= LT_TK_PAR_MIN)
    for (int64_t i = 0; i < T * B; i++) {
        int64_t t = i / B, b = i % B, l = lt_tensor_get_i64(lens, b), from = t < l ? l - 1 - t : t;
        memcpy(dst + (size_t)(t * st_t + b * st_b) * es, src + (size_t)(from * st_t + b * st_b) * es, inner);
    }
    return LT_OK;
}

/* x, blocksize and mode (*crd: CRD, else DCR, the default; SpaceToDepth
 * has a mode since opset 28, DepthToSpace since 11) */
static lt_status depth_space_input(lt_kctx *k, const lt_tensor **x, int64_t *b, bool *crd)
{
    lt_status st = lt_tk_need(k, 0, x);
    if (st != LT_OK)
        return st;
    *b = lt_attr_int(k->node, "blocksize", 0);
    if (*b <= 0)
        return lt_k_fail(k, LT_ERR_INVALID, "blocksize must be positive");
    const char *mode = lt_attr_str(k->node, "mode", "DCR");
    *crd = !strcmp(mode, "CRD");
    if (!*crd && strcmp(mode, "DCR"))
        return lt_k_fail(k, LT_ERR_INVALID, "mode must be DCR or CRD, got '%s'", mode);
    if ((*x)->rank != 4)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must be 4-D, got rank %d", (*x)->rank);
    return LT_OK;
}

static lt_status k_depth_to_space(lt_kctx *k)
{
    const lt_tensor *x;
    int64_t b;
    bool crd;
    lt_status st = depth_space_input(k, &x, &b, &crd);
    if (st != LT_OK)
        return st;
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if (b > C || b > C / b || C % (b * b) != 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "channels %lld are not a multiple of blocksize %lld squared", (long long)C,
                         (long long)b);
    int64_t c = C / (b * b), dims[4] = {N, c, H * b, W * b};
    lt_tensor *y;
    st = lt_k_out(k, 0, x->dtype, 4, dims, &y);
    if (st != LT_OK)
        return st;
    /* y as [N, c, H, b1, W, b2]; x as [N, b1, b2, c, H, W] (DCR) or [N, c, b1, b2, H, W] (CRD) */
    int64_t cd[6] = {N, c, H, b, W, b}, cds[6], ss[6];
    int64_t hw = H * W;
    ss[0] = C * hw;
    ss[1] = crd ? b * b * hw : hw;
    ss[2] = W;
    ss[3] = crd ? b * hw : b * c * hw;
    ss[4] = 1;
    ss[5] = crd ? hw : c * hw;
    lt_tk_strides(6, cd, cds);
    lt_tk_copy(y->data, cds, x->data, ss, 6, cd, lt_dtype_size(x->dtype));
    return LT_OK;
}

static lt_status k_space_to_depth(lt_kctx *k)
{
    const lt_tensor *x;
    int64_t b;
    bool crd;
    lt_status st = depth_space_input(k, &x, &b, &crd);
    if (st != LT_OK)
        return st;
    int64_t N = x->dims[0], C = x->dims[1], H = x->dims[2], W = x->dims[3];
    if (H % b != 0 || W % b != 0 || b > INT32_MAX || C > INT64_MAX / b / b)
        return lt_k_fail(k, LT_ERR_RUNTIME, "spatial size %lldx%lld is not a multiple of blocksize %lld",
                         (long long)H, (long long)W, (long long)b);
    int64_t dims[4] = {N, C * b * b, H / b, W / b};
    lt_tensor *y;
    st = lt_k_out(k, 0, x->dtype, 4, dims, &y);
    if (st != LT_OK)
        return st;
    /* y as [N, b1, b2, C, H/b, W/b] (DCR) or [N, C, b1, b2, H/b, W/b] (CRD);
     * x as [N, C, H/b, b1, W/b, b2] */
    int64_t cd[6] = {N, b, b, C, H / b, W / b}, cds[6];
    int64_t ss[6] = {C * H * W, W, 1, H * W, b * W, b};
    if (crd) {
        int64_t cd_crd[6] = {N, C, b, b, H / b, W / b}, ss_crd[6] = {C * H * W, H * W, W, 1, b * W, b};
        memcpy(cd, cd_crd, sizeof cd);
        memcpy(ss, ss_crd, sizeof ss);
    }
    lt_tk_strides(6, cd, cds);
    lt_tk_copy(y->data, cds, x->data, ss, 6, cd, lt_dtype_size(x->dtype));
    return LT_OK;
}

void lt_tk_register_pad(lt_kernel_fn *tab)
{
    tab[LT_OP_PAD] = k_pad;
    tab[LT_OP_CENTER_CROP_PAD] = k_center_crop_pad;
    tab[LT_OP_REVERSE_SEQUENCE] = k_reverse_sequence;
    tab[LT_OP_DEPTH_TO_SPACE] = k_depth_to_space;
    tab[LT_OP_SPACE_TO_DEPTH] = k_space_to_depth;
}
