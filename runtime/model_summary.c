/* `lantern import`'s report: producer, versions, opsets, inputs and outputs
 * with types, parameters, an op histogram, control flow with its nesting and
 * every op lantern cannot run. */
#include "../ir/ir.h"
#include "runtime.h"
#include <string.h>

static void count_ops(const lt_block *b, int *hist)
{
    for (int i = 0; i < b->nnodes; i++) {
        hist[b->nodes[i]->op]++;
        for (int r = 0; r < b->nodes[i]->nregions; r++)
            count_ops(b->nodes[i]->regions[r], hist);
    }
}

static void control_flow(const lt_block *b, int depth, FILE *f, int *any)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (!n->nregions)
            continue;
        *any = 1;
        char lb[256];
        fprintf(f, "  %*s", depth * 2, "");
        lt_fputs_printable(lt_node_label(n, lb, sizeof lb), f);
        for (int r = 0; r < n->nregions; r++) {
            fprintf(f, "%s", r ? ", " : " [");
            lt_fputs_printable(n->regions[r]->name ? n->regions[r]->name : "body", f);
            fprintf(f, ": %d nodes", n->regions[r]->nnodes);
        }
        fprintf(f, "]\n");
        for (int r = 0; r < n->nregions; r++)
            control_flow(n->regions[r], depth + 1, f, any);
    }
}

static void missing_kernels(const lt_block *b, FILE *f, int *count)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (!lt_cpu_kernels[n->op]) {
            char lb[256];
            fprintf(f, "  ");
            lt_fputs_printable(lt_node_label(n, lb, sizeof lb), f);
            fprintf(f, ": no CPU kernel\n");
            (*count)++;
        }
        for (int r = 0; r < n->nregions; r++)
            missing_kernels(n->regions[r], f, count);
    }
}

void lt_model_summary(const lt_model *m, FILE *f, int *n_unsupported)
{
    fprintf(f, "model:      ");
    lt_fputs_printable(m->path, f);
    fprintf(f, "\nproducer:   ");
    lt_fputs_printable(*m->producer_name ? m->producer_name : "(none)", f);
    fputc(' ', f);
    lt_fputs_printable(m->producer_version, f);
    fputc('\n', f);
    fprintf(f, "ir version: %lld\n", (long long)m->ir_version);
    fprintf(f, "opsets:    ");
    for (int i = 0; i < m->nopsets; i++) {
        fputc(' ', f);
        lt_fputs_printable(*m->opsets[i].domain ? m->opsets[i].domain : "ai.onnx", f);
        fprintf(f, ":%lld", (long long)m->opsets[i].version);
    }
    fprintf(f, "\ninputs:\n");
    for (int i = 0; i < m->main->nparams; i++) {
        fprintf(f, "  ");
        lt_fputs_printable(m->main->params[i]->name, f);
        fprintf(f, ": ");
        lt_type_print(m, &m->main->params[i]->type, f);
        if (m->input_default && m->input_default[i] >= 0)
            fprintf(f, " (defaults to its initializer)");
        fputc('\n', f);
    }
    fprintf(f, "outputs:\n");
    for (int i = 0; i < m->main->nresults; i++) {
        fprintf(f, "  ");
        lt_fputs_printable(m->main->results[i]->name, f);
        fprintf(f, ": ");
        lt_type_print(m, &m->main->results[i]->type, f);
        fputc('\n', f);
    }
    int64_t count = 0, bytes = 0;
    for (int i = 0; i < m->nparams; i++) {
        count += m->params[i].data.numel;
        bytes += (int64_t)m->params[i].data.numel * (int64_t)lt_dtype_size(m->params[i].data.dtype);
    }
    fprintf(f, "parameters: %d tensors, %lld values, %lld bytes\n", m->nparams, (long long)count,
            (long long)bytes);
    int split = 0;
    for (int p = 0; p < m->nparams; p++)
        split += m->params[p].split_from != NULL;
    if (split)
        fprintf(f, "  %d of them split from initializers the exporter merged for holding equal values\n", split);
    int hist[LT_OP_COUNT] = {0}, total = 0;
    count_ops(m->main, hist);
    fprintf(f, "ops:\n");
    for (int op = 0; op < LT_OP_COUNT; op++)
        if (hist[op]) {
            fprintf(f, "  %-28s %d\n", lt_op_names[op], hist[op]);
            total += hist[op];
        }
    fprintf(f, "  %-28s %d\n", "(total)", total + m->nunsupported);
    int any = 0;
    fprintf(f, "control flow:\n");
    control_flow(m->main, 0, f, &any);
    if (!any)
        fprintf(f, "  (none)\n");
    int bad = 0;
    lt_cpu_kernels_init();
    {
        fprintf(f, "unsupported:\n");
        for (int i = 0; i < m->nunsupported; i++) {
            fprintf(f, "  ");
            lt_fputs_printable(m->unsupported[i].op, f);
            fprintf(f, " (domain ");
            lt_fputs_printable(m->unsupported[i].domain, f);
            fprintf(f, ", node '");
            lt_fputs_printable(m->unsupported[i].node, f);
            fprintf(f, "'): not an op lantern knows\n");
        }
        bad = m->nunsupported;
        if (m->main)
            missing_kernels(m->main, f, &bad);
        if (!bad)
            fprintf(f, "  (none)\n");
    }
    if (n_unsupported)
        *n_unsupported = bad;
}
