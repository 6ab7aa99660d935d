/* Gradient rules: data movement the remaining tensor ops do (Tile, CumSum,
 * TopK, the scatters, DepthToSpace/SpaceToDepth, Upsample, ReverseSequence,
 * Trilu, CenterCropPad, Compress). Most are the same or the inverse movement applied
 * to dy. */
#include "rules_util.h"
#include <string.h>

static bool static_dim(const lt_type *t, int i) { return t->dims[i].sym < 0 && t->dims[i].v >= 0; }

/* dy (shaped like y) summed over the copies one tiled axis at a time, from
 * the last: at axis i, with the axes after it summed already, dy is viewed
 * as [P, rep_i, d_i, Q] (P the size of y's axes before i, Q that of x's
 * after it) and its axis 1 reduced. Four dims at most, where the view of
 * every axis at once needs twice the rank. Sizes are constants where known
 * (v holds [rep0, d0, rep1, d1, ...], axes tiled once skipped), else read
 * from the shapes at run time (reps: the repeat counts). */
static lt_ival *tile_sum_by_axis(lt_ad *c, lt_ival *g, lt_ival *x, bool known, const int64_t *v, lt_ival *reps)
{
    int r = x->type.rank;
    lt_ival *sx = known ? NULL : OP1(SHAPE, x), *sy = known ? NULL : OP1(SHAPE, g);
    lt_ival *pre[LT_MAX_RANK + 1], *q = known ? NULL : INTS(1);
    int64_t ppre[LT_MAX_RANK + 1], pq = 1;
    pre[0] = q;
    ppre[0] = 1;
    for (int i = 0; i < r; i++) {
        if (known)
            ppre[i + 1] = ppre[i] * v[2 * i] * v[2 * i + 1];
        else
            pre[i + 1] = OP2(MUL, pre[i], OP2(GATHER, sy, INTS(i)));
    }
    for (int i = r - 1; i >= 0; i--) {
        if (known && v[2 * i] == 1) {
            pq *= v[2 * i + 1];
            continue;
        }
        lt_ival *shape;
        if (known) {
            shape = INTS(ppre[i], v[2 * i], v[2 * i + 1], pq);
        } else {
            lt_ival *parts[4] = {pre[i], OP2(GATHER, reps, INTS(i)), OP2(GATHER, sx, INTS(i)), q};
            lt_node *cat = lt_ad_node_of(c, LT_OP_CONCAT, 4, parts);
            if (!cat)
                return NULL;
            lt_ad_attr_int(c, cat, "axis", 0);
            lt_ad_infer(c, cat);
            shape = cat->out[0];
        }
        g = lt_ad_sum_over(c, OP2(RESHAPE, g, shape), false, 1, (int64_t[]){1});
        if (known)
            pq *= v[2 * i + 1];
        else
            q = OP2(MUL, q, OP2(GATHER, sx, INTS(i)));
    }
    if (!known)
        return OP2(RESHAPE, g, sx);
    int64_t xd[LT_MAX_RANK];
    for (int i = 0; i < r; i++)
        xd[i] = v[2 * i + 1];
    return OP2(RESHAPE, g, lt_ad_ints(c, r, xd));
}

/* dy summed over the copies: y viewed as [rep0, d0, rep1, d1, ...] and the
 * rep axes reduced; above rank LT_MAX_RANK / 2 that view has too many dims,
 * and the axes are summed one at a time (tile_sum_by_axis) */
