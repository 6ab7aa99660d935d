/* Transposes of the last two axes folded into MatMulTrans (fold_transpose.h). */
#include "fold_transpose.h"
#include "matmul_trans.h"
#include <stdlib.h>
#include <string.h>

typedef struct fold {
    lt_module *m;
    int *uses;      /* per value id: node inputs (regions included) and block results reading it */
    int *unhooked;  /* per value id: a Transpose output this pass took a reader from */
    bool *dead;     /* per node index of the block being rewritten */
    int nfolded;
} fold;

static bool float_tensor(const lt_ival *v)
{
    return v && v->type.kind == LT_KIND_TENSOR && (v->type.dtype == LT_F32 || v->type.dtype == LT_F64) &&
           v->type.rank >= 2;
}

/* whether n is a Transpose of a float tensor of rank >= 2 that swaps only
 * its last two axes */
static bool swaps_last_two(const lt_node *n)
{
    if (n->op != LT_OP_TRANSPOSE || n->nin != 1 || n->nout != 1 || !n->out[0] || !float_tensor(n->in[0]) ||
        n->nregions)
        return false;
    int r = n->in[0]->type.rank, len = 0;
    const int64_t *perm = lt_attr_ints(n, "perm", &len);
    if (!perm)
        return r == 2; /* the default reverses the axes */
    if (len != r)
        return false;
    for (int i = 0; i < r - 2; i++)
        if (perm[i] != i)
            return false;
    return perm[r - 2] == r - 1 && perm[r - 1] == r - 2;
}

/* a float Gemm without C (the AD's weight gradients) */
static bool is_plain_gemm(const lt_node *n)
{
    return n->op == LT_OP_GEMM && (n->nin == 2 || (n->nin == 3 && !n->in[2])) && n->nout == 1 && n->out[0] &&
           float_tensor(n->in[0]) && float_tensor(n->in[1]) && n->in[0]->type.rank == 2 &&
           n->in[1]->type.rank == 2 && !n->nregions;
}

/* t, a Transpose of Gemm g's output: Gemm(B, A) {transA = !transB, transB
 * = !transA, alpha} in t's place, (alpha op(A) op(B))^T = alpha op(B)^T op(A)^T */
static lt_status swap_gemm(lt_module *m, lt_node *t, const lt_node *g)
{
    lt_attr *at = lt_ir_alloc(m, sizeof *at * 3);
    lt_ival **in = lt_ir_alloc(m, sizeof *in * 2);
    if (!at || !in)
        return LT_ERR_NOMEM;
    at[0] = (lt_attr){.name = "transA", .kind = LT_ATTR_INT, .i = lt_attr_int(g, "transB", 0) == 0};
    at[1] = (lt_attr){.name = "transB", .kind = LT_ATTR_INT, .i = lt_attr_int(g, "transA", 0) == 0};
    at[2] = (lt_attr){.name = "alpha", .kind = LT_ATTR_FLOAT, .f = lt_attr_float(g, "alpha", 1.0f)};
    in[0] = g->in[1];
    in[1] = g->in[0];
    t->op = LT_OP_GEMM;
    t->opset = g->opset;
    t->domain_name = g->domain_name;
    t->in = in;
    t->nin = 2;
    t->nattr = 3;
    t->attrs = at;
    return LT_OK;
}

static lt_status fold_block(lt_block *b, void *ctx)
{
    fold *f = ctx;
    lt_status s = LT_OK;
    bool *dead = f->dead;
    /* Transpose(MatMul(a, b)) read by nothing else: MatMulTrans(b, a) with
     * the flags swapped and flipped, at the Transpose's place */
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *t = b->nodes[i];
        if (!swaps_last_two(t))
            continue;
        lt_node *p = t->in[0]->def;
        if (p && p->block == b && !dead[p->index] && is_plain_gemm(p) && f->uses[p->out[0]->id] == 1) {
            s = swap_gemm(f->m, t, p);
            dead[p->index] = true;
            f->uses[p->out[0]->id] = 0;
            f->unhooked[p->out[0]->id] = true;
            f->nfolded++;
            continue;
        }
        if (!p || p->block != b || dead[p->index] || !lt_ir_is_float_product(p) || f->uses[p->out[0]->id] != 1 ||
            p->out[0]->type.rank < 2)
            continue;
        int64_t ta = lt_ir_product_trans(p, "transA"), tb = lt_ir_product_trans(p, "transB");
        lt_ival *a = p->in[0], *bb = p->in[1];
        s = lt_ir_set_product(f->m, t, bb, a, !tb, !ta, lt_ir_product_alpha(p));
        dead[p->index] = true;
        f->uses[p->out[0]->id] = 0;
        f->unhooked[p->out[0]->id] = true;
        f->nfolded++;
    }
    /* operands that are swapping Transposes: read their input, flip the flag */
    for (int i = 0; i < b->nnodes && s == LT_OK; i++) {
        lt_node *n = b->nodes[i];
        if (dead[i] || !lt_ir_is_float_product(n))
            continue;
        lt_ival *op[2] = {n->in[0], n->in[1]};
        int64_t tr[2] = {lt_ir_product_trans(n, "transA"), lt_ir_product_trans(n, "transB")};
        bool changed = false;
        for (int j = 0; j < 2; j++)
            for (;;) {
                lt_node *t = op[j]->def;
                if (!t || !swaps_last_two(t) || (t->block == b && dead[t->index]))
                    break;
                f->uses[op[j]->id]--;
                f->unhooked[op[j]->id] = true;
                op[j] = t->in[0];
                f->uses[op[j]->id]++;
                tr[j] = !tr[j];
                changed = true;
                f->nfolded++;
            }
        if (changed)
            s = lt_ir_set_product(f->m, n, op[0], op[1], tr[0], tr[1], lt_ir_product_alpha(n));
    }
    /* Transposes of this block that nothing reads any more; a removed one
     * may leave its own input's Transpose unread, so sweep back to front */
    for (int i = b->nnodes - 1; i >= 0 && s == LT_OK; i--) {
        lt_node *t = b->nodes[i];
        if (dead[i] || t->op != LT_OP_TRANSPOSE || t->nout != 1 || !t->out[0] || t->nin != 1 || !t->in[0] ||
            t->nregions || !f->unhooked[t->out[0]->id] || f->uses[t->out[0]->id] != 0)
            continue;
        dead[i] = true;
        f->uses[t->in[0]->id]--;
        f->unhooked[t->in[0]->id] = true;
    }
    return s;
}

lt_status lt_ir_fold_transpose(lt_module *m, int *nfolded, lt_err *err)
{
    fold f = {.m = m};
    lt_rewrite r = {.block = fold_block, .ctx = &f, .count = &f.nfolded, .uses = &f.uses, .dead = &f.dead,
                    .marks = &f.unhooked, .recount = LT_RECOUNT_ALWAYS,
                    .doing = "folding transposes into matrix products"};
    return lt_module_rewrite(m, &r, nfolded, err);
}
