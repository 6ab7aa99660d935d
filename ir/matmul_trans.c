/* MatMulTrans nodes as the post-AD rewrites read and write them
 * (matmul_trans.h). */
#include "matmul_trans.h"

static bool float_operand(const lt_ival *v)
{
    return v && v->type.kind == LT_KIND_TENSOR && (v->type.dtype == LT_F32 || v->type.dtype == LT_F64) &&
           v->type.rank >= 2;
}

bool lt_ir_is_float_product(const lt_node *n)
{
    return (n->op == LT_OP_MAT_MUL || n->op == LT_OP_MAT_MUL_TRANS) && n->nin == 2 && n->nout == 1 && n->out[0] &&
           float_operand(n->in[0]) && float_operand(n->in[1]) && !n->nregions;
}

int64_t lt_ir_product_trans(const lt_node *n, const char *name)
{
    return n->op == LT_OP_MAT_MUL_TRANS ? lt_attr_int(n, name, 0) != 0 : 0;
}

float lt_ir_product_alpha(const lt_node *n)
{
    return n->op == LT_OP_MAT_MUL_TRANS ? lt_attr_float(n, "alpha", 1.0f) : 1.0f;
}

lt_status lt_ir_set_product(lt_module *m, lt_node *n, lt_ival *a, lt_ival *b, int64_t ta, int64_t tb, float alpha)
{
    int nattr = alpha == 1.0f ? 2 : 3;
    lt_attr *at = lt_ir_alloc(m, sizeof *at * (size_t)nattr);
    lt_ival **in = n->nin >= 2 ? n->in : lt_ir_alloc(m, sizeof *in * 2);
    if (!at || !in)
        return LT_ERR_NOMEM;
    at[0] = (lt_attr){.name = "transA", .kind = LT_ATTR_INT, .i = ta};
    at[1] = (lt_attr){.name = "transB", .kind = LT_ATTR_INT, .i = tb};
    if (nattr == 3)
        at[2] = (lt_attr){.name = "alpha", .kind = LT_ATTR_FLOAT, .f = alpha};
    n->op = LT_OP_MAT_MUL_TRANS;
    n->domain_name = "";
    n->in = in;
    n->nin = 2;
    n->in[0] = a;
    n->in[1] = b;
    n->nattr = nattr;
    n->attrs = at;
    return LT_OK;
}