RULE(r_tile)
{
    lt_ival *x = in[0];
    int r = x->type.rank;
    if (r < 0 || (out[0]->type.rank >= 0 && out[0]->type.rank != r))
        return lt_ad_fail(c, n, "Tile needs a known input rank to be differentiated");
    if (r == 0)
        return ACC(0, G);
    int64_t v[2 * LT_MAX_RANK], axes[LT_MAX_RANK];
    bool known = out[0]->type.rank == r;
    for (int i = 0; i < r && known; i++) {
        known = static_dim(&x->type, i) && static_dim(&out[0]->type, i) && x->type.dims[i].v > 0 &&
                out[0]->type.dims[i].v % x->type.dims[i].v == 0;
        if (known) {
            v[2 * i] = out[0]->type.dims[i].v / x->type.dims[i].v;
            v[2 * i + 1] = x->type.dims[i].v;
        }
    }
    if (2 * r > LT_MAX_RANK) {
        lt_ival *reps = NULL; /* at run time: as below */
        if (!known && n->opset >= 6)
            reps = lt_ad_as_i64(c, in[1]);
        else if (!known)
            reps = OP2(DIV, OP1(SHAPE, out[0]), OP2(MAX, OP1(SHAPE, x), lt_ad_scalar(c, LT_I64, 1)));
        lt_ival *d = tile_sum_by_axis(c, G, x, known, v, reps);
        return d ? ACC(0, d) : LT_ERR_NOMEM;
    }
    lt_ival *shape;
    if (known) {
        shape = lt_ad_ints(c, 2 * r, v);
    } else {
        /* at run time: repeats from the input (Tile-6) or out / max(in, 1)
         * (Tile-1's scalar count along one axis; a zero-size input has an
         * empty dy, which any repeat count reshapes) */
        lt_ival *sx = OP1(SHAPE, x), *reps;
        if (n->opset >= 6)
            reps = in[1];
        else
            reps = OP2(DIV, OP1(SHAPE, out[0]), OP2(MAX, sx, lt_ad_scalar(c, LT_I64, 1)));
        int64_t one = 1, flat = -1;
        lt_ival *parts[2] = {lt_ad_unsqueeze(c, reps, 1, &one), lt_ad_unsqueeze(c, sx, 1, &one)};
        lt_node *cat = lt_ad_node_of(c, LT_OP_CONCAT, 2, parts);
        if (!cat)
            return LT_ERR_NOMEM;
        lt_ad_attr_int(c, cat, "axis", 1);
        lt_ad_infer(c, cat);
        shape = OP2(RESHAPE, cat->out[0], lt_ad_ints(c, 1, &flat));
    }
    for (int i = 0; i < r; i++)
        axes[i] = 2 * i;
    lt_ival *ins[2] = {OP2(RESHAPE, G, shape), lt_ad_ints(c, r, axes)};
    lt_node *k = lt_ad_node_of(c, LT_OP_REDUCE_SUM, 2, ins);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, k, "keepdims", 0);
    lt_ad_infer(c, k);
    return ACC(0, k->out[0]);
}

/* each x feeds the sums at and after it: dy summed the other way round,
 * with the same exclusiveness */
RULE(r_cumsum)
{
    lt_ival *ins[2] = {G, in[1]};
    lt_node *k = lt_ad_node_of(c, LT_OP_CUM_SUM, 2, ins);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, k, "exclusive", lt_attr_int(n, "exclusive", 0) != 0);
    lt_ad_attr_int(c, k, "reverse", lt_attr_int(n, "reverse", 0) == 0);
    lt_ad_infer(c, k);
    return ACC(0, k->out[0]);
}

/* dvalues scattered back to where they were taken from */
RULE(r_topk)
{
    if (!G)
        return LT_OK;
    if (n->nout < 2 || !out[1])
        return lt_ad_fail(c, n, "TopK needs its indices output to be differentiated");
    lt_ival *ins[3] = {G, out[1], in[0]};
    lt_node *k = lt_ad_node_of(c, LT_OP_GATHER_ELEMENTS_GRAD, 3, ins);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, k, "axis", lt_attr_int(n, "axis", -1));
    lt_ad_infer(c, k);
    return ACC(0, k->out[0]);
}

/* The scatter's reduction: none (the written positions lose data's
 * gradient), add (data's gradient passes whole), max / min (the gradient
 * goes to the values that are the result, shared evenly among ties, as
 * PyTorch's scatter_reduce amax/amin) or mul (each factor's gradient is the
 * product of the others, zeros included). */
typedef enum { RED_NONE, RED_ADD, RED_EXTREME, RED_MUL } scatter_red;

