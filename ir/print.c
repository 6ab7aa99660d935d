/* The IR's text form, in A-normal form like the listings in the paper:
 *   %y: float32[N,10] = Gemm(%x, %w, %b) {transB=1}
 * Regions print as indented blocks with their parameters and results. */
#include "ir.h"

static void val(const lt_ival *v, FILE *f)
{
    if (!v)
        fprintf(f, "_");
    else {
        fputc('%', f);
        lt_fputs_printable(*v->name ? v->name : "?", f);
    }
}

/* a string from the model between quotes */
static void quoted(const char *s, FILE *f)
{
    fputc('"', f);
    lt_fputs_printable(s, f);
    fputc('"', f);
}

static void attr(const lt_module *m, const lt_attr *a, FILE *f)
{
    lt_fputs_printable(a->name, f);
    fputc('=', f);
    switch (a->kind) {
    case LT_ATTR_FLOAT: fprintf(f, "%g", a->f); break;
    case LT_ATTR_INT: fprintf(f, "%lld", (long long)a->i); break;
    case LT_ATTR_STRING: quoted(a->s, f); break;
    case LT_ATTR_INTS:
        fputc('[', f);
        for (int i = 0; i < a->n; i++)
            fprintf(f, i ? ",%lld" : "%lld", (long long)a->ints[i]);
        fputc(']', f);
        break;
    case LT_ATTR_FLOATS:
        fputc('[', f);
        for (int i = 0; i < a->n; i++)
            fprintf(f, i ? ",%g" : "%g", a->floats[i]);
        fputc(']', f);
        break;
    case LT_ATTR_STRINGS:
        fputc('[', f);
        for (int i = 0; i < a->n; i++) {
            if (i)
                fputc(',', f);
            quoted(a->strings[i], f);
        }
        fputc(']', f);
        break;
    case LT_ATTR_TENSOR: {
        lt_type t;
        lt_type_tensor(&t, a->t->dtype, a->t->rank, a->t->dims);
        fprintf(f, "tensor<");
        lt_type_print(m, &t, f);
        fputc('>', f);
        break;
    }
    case LT_ATTR_GRAPH: fprintf(f, "region%d", a->region); break;
    default: fprintf(f, "?"); break;
    }
}

static void block(const lt_module *m, const lt_block *b, int ind, FILE *f)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        fprintf(f, "%*s", ind, "");
        int nouts = 0;
        for (int j = 0; j < n->nout; j++) {
            if (!n->out[j])
                continue;
            fprintf(f, nouts++ ? ", " : "");
            val(n->out[j], f);
            fprintf(f, ": ");
            lt_type_print(m, &n->out[j]->type, f);
        }
        if (n->op == LT_OP_CALL && lt_attr_int(n, "callee", -1) >= 0 && lt_attr_int(n, "callee", -1) < m->nfuncs) {
            fprintf(f, "%sCall @", nouts ? " = " : "");
            lt_fputs_printable(m->funcs[lt_attr_int(n, "callee", 0)]->name, f);
            fputc('(', f);
        } else
            fprintf(f, "%s%s(", nouts ? " = " : "", lt_op_names[n->op]);
        for (int j = 0; j < n->nin; j++) {
            if (j)
                fprintf(f, ", ");
            val(n->in[j], f);
        }
        fputc(')', f);
        int shown = 0;
        for (int a = 0; a < n->nattr; a++) {
            if (n->attrs[a].kind == LT_ATTR_GRAPH)
                continue;
            fprintf(f, shown++ ? ", " : " {");
            attr(m, &n->attrs[a], f);
        }
        if (shown)
            fputc('}', f);
        for (int r = 0; r < n->nregions; r++) {
            const lt_block *rb = n->regions[r];
            fputc(' ', f);
            lt_fputs_printable(rb->name ? rb->name : "region", f);
            fputc('(', f);
            for (int p = 0; p < rb->nparams; p++) {
                if (p)
                    fprintf(f, ", ");
                val(rb->params[p], f);
                fprintf(f, ": ");
                lt_type_print(m, &rb->params[p]->type, f);
            }
            fprintf(f, ") {\n");
            block(m, rb, ind + 2, f);
            fprintf(f, "%*s}", ind, "");
        }
        fputc('\n', f);
    }
    fprintf(f, "%*sreturn ", ind, "");
    for (int j = 0; j < b->nresults; j++) {
        if (j)
            fprintf(f, ", ");
        val(b->results[j], f);
    }
    fputc('\n', f);
}

void lt_ir_print(const lt_module *m, FILE *f)
{
    fprintf(f, "module ");
    quoted(m->graph_name ? m->graph_name : "", f);
    fprintf(f, " (ir %lld", (long long)m->ir_version);
    for (int i = 0; i < m->nopsets; i++) {
        fprintf(f, ", ");
        lt_fputs_printable(*m->opsets[i].domain ? m->opsets[i].domain : "ai.onnx", f);
        fprintf(f, ":%lld", (long long)m->opsets[i].version);
    }
    fprintf(f, ")\n");
    for (int i = 0; i < m->nparams; i++) {
        fprintf(f, "param ");
        val(m->params[i].value, f);
        fprintf(f, ": ");
        lt_type_print(m, &m->params[i].value->type, f);
        fprintf(f, "%s\n", m->params[i].is_input_default ? " (input default)" : "");
    }
    for (int i = 0; i < m->nfuncs; i++) {
        const lt_block *b = m->funcs[i]->body;
        fprintf(f, "func @");
        lt_fputs_printable(m->funcs[i]->name, f);
        fputc('(', f);
        for (int p = 0; p < b->nparams; p++) {
            if (p)
                fprintf(f, ", ");
            val(b->params[p], f);
            fprintf(f, ": ");
            lt_type_print(m, &b->params[p]->type, f);
        }
        fprintf(f, ") {\n");
        block(m, b, 2, f);
        fprintf(f, "}\n");
    }
    fprintf(f, "func main(");
    for (int p = 0; p < m->main->nparams; p++) {
        if (p)
            fprintf(f, ", ");
        val(m->main->params[p], f);
        fprintf(f, ": ");
        lt_type_print(m, &m->main->params[p]->type, f);
    }
    fprintf(f, ") {\n");
    block(m, m->main, 2, f);
    fprintf(f, "}\n");
}

void lt_model_print(const lt_model *m, FILE *f) { lt_ir_print(m, f); }
