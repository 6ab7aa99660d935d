/* Exporters merge initializers whose values are equal: torch's keeps one
 * and gives every other name an Identity of it, so in a freshly initialised
 * network all BatchNormalization scales (ones) are one initializer, and so
 * are the running variances (ones too). The values are equal only by
 * chance of initialisation; the source model had separate tensors (a tie it
 * meant is written as one initializer read by both nodes, with no Identity).
 * Trained as found, every merged scale would get one shared update and the
 * running statistics would be trained as weights. So an Identity of an
 * initializer in the main graph becomes a parameter of its own with the
 * Identity output's name and a copy of the values; the exporter writes it
 * back as an initializer and drops the Identity. Where the file names the
 * module's tensors (torch's graph signature), only an Identity to one of
 * those names is such a copy; where it does not, an Identity to a name the
 * exporter made up (onnx::MatMul_937) is not. */
#include "torch_names.h"
#include <stdlib.h>
#include <string.h>

/* A name torch's TorchScript exporter makes up for a value ("onnx::MatMul_937",
 * "/layer.1/Identity_output_0", "937"), not one of the module's tensors */
static bool made_up_name(const char *s)
{
    if (!strncmp(s, "onnx::", 6) || s[0] == '/')
        return true;
    while (*s >= '0' && *s <= '9')
        s++;
    return !*s;
}

static bool untie_candidate(const lt_module *m, const lt_node *n)
{
    if (n->op != LT_OP_IDENTITY || n->nin != 1 || n->nout != 1 || !n->in[0] || !n->out[0] || n->nregions)
        return false;
    const lt_ival *src = n->in[0];
    if (src->param < 0 || src->block != m->main || !n->out[0]->name || !*n->out[0]->name)
        return false;
    const lt_param *p = &m->params[src->param];
    /* where torch's graph signature names the module's tensors, an
     * Identity of one to a name it does not hold is the module's own copy
     * (x.clone(), as Swin V2 takes of its qkv bias): the gradient goes
     * through it to the tensor, which is trained under its name */
    if (m->ntorch && !lt_torch_named(m, n->out[0]->name))
        return false;
    /* without one, an Identity to a name the exporter made up is one
     * tensor read twice (a weight's folded transpose that two layers share,
     * as DeBERTa's relative embeddings): its gradient sums both reads. Not
     * where every entry holds one value: folded copies of two freshly
     * zeroed weights (LoRA's B matrices) are equal by initialisation */
    if (!m->ntorch && made_up_name(n->out[0]->name) && !lt_ir_one_value(&p->data))
        return false;
    return !p->is_input_default && p->data.dtype != LT_STRING;
}

lt_status lt_ir_untie_identity_params(lt_module *m, lt_err *err)
{
    lt_block *b = m->main;
    int w = 0;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        if (!untie_candidate(m, n)) {
            n->index = w;
            b->nodes[w++] = n;
            continue;
        }
        int src = n->in[0]->param;
        int p = lt_module_copy_param(m, src, n->out[0]->name, n->out[0]);
        if (p < 0)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        m->params[p].untied_from = m->params[src].name;
        n->in[0]->uses--;
    }
    b->nnodes = w;
    return LT_OK;
}