static lt_status scatter_reduction(lt_ad *c, const lt_node *n, scatter_red *red)
{
    const char *r = n->op == LT_OP_SCATTER ? "none" : lt_attr_str(n, "reduction", "none");
    if (!strcmp(r, "none"))
        *red = RED_NONE;
    else if (!strcmp(r, "add"))
        *red = RED_ADD;
    else if (!strcmp(r, "max") || !strcmp(r, "min"))
        *red = RED_EXTREME;
    else if (!strcmp(r, "mul"))
        *red = RED_MUL;
    else
        return lt_ad_fail(c, n, "no gradient rule for reduction '%s'", r);
    return LT_OK;
}

/* The scatter n is (ScatterElements along its axis, or ScatterND) of upd
 * into data at idx, with reduction red ("none" for none) */
static lt_ival *scatter_as(lt_ad *c, const lt_node *n, lt_ival *data, lt_ival *idx, lt_ival *upd, const char *red)
{
    bool nd = n->op == LT_OP_SCATTER_ND;
    lt_ival *ins[3] = {data, idx, upd};
    lt_node *k = lt_ad_node_of(c, nd ? LT_OP_SCATTER_ND : LT_OP_SCATTER_ELEMENTS, 3, ins);
    if (!k)
        return NULL;
    if (!nd)
        lt_ad_attr_int(c, k, "axis", lt_attr_int(n, "axis", 0));
    if (strcmp(red, "none"))
        lt_ad_attr_str(c, k, "reduction", red);
    lt_ad_infer(c, k);
    return k->out[0];
}

/* its inverse read: the values of v at the updates' positions */
static lt_ival *gather_as(lt_ad *c, const lt_node *n, lt_ival *v, lt_ival *idx)
{
    bool nd = n->op == LT_OP_SCATTER_ND;
    lt_ival *ins[2] = {v, idx};
    lt_node *k = lt_ad_node_of(c, nd ? LT_OP_GATHER_ND : LT_OP_GATHER_ELEMENTS, 2, ins);
    if (!k)
        return NULL;
    if (!nd)
        lt_ad_attr_int(c, k, "axis", lt_attr_int(n, "axis", 0));
    lt_ad_infer(c, k);
    return k->out[0];
}

/* max / min: y[p] is data[p] or an update written at p, whichever wins;
 * each value equal to y[p] gets dy[p] over the number of such values */
static lt_status scatter_extreme(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *out,
                                 lt_ival *const *dout)
{
    lt_dtype dt = lt_ad_float_dtype(in[0]);
    lt_ival *xs = lt_ad_cast(c, OP2(EQUAL, in[0], out[0]), dt);
    lt_ival *us = lt_ad_cast(c, OP2(EQUAL, in[2], gather_as(c, n, out[0], in[1])), dt);
    lt_ival *share = OP2(DIV, G, scatter_as(c, n, xs, in[1], us, "add"));
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0))
        s = ACC(0, OP2(MUL, xs, share));
    if (s == LT_OK && lt_ad_wants(c, n, 2))
        s = ACC(2, OP2(MUL, us, gather_as(c, n, share, in[1])));
    return s;
}

/* mul: y[p] = data[p] prod u_i (i written at p). d data = dy prod u_i;
 * d u_i = dy data[p] prod_{j != i} u_j, taken as Q[p] / u_i over the
 * nonzero factors (Q the product with zero updates as 1) when no update
 * at p is zero, Q[p] for the one zero update when exactly one is, else 0 */
static lt_status scatter_mul(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *const *dout)
{
    lt_dtype dt = lt_ad_float_dtype(in[0]);
    lt_status s = LT_OK;
    if (lt_ad_wants(c, n, 0)) {
        lt_ival *ones = OP2(ADD, lt_ad_zeros_like(c, in[0]), K(1));
        s = ACC(0, OP2(MUL, G, scatter_as(c, n, ones, in[1], in[2], "mul")));
    }
    if (s != LT_OK || !lt_ad_wants(c, n, 2))
        return s;
    lt_ival *z = OP2(EQUAL, in[2], K(0));
    lt_ival *u1 = OP3(WHERE, z, K(1), in[2]);
    lt_ival *q = scatter_as(c, n, in[0], in[1], u1, "mul");
    lt_ival *zeros = scatter_as(c, n, lt_ad_zeros_like(c, in[0]), in[1], lt_ad_cast(c, z, dt), "add");
    lt_ival *gq = gather_as(c, n, OP2(MUL, G, q), in[1]), *zg = gather_as(c, n, zeros, in[1]);
    lt_ival *nonzero = OP2(DIV, lt_ad_cast(c, OP2(EQUAL, zg, K(0)), dt), u1);
    lt_ival *only_zero = lt_ad_cast(c, OP2(EQUAL, zg, K(1)), dt);
    return ACC(2, OP2(MUL, gq, OP3(WHERE, z, only_zero, nonzero)));
}

