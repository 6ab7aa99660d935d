/* `lantern import --json`: the summary of `lantern import` as one JSON
 * object, for scripts: model, producer, IR version, opsets, inputs and
 * outputs (type, element type, shape with symbolic dims by name), parameters
 * (tensors, values, bytes), the op histogram, control-flow nodes, and every
 * node lantern cannot run. */
#include "cli.h"
#include "json.h"
#include "ir/ir.h"
#include "runtime/runtime.h"

static const char *kind_name(const lt_type *t)
{
    switch ((lt_kind)t->kind) {
    case LT_KIND_TENSOR: return "tensor";
    case LT_KIND_SEQUENCE: return "sequence";
    case LT_KIND_OPTIONAL: return t->inner == LT_KIND_SEQUENCE ? "optional sequence" : "optional tensor";
    case LT_KIND_FUNCTION: return "function";
    case LT_KIND_CELL: return "cell";
    }
    return "?";
}

/* {"name", "type", "elem_type", "shape"}: shape null when the rank is not
 * known; each dim a number, a symbol's name, or null when unknown. */
static void value(lt_json *j, const lt_model *m, const lt_ival *v, int has_default)
{
    const lt_type *t = &v->type;
    lt_json_open(j, '{');
    lt_json_key(j, "name");
    lt_json_str(j, v->name ? v->name : "");
    lt_json_key(j, "type");
    lt_json_str(j, kind_name(t));
    lt_json_key(j, "elem_type");
    lt_json_str(j, lt_dtype_name(t->dtype));
    lt_json_key(j, "shape");
    int shaped = t->kind == LT_KIND_TENSOR || (t->kind == LT_KIND_OPTIONAL && t->inner == LT_KIND_TENSOR);
    if (!shaped || t->rank < 0) {
        lt_json_null(j);
    } else {
        lt_json_open(j, '[');
        for (int d = 0; d < t->rank; d++) {
            if (t->dims[d].sym >= 0 && t->dims[d].sym < m->nsyms)
                lt_json_str(j, m->syms[t->dims[d].sym]);
            else if (t->dims[d].v >= 0)
                lt_json_int(j, t->dims[d].v);
            else
                lt_json_null(j);
        }
        lt_json_close(j, ']');
    }
    if (has_default >= 0) {
        lt_json_key(j, "has_default");
        lt_json_bool(j, has_default);
    }
    lt_json_close(j, '}');
}

static void count_ops(const lt_block *b, int *hist)
{
    for (int i = 0; i < b->nnodes; i++) {
        hist[b->nodes[i]->op]++;
        for (int r = 0; r < b->nodes[i]->nregions; r++)
            count_ops(b->nodes[i]->regions[r], hist);
    }
}

static void control_flow(lt_json *j, const lt_block *b, int depth)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (!n->nregions)
            continue;
        lt_json_open(j, '{');
        lt_json_key(j, "node");
        lt_json_str(j, n->name ? n->name : "");
        lt_json_key(j, "op");
        lt_json_str(j, lt_op_names[n->op]);
        lt_json_key(j, "depth");
        lt_json_int(j, depth);
        lt_json_key(j, "regions");
        lt_json_open(j, '[');
        for (int r = 0; r < n->nregions; r++) {
            lt_json_open(j, '{');
            lt_json_key(j, "name");
            lt_json_str(j, n->regions[r]->name ? n->regions[r]->name : "body");
            lt_json_key(j, "nodes");
            lt_json_int(j, n->regions[r]->nnodes);
            lt_json_close(j, '}');
        }
        lt_json_close(j, ']');
        lt_json_close(j, '}');
        for (int r = 0; r < n->nregions; r++)
            control_flow(j, n->regions[r], depth + 1);
    }
}

static void unsupported(lt_json *j, const char *op, const char *domain, const char *node, const char *reason)
{
    lt_json_open(j, '{');
    lt_json_key(j, "op");
    lt_json_str(j, op);
    lt_json_key(j, "domain");
    lt_json_str(j, domain && *domain ? domain : "ai.onnx");
    lt_json_key(j, "node");
    lt_json_str(j, node ? node : "");
    lt_json_key(j, "reason");
    lt_json_str(j, reason);
    lt_json_close(j, '}');
}

