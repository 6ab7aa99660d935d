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
 * exporter made up (onnx::MatMul_937) is not, unless its reader's module
 * had its own tensors merged so too (module_merged). */
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

/* The module path of the first reader of v that TorchScript named by its
 * module ("/layers.1/linear1/MatMul" -> "layers.1.linear1"), in buf; false
 * where none is so named */
static bool reader_module(const lt_block *b, const lt_ival *v, char *buf, size_t len)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        bool reads = false;
        for (int j = 0; j < n->nin && !reads; j++)
            reads = n->in[j] == v;
        const char *last = reads && n->name && n->name[0] == '/' ? strrchr(n->name, '/') : NULL;
        if (!last || last == n->name || (size_t)(last - n->name) >= len)
            continue;
        size_t k = 0;
        for (const char *c = n->name + 1; c < last; c++)
            buf[k++] = *c == '/' ? '.' : *c;
        buf[k] = 0;
        return true;
    }
    return false;
}

/* Whether an Identity in b gives a module tensor under that module's path
 * (mod + ".bias") a copy of another: the exporter merged that module's
 * tensors with another's by value (a layer deep-copied from another, as
 * nn.TransformerEncoder makes its layers), so its folded weights' copies
 * are equal by chance too */
static bool module_merged(const lt_block *b, const char *mod)
{
    size_t ml = strlen(mod);
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        const char *o = n->op == LT_OP_IDENTITY && n->nin == 1 && n->nout == 1 && n->in[0] && n->in[0]->param >= 0 &&
                                n->out[0] && n->out[0]->name
                            ? n->out[0]->name
                            : NULL;
        if (o && !made_up_name(o) && !strncmp(o, mod, ml) && o[ml] == '.')
            return true;
    }
    return false;
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
    char mod[256];
    if (!m->ntorch && made_up_name(n->out[0]->name) && !lt_ir_one_value(&p->data) &&
        !(reader_module(m->main, n->out[0], mod, sizeof mod) && module_merged(m->main, mod)))
        return false;
    return !p->is_input_default && p->data.dtype != LT_STRING;
}

lt_status lt_ir_untie_identity_params(lt_module *m, lt_err *err)
{
    lt_block *b = m->main;
    /* decided on the graph as found: the walk below drops the Identities */
    bool *untie = calloc((size_t)b->nnodes + 1, sizeof *untie);
    if (!untie)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < b->nnodes; i++)
        untie[i] = untie_candidate(m, b->nodes[i]);
    int w = 0;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        if (!untie[i]) {
            n->index = w;
            b->nodes[w++] = n;
            continue;
        }
        int src = n->in[0]->param;
        int p = lt_module_copy_param(m, src, n->out[0]->name, n->out[0]);
        if (p < 0) {
            free(untie);
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        }
        m->params[p].untied_from = m->params[src].name;
        n->in[0]->uses--;
    }
    b->nnodes = w;
    free(untie);
    return LT_OK;
}
