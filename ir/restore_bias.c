/* torch's dynamo exporter's optimizer drops the bias input of a Gemm or a
 * Conv that holds zeros (its rules RemoveOptionalBiasFromGemm, ...Conv,
 * ...ConvTranspose, named in the node's metadata). A freshly initialised
 * Hugging Face model starts every Linear bias at zero, as
 * nn.MultiheadAttention does its output projection's: the file then has no
 * tensor for them, and trained as found those layers would stay without a
 * bias while PyTorch trains it from zero.
 *
 * Where the graph signature names the dropped tensor (the bias the node's
 * torch.fx call read, else the node's module's "bias", or the one "bias"
 * below that module the file lacks: attention's out_proj.bias read by the
 * attention module's own product), the node
 * gets a parameter of that name holding zeros as its bias input again. A
 * bias folded into by a BatchNorm (FuseBatchNormInto...) is the
 * BatchNorm's, which the file cannot give back (the trainer's note says
 * so); a convolution made without a bias has none in the signature. The
 * exporter writes the parameter as an initializer and adds it to the
 * node's inputs (importer/export.c). A node inside a torch.cond,
 * while_loop or scan body (no module path; its fx call reads the body
 * graph's placeholders, the higher-order op's operands: %arg2_1 for
 * %p_step_bias) gets it as well, as a main-graph initializer the body
 * reads from the outer scope. */
#include "torch_names.h"
#include <stdlib.h>
#include <string.h>

/* The bias length a Gemm, Conv or ConvTranspose node would take, from its
 * weight parameter's shape; 0 when not known. */
static int64_t bias_len(const lt_module *m, const lt_node *n)
{
    const lt_ival *w = n->nin > 1 ? n->in[1] : NULL;
    if (!w || w->param < 0)
        return 0;
    const lt_tensor *t = &m->params[w->param].data;
    if (n->op == LT_OP_GEMM)
        return t->rank == 2 ? t->dims[lt_attr_int(n, "transB", 0) ? 0 : 1] : 0;
    if (t->rank < 3)
        return 0;
    return n->op == LT_OP_CONV ? t->dims[0] : t->dims[1] * lt_attr_int(n, "group", 1);
}

static lt_status restore(lt_module *m, lt_node *n, const char *name, int64_t len, lt_err *err)
{
    lt_dtype dt = m->params[n->in[1]->param].data.dtype; /* adding a parameter below moves them */
    size_t bytes = (size_t)len * lt_dtype_size(dt);
    void *zeros = calloc(1, bytes ? bytes : 1);
    lt_ival *v = zeros ? lt_ival_new(m, m->main, name) : NULL;
    int q = v ? lt_module_add_param(m, name) : -1;
    lt_ival **in = n->nin == 3 ? n->in : lt_ir_alloc(m, sizeof *in * 3);
    const char **nodes = lt_ir_alloc(m, sizeof *nodes);
    int *slots = lt_ir_alloc(m, sizeof *slots);
    if (q < 0 || !in || !nodes || !slots) {
        free(zeros);
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    lt_param *p = &m->params[q];
    p->data.dtype = dt;
    p->data.rank = 1;
    p->data.dims[0] = len;
    p->data.numel = len;
    p->data.data = zeros;
    p->value = v;
    p->restored = true;
    v->param = q;
    lt_type_tensor(&v->type, dt, 1, &len);
    if (in != n->in)
        memcpy(in, n->in, sizeof *in * 2);
    in[2] = v;
    v->uses++;
    n->in = in;
    n->nin = 3;
    nodes[0] = lt_torch_node_path(m, n); /* a body's node by its path */
    if (!nodes[0])
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    slots[0] = 2;
    p->nsplit = 1;
    p->split_node = nodes;
    p->split_slot = slots;
    return LT_OK;
}

static lt_status restore_in(lt_module *m, lt_block *b, int *nrestored, int depth, lt_err *err)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        for (int r = 0; r < n->nregions && depth < 64; r++) {
            lt_status st = n->regions[r] ? restore_in(m, n->regions[r], nrestored, depth + 1, err) : LT_OK;
            if (st != LT_OK)
                return st;
        }
        if ((n->op != LT_OP_GEMM && n->op != LT_OP_CONV && n->op != LT_OP_CONV_TRANSPOSE) ||
            !(n->nin == 2 || (n->nin == 3 && !n->in[2])) || !n->in[1] || n->in[1]->param < 0 || !n->name ||
            !n->rule || !strstr(n->rule, "RemoveOptionalBiasFrom") || strstr(n->rule, "FuseBatchNorm"))
            continue;
        int64_t len = bias_len(m, n);
        if (len < 1 || !lt_dtype_is_float(m->params[n->in[1]->param].data.dtype))
            continue;
        /* F.linear(x, self.qkv.weight, self.qkv.bias); in a control-flow
         * body F.linear(x, arg3_1, arg2_1), the higher-order op's operands */
        const char *name = lt_torch_node_leaf(m, n, "bias");
        if (!name && n->scope && !(name = lt_torch_join(m, n->scope, "bias")))
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        if (!name || !lt_torch_named(m, name) || lt_torch_is_param(m, name))
            name = n->scope ? lt_torch_missing_below(m, n->scope, "bias") : NULL;
        if (!name || lt_torch_name_taken(m, name))
            continue;
        lt_status st = restore(m, n, name, len, err);
        if (st != LT_OK)
            return st;
        ++*nrestored;
    }
    return LT_OK;
}

lt_status lt_ir_restore_biases(lt_module *m, int *nrestored, lt_err *err)
{
    *nrestored = 0;
    return m->ntorch ? restore_in(m, m->main, nrestored, 0, err) : LT_OK;
}