/* ScatterElements (and Scatter-9/11): (data, indices, updates) along axis */
RULE(r_scatter_elements)
{
    scatter_red red = RED_NONE;
    lt_status s = scatter_reduction(c, n, &red);
    if (s != LT_OK)
        return s;
    if (red == RED_EXTREME)
        return scatter_extreme(c, n, in, out, dout);
    if (red == RED_MUL)
        return scatter_mul(c, n, in, dout);
    if (lt_ad_wants(c, n, 0))
        s = ACC(0, red == RED_ADD ? G : scatter_as(c, n, G, in[1], lt_ad_zeros_like(c, in[2]), "none"));
    if (s == LT_OK && lt_ad_wants(c, n, 2))
        s = ACC(2, gather_as(c, n, G, in[1]));
    return s;
}

RULE(r_scatter_nd)
{
    return r_scatter_elements(c, n, in, out, dout);
}

/* DepthToSpace or SpaceToDepth of g with blocksize b, in mode CRD when crd
 * (else DCR, the default) */
static lt_ival *block_op(lt_ad *c, lt_op op, lt_ival *g, int64_t b, bool crd)
{
    lt_node *k = lt_ad_node_of(c, op, 1, &g);
    if (!k)
        return NULL;
    lt_ad_attr_int(c, k, "blocksize", b);
    if (crd)
        lt_ad_attr_str(c, k, "mode", "CRD");
    lt_ad_infer(c, k);
    return k->out[0];
}

RULE(r_depth_to_space)
{
    int64_t b = lt_attr_int(n, "blocksize", 0);
    if (strcmp(lt_attr_str(n, "mode", "DCR"), "CRD"))
        return ACC(0, block_op(c, LT_OP_SPACE_TO_DEPTH, G, b, false)); /* DCR: SpaceToDepth is its inverse */
    /* CRD: x[n, c b b + i b + j, h, w] = dy[n, c, h b + i, w b + j], so dy as
     * [N, C, H, b, W, b] -> [N, C, b, b, H, W] -> x's shape */
    lt_ival *sx = OP1(SHAPE, in[0]);
    int64_t two = 2, three = 3, keep[2] = {0, 0};
    lt_ival *parts[5] = {lt_ad_ints(c, 2, keep), OP2(GATHER, sx, lt_ad_ints(c, 1, &two)), lt_ad_ints(c, 1, &b),
                         OP2(GATHER, sx, lt_ad_ints(c, 1, &three)), lt_ad_ints(c, 1, &b)};
    lt_node *cat = lt_ad_node_of(c, LT_OP_CONCAT, 5, parts);
    if (!cat)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, cat, "axis", 0);
    lt_ad_infer(c, cat);
    lt_ival *g6 = OP2(RESHAPE, G, cat->out[0]);
    lt_node *t = lt_ad_node_of(c, LT_OP_TRANSPOSE, 1, &g6);
    if (!t)
        return LT_ERR_NOMEM;
    lt_ad_attr_ints(c, t, "perm", 6, (int64_t[]){0, 1, 3, 5, 2, 4});
    lt_ad_infer(c, t);
    return ACC(0, OP2(RESHAPE, t->out[0], sx));
}

/* y[n, (i b + j) C + c, h, w] (DCR) or y[n, c b b + i b + j, h, w] (CRD) is
 * x[n, c, h b + i, w b + j]: DepthToSpace in the same mode undoes it */
RULE(r_space_to_depth)
{
    bool crd = !strcmp(lt_attr_str(n, "mode", "DCR"), "CRD");
    return ACC(0, block_op(c, LT_OP_DEPTH_TO_SPACE, G, lt_attr_int(n, "blocksize", 0), crd));
}

/* Upsample is Resize-10 (legacy asymmetric coordinates): ResizeGrad with
 * its attributes and scales, run by the legacy rules */
