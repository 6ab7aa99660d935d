/* Shape inference rules: linalg family (MatMul, Gemm, Einsum, Det and the
 * quantized ops). */
#include "infer.h"
#include <string.h>

static const lt_type *in_type(const lt_node *n, int i)
{
    if (i >= n->nin || !n->in[i] || n->in[i]->type.kind != LT_KIND_TENSOR)
        return NULL;
    return &n->in[i]->type;
}

static void set_out(lt_node *n, int i, const lt_type *t)
{
    if (i < n->nout && n->out[i])
        n->out[i]->type = *t;
}

static bool dim_known(lt_dim d) { return d.sym < 0 && d.v >= 0; }

/* numpy matmul of a and b into out (dtype dt); false on a definite error */
static bool mm_type(const lt_type *a, const lt_type *b, lt_dtype dt, lt_type *out)
{
    lt_type_unknown(out, dt, -1);
    if (!a || !b || a->rank < 0 || b->rank < 0)
        return true;
    if (a->rank == 0 || b->rank == 0)
        return false;
    lt_dim ka = a->dims[a->rank - 1], kb = b->rank >= 2 ? b->dims[b->rank - 2] : b->dims[0];
    if (dim_known(ka) && dim_known(kb) && ka.v != kb.v)
        return false;
    lt_type ba, bb, bo;
    lt_type_unknown(&ba, dt, a->rank > 2 ? a->rank - 2 : 0);
    lt_type_unknown(&bb, dt, b->rank > 2 ? b->rank - 2 : 0);
    for (int i = 0; i < ba.rank; i++)
        ba.dims[i] = a->dims[i];
    for (int i = 0; i < bb.rank; i++)
        bb.dims[i] = b->dims[i];
    if (!lt_infer_broadcast(&ba, &bb, &bo))
        return false;
    int r = bo.rank;
    lt_type_unknown(out, dt, r + (a->rank >= 2) + (b->rank >= 2));
    for (int i = 0; i < r; i++)
        out->dims[i] = bo.dims[i];
    if (a->rank >= 2)
        out->dims[r++] = a->dims[a->rank - 2];
    if (b->rank >= 2)
        out->dims[r++] = b->dims[b->rank - 1];
    return true;
}

static lt_status matmul(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *a = in_type(n, 0), *b = in_type(n, 1);
    lt_type t;
    if (!mm_type(a, b, a ? a->dtype : LT_UNDEFINED, &t))
        return lt_infer_fail(c, n, "operand shapes do not multiply");
    set_out(n, 0, &t);
    return LT_OK;
}

/* MatMulTrans: MatMul's shapes on the operands with their last two axes
 * swapped where transA / transB say */
static lt_status matmul_trans(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *a = in_type(n, 0), *b = in_type(n, 1);
    lt_type sa, sb;
    bool t[2] = {lt_attr_int(n, "transA", 0) != 0, lt_attr_int(n, "transB", 0) != 0};
    const lt_type *src[2] = {a, b};
    lt_type *dst[2] = {&sa, &sb};
    static const char *const vname[2] = {"viewA", "viewB"};
    for (int i = 0; i < 2; i++) {
        if (!src[i])
            continue;
        *dst[i] = *src[i];
        int vl = 0;
        const int64_t *v = lt_attr_ints(n, vname[i], &vl);
        if (v && src[i]->rank >= 0) {
            /* [storage's first dim, H, R, C] (ir/fold_heads.h) */
            if (vl != 6 || src[i]->rank < 1)
                return lt_infer_fail(c, n, "%s must hold 6 integers over a tensor of rank 1 or more", vname[i]);
            lt_type_unknown(dst[i], src[i]->dtype, 4);
            dst[i]->dims[0] = src[i]->dims[0];
            for (int d = 1; d < 4; d++)
                dst[i]->dims[d] = (lt_dim){.sym = -1, .v = v[d - 1]};
        }
        if (!t[i] || dst[i]->rank < 0)
            continue;
        if (dst[i]->rank < 2)
            return lt_infer_fail(c, n, "a transposed operand must have rank 2 or more (rank %d)", dst[i]->rank);
        int r = dst[i]->rank;
        lt_dim d2 = dst[i]->dims[r - 2];
        dst[i]->dims[r - 2] = dst[i]->dims[r - 1];
        dst[i]->dims[r - 1] = d2;
    }
    lt_type out;
    if (!mm_type(a ? &sa : NULL, b ? &sb : NULL, a ? a->dtype : LT_UNDEFINED, &out))
        return lt_infer_fail(c, n, "operand shapes do not multiply");
    if (lt_attr_int(n, "viewY", 0) && out.rank >= 0) {
        /* [B, H, M, N] stored as [B, M, H, N] */
        if (out.rank != 4)
            return lt_infer_fail(c, n, "viewY needs a product of rank 4 (rank %d)", out.rank);
        lt_dim h = out.dims[1];
        out.dims[1] = out.dims[2];
        out.dims[2] = h;
    }
    set_out(n, 0, &out);
    return LT_OK;
}

