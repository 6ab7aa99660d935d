/* Shape inference rules of the tensor family's data-moving and generating
 * ops: Transpose, Concat, Split, Slice, Expand, Tile, Pad, CenterCropPad,
 * ReverseSequence, DepthToSpace, SpaceToDepth, Constant, ConstantOfShape,
 * Range, EyeLike and the windows. */
#include "shape_tensor_util.h"
#include <math.h>
#include <string.h>

static bool ranked(const lt_type *t)
{
    return t && t->kind == LT_KIND_TENSOR && t->rank >= 0;
}

/* Output 0 = input 0's dtype with unknown rank; the usual starting point. */
static lt_type like_input(const lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o;
    lt_type_unknown(&o, x ? x->dtype : LT_UNDEFINED, ranked(x) ? x->rank : -1);
    return o;
}

static lt_dim dim_add(lt_dim d, int64_t add)
{
    if (add == 0)
        return d;
    int64_t v;
    return lt_ti_static(d) && !__builtin_add_overflow(d.v, add, &v) && v >= 0 ? lt_ti_dim(v) : lt_ti_dim(-1);
}

static lt_status r_transpose(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o = like_input(n);
    if (ranked(x)) {
        int len;
        const int64_t *p = lt_attr_ints(n, "perm", &len);
        if (p && len != x->rank)
            return lt_infer_fail(c, n, "perm has %d entries for an input of rank %d", len, x->rank);
        for (int i = 0; i < x->rank; i++) {
            int64_t a = p ? (p[i] < 0 ? p[i] + x->rank : p[i]) : x->rank - 1 - i;
            if (a < 0 || a >= x->rank)
                return lt_infer_fail(c, n, "perm[%d] = %lld is out of range", i, (long long)p[i]);
            o.dims[i] = x->dims[a];
        }
    } else {
        /* an input of unknown rank: perm still tells the output's rank */
        int len;
        if (lt_attr_ints(n, "perm", &len) && len <= LT_MAX_RANK) {
            o.rank = len;
            for (int i = 0; i < len; i++)
                o.dims[i] = lt_ti_dim(-1);
        }
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_concat(lt_infer_ctx *c, lt_node *n)
{
    lt_type o;
    lt_type_unknown(&o, LT_UNDEFINED, -1);
    for (int i = 0; i < n->nin; i++) {
        const lt_type *x = lt_ti_in(n, i);
        if (x && o.dtype == LT_UNDEFINED)
            o.dtype = x->dtype;
        if (ranked(x) && o.rank < 0)
            o.rank = x->rank;
    }
    if (o.rank >= 0) {
        int64_t a = lt_attr_int(n, "axis", 0);
        if (a < -o.rank || a >= o.rank)
            return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)a, o.rank);
        int axis = (int)(a < 0 ? a + o.rank : a);
        int64_t sum = 0;
        for (int i = 0; i < n->nin; i++) {
            const lt_type *x = lt_ti_in(n, i);
            if (!x)
                continue;
            if (!ranked(x)) {
                sum = -1;
                continue;
            }
            if (x->rank != o.rank)
                return lt_infer_fail(c, n, "input %d has rank %d, expected %d", i, x->rank, o.rank);
            for (int d = 0; d < o.rank; d++)
                if (d != axis && !lt_ti_static(o.dims[d]) && o.dims[d].sym < 0)
                    o.dims[d] = x->dims[d];
            if (sum >= 0 && lt_ti_static(x->dims[axis]))
                sum += x->dims[axis].v;
            else
                sum = -1;
        }
        o.dims[axis] = lt_ti_dim(sum);
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_split(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o = like_input(n);
    if (!ranked(x)) {
        for (int i = 0; i < n->nout; i++)
            lt_ti_set(n, i, &o);
        return LT_OK;
    }
    int64_t a = lt_attr_int(n, "axis", 0);
    if (a < -x->rank || a >= x->rank)
        return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)a, x->rank);
    int axis = (int)(a < 0 ? a + x->rank : a);
    int64_t sizes[64];
    int len = 0;
    bool have = false;
    if (n->nout <= 64) {
        if ((n->opset >= 13 || n->opset == 1) && n->nin > 1 && n->in[1]) {
            have = lt_ti_const_ints(c, n->in[1], sizes, 64, &len) && len == n->nout;
        } else if (n->opset < 13 && lt_attr_ints(n, "split", &len)) {
            have = len == n->nout;
            if (have)
                memcpy(sizes, lt_attr_ints(n, "split", &len), sizeof *sizes * len);
        } else if (lt_ti_static(x->dims[axis])) {
            int64_t dim = x->dims[axis].v, parts = lt_attr_int(n, "num_outputs", 0), chunk;
            have = true;
            if (parts > 0)
                chunk = (dim + parts - 1) / parts;
            else if (dim % n->nout == 0)
                chunk = dim / n->nout;
            else
                have = false;
            for (int i = 0; i < n->nout && have; i++) {
                int64_t lo = chunk * i < dim ? chunk * i : dim;
                sizes[i] = (lo + chunk < dim ? lo + chunk : dim) - lo;
            }
        }
    }
    for (int i = 0; i < n->nout; i++) {
        o.dims[axis] = lt_ti_dim(have ? sizes[i] : -1);
        for (int d = 0; d < x->rank; d++)
            if (d != axis)
                o.dims[d] = x->dims[d];
        lt_ti_set(n, i, &o);
    }
    return LT_OK;
}