RULE(r_upsample)
{
    lt_ival *ins[3] = {G, in[0], n->nin > 1 ? in[1] : NULL};
    int nin = ins[2] ? 3 : 2;
    lt_node *k = lt_ad_node_of(c, LT_OP_RESIZE_GRAD, nin, ins);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_copy_attrs(c, k, n);
    if (k->opset > 9)
        k->opset = 9;
    lt_ad_infer(c, k);
    return ACC(0, k->out[0]);
}

/* ReverseSequence and Trilu are their own adjoints: the same op on dy */
RULE(r_self_adjoint)
{
    lt_ival *ins[2] = {G, n->nin > 1 ? in[1] : NULL};
    int nin = ins[1] ? 2 : 1;
    lt_node *k = lt_ad_node_of(c, n->op, nin, ins);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_copy_attrs(c, k, n);
    lt_ad_infer(c, k);
    return ACC(0, k->out[0]);
}

/* Cropping and padding about the centre put the odd element at the same
 * end, so dy cropped/padded back to x's shape is the gradient. */
RULE(r_center_crop_pad)
{
    lt_ival *ins[2] = {G, OP1(SHAPE, in[0])};
    lt_node *k = lt_ad_node_of(c, LT_OP_CENTER_CROP_PAD, 2, ins);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_infer(c, k);
    return ACC(0, k->out[0]);
}

/* Compress keeps the slices where the condition holds: dy goes back to
 * their indices, as Gather's gradient does (along axis, or over x
 * flattened when there is none) */
RULE(r_compress)
{
    int64_t flat = -1;
    lt_ival *idx = OP2(RESHAPE, OP1(NON_ZERO, in[1]), lt_ad_ints(c, 1, &flat));
    const lt_attr *axis = lt_attr_find(n, "axis");
    lt_ival *data = axis ? in[0] : OP2(RESHAPE, in[0], lt_ad_ints(c, 1, &flat));
    lt_ival *ins[3] = {G, idx, data};
    lt_node *k = lt_ad_node_of(c, LT_OP_GATHER_GRAD, 3, ins);
    if (!k)
        return LT_ERR_NOMEM;
    lt_ad_attr_int(c, k, "axis", axis ? axis->i : 0);
    lt_ad_infer(c, k);
    return ACC(0, axis ? k->out[0] : OP2(RESHAPE, k->out[0], OP1(SHAPE, in[0])));
}

void lt_ad_register_movement(lt_ad_rule *t, uint32_t *nd)
{
    t[LT_OP_TILE] = r_tile;
    t[LT_OP_CUM_SUM] = r_cumsum;
    t[LT_OP_TOP_K] = r_topk;
    t[LT_OP_SCATTER] = r_scatter_elements;
    t[LT_OP_SCATTER_ELEMENTS] = r_scatter_elements;
    t[LT_OP_SCATTER_ND] = r_scatter_nd;
    t[LT_OP_DEPTH_TO_SPACE] = r_depth_to_space;
    t[LT_OP_SPACE_TO_DEPTH] = r_space_to_depth;
    t[LT_OP_UPSAMPLE] = r_upsample;
    t[LT_OP_REVERSE_SEQUENCE] = r_self_adjoint;
    t[LT_OP_TRILU] = r_self_adjoint;
    t[LT_OP_CENTER_CROP_PAD] = r_center_crop_pad;
    t[LT_OP_COMPRESS] = r_compress;
    nd[LT_OP_TILE] = ~1u;
    nd[LT_OP_CUM_SUM] = 1u << 1;
    nd[LT_OP_TOP_K] = 1u << 1;
    nd[LT_OP_SCATTER] = 1u << 1;
    nd[LT_OP_SCATTER_ELEMENTS] = 1u << 1;
    nd[LT_OP_SCATTER_ND] = 1u << 1;
    nd[LT_OP_UPSAMPLE] = ~1u;
    nd[LT_OP_REVERSE_SEQUENCE] = 1u << 1;
    nd[LT_OP_TRILU] = 1u << 1;
    nd[LT_OP_CENTER_CROP_PAD] = 1u << 1;
    nd[LT_OP_COMPRESS] = 1u << 1;
}