static void missing_kernels(lt_json *j, const lt_block *b, int *count)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (!lt_cpu_kernels[n->op]) {
            unsupported(j, lt_op_names[n->op], n->domain_name, n->name, "no CPU kernel");
            (*count)++;
        }
        for (int r = 0; r < n->nregions; r++)
            missing_kernels(j, n->regions[r], count);
    }
}

int lt_cli_import_json(const lt_model *m, FILE *f)
{
    lt_json j;
    lt_json_init(&j, f);
    lt_json_open(&j, '{');
    lt_json_key(&j, "model");
    lt_json_str(&j, m->path);
    lt_json_key(&j, "producer");
    lt_json_open(&j, '{');
    lt_json_key(&j, "name");
    lt_json_str(&j, m->producer_name ? m->producer_name : "");
    lt_json_key(&j, "version");
    lt_json_str(&j, m->producer_version ? m->producer_version : "");
    lt_json_close(&j, '}');
    lt_json_key(&j, "ir_version");
    lt_json_int(&j, m->ir_version);
    lt_json_key(&j, "opsets");
    lt_json_open(&j, '[');
    for (int i = 0; i < m->nopsets; i++) {
        lt_json_open(&j, '{');
        lt_json_key(&j, "domain");
        lt_json_str(&j, *m->opsets[i].domain ? m->opsets[i].domain : "ai.onnx");
        lt_json_key(&j, "version");
        lt_json_int(&j, m->opsets[i].version);
        lt_json_close(&j, '}');
    }
    lt_json_close(&j, ']');
    lt_json_key(&j, "inputs");
    lt_json_open(&j, '[');
    for (int i = 0; m->main && i < m->main->nparams; i++)
        value(&j, m, m->main->params[i], m->input_default && m->input_default[i] >= 0);
    lt_json_close(&j, ']');
    lt_json_key(&j, "outputs");
    lt_json_open(&j, '[');
    for (int i = 0; m->main && i < m->main->nresults; i++)
        value(&j, m, m->main->results[i], -1);
    lt_json_close(&j, ']');
    int64_t count = 0, bytes = 0, split = 0;
    for (int i = 0; i < m->nparams; i++) {
        count += m->params[i].data.numel;
        bytes += m->params[i].data.numel * (int64_t)lt_dtype_size(m->params[i].data.dtype);
        split += m->params[i].split_from != NULL;
    }
    lt_json_key(&j, "parameters");
    lt_json_open(&j, '{');
    lt_json_key(&j, "tensors");
    lt_json_int(&j, m->nparams);
    lt_json_key(&j, "values");
    lt_json_int(&j, count);
    lt_json_key(&j, "bytes");
    lt_json_int(&j, bytes);
    lt_json_key(&j, "split_from_merged");
    lt_json_int(&j, split);
    lt_json_close(&j, '}');
    int hist[LT_OP_COUNT] = {0}, total = m->nunsupported;
    if (m->main)
        count_ops(m->main, hist);
    lt_json_key(&j, "ops");
    lt_json_open(&j, '{');
    for (int op = 0; op < LT_OP_COUNT; op++)
        if (hist[op]) {
            lt_json_key(&j, lt_op_names[op]);
            lt_json_int(&j, hist[op]);
            total += hist[op];
        }
    lt_json_close(&j, '}');
    lt_json_key(&j, "nodes");
    lt_json_int(&j, total);
    lt_json_key(&j, "control_flow");
    lt_json_open(&j, '[');
    if (m->main)
        control_flow(&j, m->main, 0);
    lt_json_close(&j, ']');
    lt_cpu_kernels_init();
    int bad = m->nunsupported;
    lt_json_key(&j, "unsupported");
    lt_json_open(&j, '[');
    for (int i = 0; i < m->nunsupported; i++)
        unsupported(&j, m->unsupported[i].op, m->unsupported[i].domain, m->unsupported[i].node,
                    "not an op lantern knows");
    if (m->main)
        missing_kernels(&j, m->main, &bad);
    lt_json_close(&j, ']');
    lt_json_close(&j, '}');
    return bad;
}