/* One sliced axis of size dim; -1 when unknown. Mirrors the kernel. */
static int64_t slice_len(int64_t dim, int64_t s, int64_t e, int64_t t)
{
    if (t == 0 || dim < 0)
        return -1;
    if (s < 0)
        s += dim;
    if (e < 0)
        e += dim;
    if (t > 0) {
        s = s < 0 ? 0 : s > dim ? dim : s;
        e = e < 0 ? 0 : e > dim ? dim : e;
        return e > s ? (e - s - 1) / t + 1 : 0;
    }
    s = s < 0 ? 0 : s > dim - 1 ? dim - 1 : s;
    e = e < -1 ? -1 : e > dim - 1 ? dim - 1 : e;
    int64_t back = t == INT64_MIN ? INT64_MAX : -t;
    return dim > 0 && s > e ? (s - e - 1) / back + 1 : 0;
}

static lt_status r_slice(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o = like_input(n);
    if (!ranked(x)) {
        lt_ti_set(n, 0, &o);
        return LT_OK;
    }
    int64_t st[LT_MAX_RANK], en[LT_MAX_RANK], ax[LT_MAX_RANK], sp[LT_MAX_RANK];
    int ns = -1, ne = -1, na = -1, nsp = -1, len;
    bool axes_unknown = false;
    if (n->opset < 10) {
        const int64_t *a;
        if ((a = lt_attr_ints(n, "starts", &len)) && len <= LT_MAX_RANK)
            memcpy(st, a, sizeof *a * (ns = len));
        if ((a = lt_attr_ints(n, "ends", &len)) && len <= LT_MAX_RANK)
            memcpy(en, a, sizeof *a * (ne = len));
        if ((a = lt_attr_ints(n, "axes", &len)) && len <= LT_MAX_RANK)
            memcpy(ax, a, sizeof *a * (na = len));
    } else {
        if (n->nin > 1 && !lt_ti_const_ints(c, n->in[1], st, LT_MAX_RANK, &ns))
            ns = -1;
        if (n->nin > 2 && !lt_ti_const_ints(c, n->in[2], en, LT_MAX_RANK, &ne))
            ne = -1;
        if (n->nin > 3 && n->in[3] && !lt_ti_const_ints(c, n->in[3], ax, LT_MAX_RANK, &na))
            axes_unknown = true;
        if (n->nin > 4 && n->in[4] && !lt_ti_const_ints(c, n->in[4], sp, LT_MAX_RANK, &nsp))
            nsp = -2; /* given but unknown */
    }
    int count = ns >= 0 ? ns : ne >= 0 ? ne : na >= 0 ? na : -1;
    if (count < 0 && n->opset >= 10 && n->nin > 1)
        count = (int)lt_ti_len(n->in[1]);
    for (int d = 0; d < x->rank; d++)
        o.dims[d] = axes_unknown ? lt_ti_dim(-1) : x->dims[d];
    if (axes_unknown || count < 0) {
        /* which axes change is unknown: every dim may */
        for (int d = 0; d < x->rank; d++)
            o.dims[d] = lt_ti_dim(-1);
        lt_ti_set(n, 0, &o);
        return LT_OK;
    }
    if (count > x->rank || (ns >= 0 && ns != count) || (ne >= 0 && ne != count) || (na >= 0 && na != count) ||
        (nsp >= 0 && nsp != count))
        return lt_infer_fail(c, n, "starts, ends, axes and steps differ in length or exceed the rank");
    for (int i = 0; i < count; i++) {
        int64_t a = na >= 0 ? ax[i] : i;
        if (a < -x->rank || a >= x->rank)
            return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)a, x->rank);
        if (a < 0)
            a += x->rank;
        int64_t t = nsp >= 0 ? sp[i] : nsp == -1 ? 1 : 0;
        lt_dim d = x->dims[a];
        if (ns >= 0 && ne >= 0 && t == 1 && st[i] == 0 && en[i] >= INT32_MAX)
            continue; /* the whole axis, whatever its size */
        if (ns < 0 || ne < 0 || t == 0 || !lt_ti_static(d))
            o.dims[a] = lt_ti_dim(-1);
        else
            o.dims[a] = lt_ti_dim(slice_len(d.v, st[i], en[i], t));
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_expand(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o = like_input(n);
    o.rank = -1;
    int64_t s[LT_MAX_RANK];
    int len;
    if (n->nin > 1 && lt_ti_const_ints(c, n->in[1], s, LT_MAX_RANK, &len)) {
        if (ranked(x)) {
            int r = len > x->rank ? len : x->rank;
            o.rank = r;
            for (int i = 0; i < r; i++) {
                int ix = i - (r - x->rank), is = i - (r - len);
                lt_dim dx = ix >= 0 ? x->dims[ix] : lt_ti_dim(1);
                int64_t v = is >= 0 ? s[is] : 1;
                if (v < 0)
                    return lt_infer_fail(c, n, "shape[%d] is %lld", is, (long long)v);
                if (lt_ti_static(dx) && dx.v != v && dx.v != 1 && v != 1)
                    return lt_infer_fail(c, n, "cannot broadcast dim %d of size %lld to %lld", ix, (long long)dx.v,
                                         (long long)v);
                o.dims[i] = v == 1 ? dx : lt_ti_dim(v);
            }
        }
    } else if (ranked(x) && n->nin > 1) {
        int64_t l = lt_ti_len(n->in[1]);
        if (l >= 0 && l <= LT_MAX_RANK)
            o.rank = l > x->rank ? (int)l : x->rank;
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_tile(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o = like_input(n);
    int64_t reps[LT_MAX_RANK];
    int len;
    bool have = n->opset >= 6 && n->nin > 1 && lt_ti_const_ints(c, n->in[1], reps, LT_MAX_RANK, &len);
    if (ranked(x)) {
        if (have && len != x->rank)
            return lt_infer_fail(c, n, "repeats has %d entries for an input of rank %d", len, x->rank);
        for (int i = 0; i < x->rank; i++) {
            lt_dim d = x->dims[i];
            if (!have)
                o.dims[i] = lt_ti_dim(-1);
            else if (reps[i] == 1)
                o.dims[i] = d;
            else if (reps[i] == 0)
                o.dims[i] = lt_ti_dim(0);
            else if (lt_ti_static(d) && reps[i] > 0 && d.v <= INT64_MAX / reps[i])
                o.dims[i] = lt_ti_dim(d.v * reps[i]);
            else
                o.dims[i] = lt_ti_dim(-1);
        }
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_pad(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o = like_input(n);
    if (!ranked(x)) {
        lt_ti_set(n, 0, &o);
        return LT_OK;
    }
    int r = x->rank, np = -1, na = r;
    int64_t raw[2 * LT_MAX_RANK], axes[LT_MAX_RANK], pads[2 * LT_MAX_RANK] = {0};
    if (n->opset < 11) {
        const int64_t *p = lt_attr_ints(n, n->opset < 2 ? "paddings" : "pads", &np);
        if (p && np <= 2 * LT_MAX_RANK)
            memcpy(raw, p, sizeof *p * np);
        else
            np = -1;
    } else if (n->nin > 1 && !lt_ti_const_ints(c, n->in[1], raw, 2 * LT_MAX_RANK, &np)) {
        np = -1;
    }
    bool have = np >= 0;
    if (n->opset >= 18 && n->nin > 3 && n->in[3]) {
        if (!lt_ti_const_ints(c, n->in[3], axes, LT_MAX_RANK, &na))
            have = false;
    } else {
        for (int i = 0; i < r; i++)
            axes[i] = i;
    }
    if (have) {
        if (np != 2 * na)
            return lt_infer_fail(c, n, "pads has %d entries for %d axes", np, na);
        for (int i = 0; i < na; i++) {
            int64_t a = axes[i] < 0 ? axes[i] + r : axes[i];
            if (a < 0 || a >= r)
                return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)axes[i], r);
            pads[a] = raw[i];
            pads[r + a] = raw[na + i];
        }
    }
    for (int i = 0; i < r; i++) {
        int64_t both;
        if (have && __builtin_add_overflow(pads[i], pads[r + i], &both))
            return lt_infer_fail(c, n, "pads %lld and %lld of axis %d overflow", (long long)pads[i],
                                 (long long)pads[r + i], i);
        o.dims[i] = have ? dim_add(x->dims[i], both) : lt_ti_dim(-1);
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_center_crop_pad(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o = like_input(n);
    if (ranked(x)) {
        int64_t s[LT_MAX_RANK];
        int len, na;
        bool have = n->nin > 1 && lt_ti_const_ints(c, n->in[1], s, LT_MAX_RANK, &len);
        const int64_t *axes = lt_attr_ints(n, "axes", &na);
        if (!axes)
            na = x->rank;
        if (have && len != na)
            return lt_infer_fail(c, n, "shape has %d entries for %d axes", len, na);
        for (int i = 0; i < x->rank; i++)
            o.dims[i] = axes ? x->dims[i] : have ? lt_ti_dim(s[i]) : lt_ti_dim(-1);
        for (int i = 0; axes && i < na; i++) {
            int64_t a = axes[i] < 0 ? axes[i] + x->rank : axes[i];
            if (a < 0 || a >= x->rank)
                return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)axes[i], x->rank);
            o.dims[a] = have ? lt_ti_dim(s[i]) : lt_ti_dim(-1);
        }
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_same(lt_infer_ctx *c, lt_node *n)
{
    lt_infer_same(n, 0, 0);
    return LT_OK;
}

static lt_status r_depth_space(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o = like_input(n);
    o.rank = 4;
    int64_t b = lt_attr_int(n, "blocksize", 0);
    if (b <= 0)
        return lt_infer_fail(c, n, "blocksize must be positive");
    if (ranked(x) && x->rank != 4)
        return lt_infer_fail(c, n, "input must be 4-D, got rank %d", x->rank);
    if (ranked(x) && b <= 65536) {
        o.dims[0] = x->dims[0];
        bool to_space = n->op == LT_OP_DEPTH_TO_SPACE;
        lt_dim ch = x->dims[1];
        if (lt_ti_static(ch))
            o.dims[1] = lt_ti_dim(to_space ? (ch.v % (b * b) == 0 ? ch.v / (b * b) : -1) : ch.v * b * b);
        for (int i = 2; i < 4; i++) {
            lt_dim d = x->dims[i];
            if (lt_ti_static(d))
                o.dims[i] = lt_ti_dim(to_space ? d.v * b : (d.v % b == 0 ? d.v / b : -1));
        }
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_constant(lt_infer_ctx *c, lt_node *n)
{
    lt_type o;
    const lt_attr *a;
    const lt_tensor *t = lt_attr_tensor(n, "value");
    int64_t len;
    if (t)
        lt_type_tensor(&o, t->dtype, t->rank, t->dims);
    else if ((a = lt_attr_find(n, "value_float")) && a->kind == LT_ATTR_FLOAT)
        lt_type_tensor(&o, LT_F32, 0, NULL);
    else if ((a = lt_attr_find(n, "value_int")) && a->kind == LT_ATTR_INT)
        lt_type_tensor(&o, LT_I64, 0, NULL);
    else if ((a = lt_attr_find(n, "value_string")) && a->kind == LT_ATTR_STRING)
        lt_type_tensor(&o, LT_STRING, 0, NULL);
    else if ((a = lt_attr_find(n, "value_floats")) && a->kind == LT_ATTR_FLOATS)
        lt_type_tensor(&o, LT_F32, 1, (len = a->n, &len));
    else if ((a = lt_attr_find(n, "value_ints")) && a->kind == LT_ATTR_INTS)
        lt_type_tensor(&o, LT_I64, 1, (len = a->n, &len));
    else if ((a = lt_attr_find(n, "value_strings")) && a->kind == LT_ATTR_STRINGS)
        lt_type_tensor(&o, LT_STRING, 1, (len = a->n, &len));
    else
        lt_type_unknown(&o, LT_UNDEFINED, -1); /* sparse_value: the kernel says no */
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_constant_of_shape(lt_infer_ctx *c, lt_node *n)
{
    const lt_tensor *v = lt_attr_tensor(n, "value");
    int64_t s[LT_MAX_RANK];
    int len;
    lt_type o;
    lt_type_unknown(&o, v ? v->dtype : LT_F32, -1);
    if (n->nin > 0 && lt_ti_const_ints(c, n->in[0], s, LT_MAX_RANK, &len)) {
        o.rank = len;
        for (int i = 0; i < len; i++) {
            if (s[i] < 0)
                return lt_infer_fail(c, n, "shape[%d] is negative", i);
            o.dims[i] = lt_ti_dim(s[i]);
        }
    } else if (n->nin > 0) {
        int64_t l = lt_ti_len(n->in[0]);
        if (l >= 0 && l <= LT_MAX_RANK)
            o.rank = (int)l;
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_range(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *s = lt_ti_in(n, 0);
    lt_type o;
    lt_type_unknown(&o, s ? s->dtype : LT_UNDEFINED, 1);
    double v[3];
    bool have = n->nin >= 3;
    for (int i = 0; i < 3 && have; i++)
        have = lt_ti_const_f64(c, n->in[i], &v[i]);
    if (have && v[2] != 0 && isfinite(v[0]) && isfinite(v[1]) && isfinite(v[2])) {
        double cnt = ceil((v[1] - v[0]) / v[2]);
        if (cnt < 1e15)
            o.dims[0] = lt_ti_dim(cnt > 0 ? (int64_t)cnt : 0);
    }
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_eye_like(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = lt_ti_in(n, 0);
    lt_type o = like_input(n);
    if (ranked(x)) {
        if (x->rank != 2)
            return lt_infer_fail(c, n, "input must be 2-D, got rank %d", x->rank);
        o = *x;
    }
    o.dtype = (lt_dtype)lt_attr_int(n, "dtype", o.dtype);
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

static lt_status r_window(lt_infer_ctx *c, lt_node *n)
{
    lt_type o;
    lt_type_unknown(&o, (lt_dtype)lt_attr_int(n, "output_datatype", LT_F32), 1);
    int64_t s;
    int len;
    if (n->nin > 0 && lt_ti_const_ints(c, n->in[0], &s, 1, &len) && len == 1 && s >= 0)
        o.dims[0] = lt_ti_dim(s);
    lt_ti_set(n, 0, &o);
    return LT_OK;
}

void lt_ti_register_ops(lt_infer_fn *tab)
{
    tab[LT_OP_TRANSPOSE] = r_transpose;
    tab[LT_OP_CONCAT] = r_concat;
    tab[LT_OP_SPLIT] = r_split;
    tab[LT_OP_SLICE] = r_slice;
    tab[LT_OP_EXPAND] = r_expand;
    tab[LT_OP_TILE] = r_tile;
    tab[LT_OP_PAD] = r_pad;
    tab[LT_OP_CENTER_CROP_PAD] = r_center_crop_pad;
    tab[LT_OP_REVERSE_SEQUENCE] = r_same;
    tab[LT_OP_DEPTH_TO_SPACE] = r_depth_space;
    tab[LT_OP_SPACE_TO_DEPTH] = r_depth_space;
    tab[LT_OP_CONSTANT] = r_constant;
    tab[LT_OP_CONSTANT_OF_SHAPE] = r_constant_of_shape;
    tab[LT_OP_RANGE] = r_range;
    tab[LT_OP_EYE_LIKE] = r_eye_like;
    tab[LT_OP_HANN_WINDOW] = r_window;
    tab[LT_OP_HAMMING_WINDOW] = r_window;
    tab[LT_OP_BLACKMAN_WINDOW] = r_window;
}