static lt_status matmul_integer(lt_infer_ctx *c, lt_node *n)
{
    lt_type t;
    if (!mm_type(in_type(n, 0), in_type(n, 1), LT_I32, &t))
        return lt_infer_fail(c, n, "operand shapes do not multiply");
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status qlinear_matmul(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *zy = in_type(n, 7);
    lt_type t;
    if (!mm_type(in_type(n, 0), in_type(n, 3), zy ? zy->dtype : LT_U8, &t))
        return lt_infer_fail(c, n, "operand shapes do not multiply");
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status gemm(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *a = in_type(n, 0), *b = in_type(n, 1);
    lt_type t;
    lt_type_unknown(&t, a ? a->dtype : LT_UNDEFINED, 2);
    bool ta = lt_attr_int(n, "transA", 0) != 0, tb = lt_attr_int(n, "transB", 0) != 0;
    if (a && a->rank >= 0 && a->rank != 2)
        return lt_infer_fail(c, n, "A must be a matrix (rank %d)", a->rank);
    if (b && b->rank >= 0 && b->rank != 2)
        return lt_infer_fail(c, n, "B must be a matrix (rank %d)", b->rank);
    if (a && a->rank == 2)
        t.dims[0] = a->dims[ta ? 1 : 0];
    if (b && b->rank == 2)
        t.dims[1] = b->dims[tb ? 0 : 1];
    if (a && b && a->rank == 2 && b->rank == 2) {
        lt_dim ka = a->dims[ta ? 0 : 1], kb = b->dims[tb ? 1 : 0];
        if (dim_known(ka) && dim_known(kb) && ka.v != kb.v)
            return lt_infer_fail(c, n, "inner dimensions differ (%lld and %lld)", (long long)ka.v, (long long)kb.v);
    }
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status det(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    if (!x)
        return LT_OK;
    lt_type t;
    lt_type_unknown(&t, x->dtype, x->rank >= 2 ? x->rank - 2 : -1);
    if (x->rank >= 0 && x->rank < 2)
        return lt_infer_fail(c, n, "input must have rank >= 2 (got %d)", x->rank);
    for (int i = 0; i < t.rank; i++)
        t.dims[i] = x->dims[i];
    set_out(n, 0, &t);
    return LT_OK;
}

/* Einsum: the output rank and dims when the equation and input ranks allow;
 * anything odd is left to the kernel, which reports it. */
static lt_status einsum(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    const lt_type *x0 = in_type(n, 0);
    lt_type t;
    lt_type_unknown(&t, x0 ? x0->dtype : LT_UNDEFINED, -1);
    set_out(n, 0, &t);
    const char *eq = lt_attr_str(n, "equation", NULL);
    if (!eq || strlen(eq) > 512)
        return LT_OK;
    char buf[513];
    size_t m = 0;
    for (const char *p = eq; *p; p++)
        if (*p != ' ')
            buf[m++] = *p;
    buf[m] = 0;
    lt_dim size[52];
    int count[52] = {0};
    for (int l = 0; l < 52; l++)
        size[l] = (lt_dim){-1, -1};
    const char *arrow = strstr(buf, "->");
    size_t lhs = arrow ? (size_t)(arrow - buf) : m;
    int term = 0, E = -1, pos = 0;
    lt_dim ell[LT_MAX_RANK];
    for (int i = 0; i < LT_MAX_RANK; i++)
        ell[i] = (lt_dim){-1, -1};
    for (size_t i = 0; i <= lhs; i++) {
        if (i < lhs && buf[i] != ',')
            continue;
        const lt_type *x = in_type(n, term);
        if (!x || x->rank < 0)
            return LT_OK;
        int nl = 0, e = 0;
        bool has_ell = false;
        for (size_t j = pos; j < i; j++)
            if (buf[j] == '.')
                has_ell = true;
            else
                nl++;
        if (has_ell) {
            e = x->rank - nl;
            if (e < 0)
                return LT_OK;
            if (e > E)
                E = e;
        } else if (nl != x->rank) {
            return LT_OK;
        }
        int a = 0;
        for (size_t j = pos; j < i; j++) {
            char ch = buf[j];
            if (ch == '.') {
                for (int q = 0; q < e && a < x->rank; q++, a++) {
                    lt_dim *d = &ell[LT_MAX_RANK - e + q];
                    /* a 1 broadcasts: any other size wins */
                    if ((d->sym < 0 && d->v < 0) || (d->sym < 0 && d->v == 1))
                        *d = x->dims[a];
                }
                j += 2;
                continue;
            }
            int l = ch >= 'a' && ch <= 'z' ? ch - 'a' : ch >= 'A' && ch <= 'Z' ? 26 + ch - 'A' : -1;
            if (l < 0 || a >= x->rank)
                return LT_OK;
            count[l]++;
            if (size[l].v < 0 && size[l].sym < 0)
                size[l] = x->dims[a];
            else if (size[l].sym < 0 && size[l].v == 1)
                size[l] = x->dims[a];
            a++;
        }
        term++;
        pos = (int)i + 1;
    }
    if (term != n->nin || E > LT_MAX_RANK)
        return LT_OK;
    if (E < 0)
        E = 0;
    int r = 0;
    lt_dim od[LT_MAX_RANK + 52];
    if (arrow) {
        for (const char *p = arrow + 2; *p; p++) {
            if (*p == '.') {
                for (int q = 0; q < E; q++)
                    od[r++] = ell[LT_MAX_RANK - E + q];
                p += 2;
                continue;
            }
            int l = *p >= 'a' && *p <= 'z' ? *p - 'a' : *p >= 'A' && *p <= 'Z' ? 26 + *p - 'A' : -1;
            if (l < 0 || !count[l])
                return LT_OK;
            od[r++] = size[l];
        }
    } else {
        for (int q = 0; q < E; q++)
            od[r++] = ell[LT_MAX_RANK - E + q];
        for (int l = 26; l < 52; l++)
            if (count[l] == 1)
                od[r++] = size[l];
        for (int l = 0; l < 26; l++)
            if (count[l] == 1)
                od[r++] = size[l];
    }
    if (r > LT_MAX_RANK)
        return LT_OK;
    lt_type_unknown(&t, t.dtype, r);
    for (int i = 0; i < r; i++)
        t.dims[i] = od[i];
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status quantize_linear(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    const lt_type *x = in_type(n, 0), *zp = in_type(n, 2);
    int64_t odt = lt_attr_int(n, "output_dtype", 0); /* opset 21: the type without a zero point */
    lt_dtype ot = zp ? zp->dtype : odt > 0 && odt < LT_DTYPE_COUNT ? (lt_dtype)odt : LT_U8;
    lt_type t;
    lt_type_unknown(&t, ot, -1);
    if (x) {
        t = *x;
        t.dtype = ot;
    }
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status dequantize_linear(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    const lt_type *x = in_type(n, 0), *sc = in_type(n, 1);
    int64_t odt = lt_attr_int(n, "output_dtype", 0); /* opset 23: else the scale's type */
    lt_dtype dt = odt > 0 && odt < LT_DTYPE_COUNT ? (lt_dtype)odt
                  : sc && sc->dtype != LT_UNDEFINED ? sc->dtype : LT_F32;
    lt_type t;
    lt_type_unknown(&t, dt, -1);
    if (x) {
        t = *x;
        t.dtype = dt;
    }
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status dynamic_quantize_linear(lt_infer_ctx *c, lt_node *n)
{
    (void)c;
    const lt_type *x = in_type(n, 0);
    lt_type t;
    lt_type_unknown(&t, LT_U8, -1);
    if (x) {
        t = *x;
        t.dtype = LT_U8;
    }
    set_out(n, 0, &t);
    lt_type_unknown(&t, LT_F32, 0);
    set_out(n, 1, &t);
    lt_type_unknown(&t, LT_U8, 0);
    set_out(n, 2, &t);
    return LT_OK;
}

void lt_infer_register_linalg(lt_infer_fn *tab)
{
    tab[LT_OP_MAT_MUL] = matmul;
    tab[LT_OP_MAT_MUL_TRANS] = matmul_trans;
    tab[LT_OP_MAT_MUL_INTEGER] = matmul_integer;
    tab[LT_OP_Q_LINEAR_MAT_MUL] = qlinear_matmul;
    tab[LT_OP_GEMM] = gemm;
    tab[LT_OP_DET] = det;
    tab[LT_OP_EINSUM] = einsum;
    tab[LT_OP_QUANTIZE_LINEAR] = quantize_linear;
    tab[LT_OP_DEQUANTIZE_LINEAR] = dequantize_linear;
    tab[LT_OP_DYNAMIC_QUANTIZE_LINEAR] = dynamic_quantize_linear;
}
