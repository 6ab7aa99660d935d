/* ONNX ModelProto to IR. Graphs become blocks, If/Loop/Scan bodies become
 * regions whose names resolve by lexical scope, model-local functions are
 * inlined, initializers (in any graph) become module parameters. Every name,
 * count and size from the file is validated before use; nodes are put in
 * dependency order (a cycle is an error naming its nodes). */
#include "import_impl.h"
#include "../ir/infer.h"
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

lt_status lt_imp_node_err(imp *im, const Onnx__NodeProto *np, lt_status st, const char *fmt, const char *detail)
{
    char msg[512];
    snprintf(msg, sizeof msg, fmt, detail ? detail : "");
    return lt_errf(im->err, st, "%s: node '%s' (%s): %s", im->path, str_or(np->name, "<unnamed>"),
                   str_or(np->op_type, "<no op_type>"), msg);
}

lt_status lt_imp_define_value(imp *im, scope *s, lt_block *b, const char *name, lt_ival *v,
                              const Onnx__NodeProto *np)
{
    if (lt_imp_map_get(&s->names, name))
        return np ? lt_imp_node_err(im, np, LT_ERR_INVALID, "output '%s' is defined twice in its graph", name)
                  : lt_errf(im->err, LT_ERR_INVALID, "%s: value '%s' is defined twice in graph '%s'", im->path, name,
                            str_or(b->name, "main"));
    return lt_imp_map_put(&s->names, name, v) ? LT_OK : lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
}

/* The newest opset of each standard domain lantern knows (onnx 1.23): a node
 * of a later opset may mean something else, so such a model is refused
 * rather than read by older rules. */
static int64_t newest_opset(const char *d)
{
    if (!*d || strcmp(d, "ai.onnx") == 0)
        return 28;
    if (strcmp(d, "ai.onnx.ml") == 0)
        return 5;
    if (strcmp(d, "ai.onnx.preview.training") == 0 || strcmp(d, "ai.onnx.preview") == 0)
        return 1;
    return -1; /* a custom domain: its version is the model's business */
}

lt_status lt_imp_opset_import(imp *im, opsets *ops, const Onnx__OperatorSetIdProto *o, const char *who)
{
    const char *d = o && o->domain ? o->domain : "";
    int64_t v = o && o->has_version ? o->version : 0;
    if (v < 1 || v > 1000)
        return lt_errf(im->err, LT_ERR_INVALID, "%s: %s's opset import for domain '%s' has version %lld", im->path,
                       who, *d ? d : "ai.onnx", (long long)v);
    int64_t newest = newest_opset(d);
    if (newest > 0 && v > newest)
        return lt_errf(im->err, LT_ERR_UNSUPPORTED,
                       "%s: %s imports %s opset %lld; lantern reads opsets up to %lld (onnx 1.23), and ops may "
                       "mean something else in a later one",
                       im->path, who, *d ? d : "ai.onnx", (long long)v, (long long)newest);
    if (!*d || strcmp(d, "ai.onnx") == 0)
        ops->onnx = v;
    else if (strcmp(d, "ai.onnx.preview.training") == 0)
        ops->training = v;
    else if (strcmp(d, "ai.onnx.preview") == 0)
        ops->preview = v;
    else if (strcmp(d, "ai.onnx.ml") == 0)
        ops->ml = v;
    return LT_OK;
}

static lt_status record_unsupported(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np,
                                    const char *domain)
{
    lt_module *m = im->m;
    if (m->nunsupported == m->cap_unsupported) {
        int nc = m->cap_unsupported ? m->cap_unsupported * 2 : 8;
        void *q = realloc(m->unsupported, sizeof *m->unsupported * nc);
        if (!q)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        m->unsupported = q;
        m->cap_unsupported = nc;
    }
    struct lt_unsupported *u = &m->unsupported[m->nunsupported++];
    u->op = lt_ir_strdup(m, np->op_type);
    u->domain = lt_ir_strdup(m, domain);
    u->node = lt_ir_strdup(m, str_or(np->name, "<unnamed>"));
    /* its outputs still need to resolve so the rest of the graph imports */
    for (size_t i = 0; i < np->n_output; i++) {
        if (!np->output[i] || !*np->output[i])
            continue;
        lt_ival *v = lt_ival_new(m, b, np->output[i]);
        if (!v)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        lt_status st = lt_imp_define_value(im, s, b, np->output[i], v, np);
        if (st != LT_OK)
            return st;
    }
    return LT_OK;
}

static const lt_block *graph_attr(const lt_node *n, const char *name)
{
    for (int i = 0; i < n->nattr; i++)
        if (n->attrs[i].kind == LT_ATTR_GRAPH && strcmp(n->attrs[i].name, name) == 0)
            return n->regions[n->attrs[i].region];
    return NULL;
}

/* If, Loop and Scan must carry exactly the graphs their op takes, with the
 * input and output counts the node implies: the verifier and the kernels
 * rely on both, and a mismatch is the file's fault, not a run-time one. */
static lt_status check_control(imp *im, const Onnx__NodeProto *np, const lt_node *n)
{
    static const char *const if_graphs[] = {"then_branch", "else_branch"}, *const body_graph[] = {"body"};
    const char *const *want = n->op == LT_OP_IF ? if_graphs : body_graph;
    int nwant = n->op == LT_OP_IF ? 2 : 1;
    char msg[256];
    if (n->op != LT_OP_IF && n->op != LT_OP_LOOP && n->op != LT_OP_SCAN)
        return LT_OK;
    for (int i = 0; i < n->nattr; i++) {
        if (n->attrs[i].kind != LT_ATTR_GRAPH)
            continue;
        bool known = false;
        for (int k = 0; k < nwant; k++)
            known = known || strcmp(n->attrs[i].name, want[k]) == 0;
        if (!known) {
            snprintf(msg, sizeof msg, "attribute '%s' is a graph, but %s takes only %s", n->attrs[i].name,
                     np->op_type, n->op == LT_OP_IF ? "then_branch and else_branch" : "body");
            return lt_imp_node_err(im, np, LT_ERR_INVALID, "%s", msg);
        }
    }
    for (int k = 0; k < nwant; k++)
        if (!graph_attr(n, want[k]))
            return lt_imp_node_err(im, np, LT_ERR_INVALID, "needs a graph attribute '%s'", want[k]);
    if (n->nregions != nwant)
        return lt_imp_node_err(im, np, LT_ERR_INVALID, "has a graph attribute twice%s", NULL);
    msg[0] = 0;
    if (n->op == LT_OP_IF) {
        for (int k = 0; k < 2 && !msg[0]; k++) {
            const lt_block *g = graph_attr(n, want[k]);
            if (g->nparams != 0)
                snprintf(msg, sizeof msg, "branch '%s' takes %d inputs, If branches take none", want[k], g->nparams);
            else if (g->nresults != n->nout)
                snprintf(msg, sizeof msg, "branch '%s' returns %d values, the node has %d outputs", want[k],
                         g->nresults, n->nout);
        }
    } else if (n->op == LT_OP_LOOP) {
        const lt_block *g = graph_attr(n, "body");
        int carried = n->nin - 2;
        if (carried < 0)
            snprintf(msg, sizeof msg, "has %d inputs, Loop needs at least M and cond (either may be empty)", n->nin);
        else if (g->nparams != carried + 2)
            snprintf(msg, sizeof msg, "the body takes %d inputs, but the node's %d loop-carried value(s) need %d",
                     g->nparams, carried, carried + 2);
        else if (g->nresults < carried + 1)
            snprintf(msg, sizeof msg,
                     "the body returns %d values, fewer than the %d its condition and loop-carried values need",
                     g->nresults, carried + 1);
        else if (n->nout != g->nresults - 1)
            snprintf(msg, sizeof msg, "the node has %d outputs, but its body returns %d after the condition",
                     n->nout, g->nresults - 1);
    } else {
        const lt_block *g = graph_attr(n, "body");
        int first = n->opset < 9 ? 1 : 0; /* Scan-8: input 0 is sequence_lens */
        int64_t nscan = lt_attr_int(n, "num_scan_inputs", -1);
        int64_t nstate = nscan >= 0 && nscan <= n->nin ? (int64_t)n->nin - first - nscan : -1;
        if (nscan < 0 || nstate < 0)
            snprintf(msg, sizeof msg, "num_scan_inputs %lld does not fit the node's %d inputs", (long long)nscan,
                     n->nin);
        else if (g->nparams != nstate + nscan)
            snprintf(msg, sizeof msg, "the body takes %d inputs, but the node's %lld state and %lld scan input(s) need %lld",
                     g->nparams, (long long)nstate, (long long)nscan, (long long)(nstate + nscan));
        else if (g->nresults < nstate)
            snprintf(msg, sizeof msg, "the body returns %d values, fewer than the node's %lld state values",
                     g->nresults, (long long)nstate);
        else if (n->nout != g->nresults)
            snprintf(msg, sizeof msg, "the node has %d outputs, its body returns %d", n->nout, g->nresults);
    }
    return msg[0] ? lt_imp_node_err(im, np, LT_ERR_INVALID, "%s", msg) : LT_OK;
}

/* The input and output counts the op's schema allows at this opset, and
 * the positions it requires filled (an empty name is a missing value). */
static lt_status check_arity(imp *im, const Onnx__NodeProto *np, int dom, int64_t version)
{
    const lt_op_arity *a = lt_op_arity_find(np->op_type, dom, version);
    if (!a)
        return LT_OK;
    char msg[160];
    msg[0] = 0;
    /* the inputs first, then the outputs: the count, then each required position */
    for (int io = 0; io < 2 && !msg[0]; io++) {
        size_t have = io ? np->n_output : np->n_input;
        char **names = io ? np->output : np->input;
        const char *what = io ? "output" : "input";
        int lo = io ? a->min_out : a->min_in, hi = io ? a->max_out : a->max_in;
        uint32_t req = io ? a->req_out : a->req_in;
        if (have > (size_t)hi || have < (size_t)lo) {
            char count[48];
            if (hi == lo)
                snprintf(count, sizeof count, "%d", lo);
            else if (hi == INT32_MAX)
                snprintf(count, sizeof count, "at least %d", lo);
            else
                snprintf(count, sizeof count, "%d to %d", lo, hi);
            snprintf(msg, sizeof msg, "takes %s %s%s at opset %lld; the node has %zu", count, what,
                     hi == 1 ? "" : "s", (long long)version, have);
        }
        for (int i = 0; i < 32 && !msg[0]; i++)
            if ((req >> i & 1) && ((size_t)i >= have || !names[i] || !*names[i]))
                snprintf(msg, sizeof msg, "%s %d is required and the node leaves it empty", what, i);
        /* a variadic parameter's values (Loop's and Scan's states, Concat's
         * parts) cannot be left out one by one */
        for (size_t i = io || a->variadic_in < 0 ? have : (size_t)a->variadic_in; i < have && !msg[0]; i++)
            if (!names[i] || !*names[i])
                snprintf(msg, sizeof msg, "input %zu is one of a variadic list and cannot be empty", i);
    }
    return msg[0] ? lt_imp_node_err(im, np, LT_ERR_INVALID, "%s", msg) : LT_OK;
}

lt_status lt_imp_node(imp *im, scope *s, lt_block *b, const Onnx__NodeProto *np, const opsets *ops,
                             const fnctx *fc)
{
    lt_module *m = im->m;
    if (!np->op_type || !*np->op_type)
        return lt_imp_node_err(im, np, LT_ERR_INVALID, "node has no op_type%s", NULL);
    const char *domain = np->domain ? np->domain : "";
    int dom;
    int64_t version;
    if (!*domain || strcmp(domain, "ai.onnx") == 0) {
        dom = LT_DOMAIN_ONNX;
        version = ops->onnx;
    } else if (strcmp(domain, "ai.onnx.preview.training") == 0) {
        dom = LT_DOMAIN_TRAINING;
        version = ops->training;
    } else if (strcmp(domain, "ai.onnx.preview") == 0 && lt_op_lookup(np->op_type, LT_DOMAIN_PREVIEW) != LT_OP_COUNT) {
        dom = LT_DOMAIN_PREVIEW;
        version = ops->preview;
    } else if (strcmp(domain, "ai.onnx.ml") == 0 && lt_op_lookup(np->op_type, LT_DOMAIN_ML) != LT_OP_COUNT) {
        dom = LT_DOMAIN_ML;
        version = ops->ml;
    } else {
        const Onnx__FunctionProto *f = lt_imp_find_function(im, domain, np);
        if (f)
            return lt_imp_inline_function(im, s, b, np, f, ops);
        return record_unsupported(im, s, b, np, domain);
    }
    if (version < 0)
        return lt_imp_node_err(im, np, LT_ERR_INVALID, "the model does not import an opset for domain '%s'",
                        *domain ? domain : "ai.onnx");
    lt_op op = lt_op_lookup(np->op_type, dom);
    if (op == LT_OP_COUNT) {
        const Onnx__FunctionProto *f = lt_imp_find_function(im, domain, np);
        if (f)
            return lt_imp_inline_function(im, s, b, np, f, ops);
        bool lowered = false;
        lt_status ls = dom == LT_DOMAIN_ONNX ? lt_imp_experimental(im, s, b, np, fc, &lowered) : LT_OK;
        if (ls != LT_OK || lowered)
            return ls;
        return record_unsupported(im, s, b, np, *domain ? domain : "ai.onnx");
    }
    if (np->n_input > 4096 || np->n_output > 4096 || np->n_attribute > 4096)
        return lt_imp_node_err(im, np, LT_ERR_INVALID, "implausible number of inputs, outputs or attributes%s", NULL);
    lt_status as = check_arity(im, np, dom, version);
    if (as != LT_OK)
        return as;
    lt_node *n = lt_node_new(m, b, op, (int)np->n_input, (int)np->n_output);
    if (!n)
        return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    n->opset = (int)version;
    char nm[512];
    snprintf(nm, sizeof nm, "%s%s", fc ? fc->prefix : "", str_or(np->name, ""));
    n->name = lt_ir_strdup(m, nm);
    n->domain_name = lt_ir_strdup(m, domain);
    lt_status ms = lt_imp_node_torch_meta(im, np, n);
    if (ms != LT_OK)
        return ms;
    for (size_t i = 0; i < np->n_input; i++) {
        if (!np->input[i] || !*np->input[i])
            continue;
        n->in[i] = lt_imp_scope_lookup(s, np->input[i]);
        if (!n->in[i])
            return lt_imp_node_err(im, np, LT_ERR_INVALID, "input '%s' is not defined", np->input[i]);
        n->in[i]->uses++;
    }
    /* attributes: a function body's references are resolved from the caller */
    int nattr = 0, nregions = 0;
    const Onnx__AttributeProto **aps = calloc(np->n_attribute + 1, sizeof *aps);
    if (!aps)
        return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < np->n_attribute; i++) {
        const Onnx__AttributeProto *ap = np->attribute[i];
        if (!ap)
            continue;
        if (ap->ref_attr_name && *ap->ref_attr_name) {
            ap = NULL;
            for (size_t j = 0; fc && j < fc->caller->n_attribute; j++)
                if (fc->caller->attribute[j] && fc->caller->attribute[j]->name &&
                    strcmp(fc->caller->attribute[j]->name, np->attribute[i]->ref_attr_name) == 0)
                    ap = fc->caller->attribute[j];
            if (!ap)
                continue; /* the caller did not set it: the op's default applies */
            /* keep the callee's attribute name */
            static Onnx__AttributeProto renamed;
            (void)renamed;
        }
        aps[nattr++] = ap;
        if (lt_imp_attr_kind(ap) == LT_ATTR_GRAPH)
            nregions++;
    }
    /* Concat before opset 4 may leave out its axis, which is then 1: it is
     * written out, so every kernel, rule and pass reads the one value */
    bool concat_axis = op == LT_OP_CONCAT && version < 4;
    for (int i = 0; i < nattr && concat_axis; i++)
        concat_axis = !(aps[i]->name && strcmp(aps[i]->name, "axis") == 0);
    lt_status st = lt_node_set_attrs(m, n, nattr + concat_axis);
    if (st == LT_OK && concat_axis)
        n->attrs[nattr] = (lt_attr){.name = "axis", .kind = LT_ATTR_INT, .i = 1};
    if (st == LT_OK)
        st = lt_node_set_regions(m, n, nregions);
    if (st != LT_OK)
        st = lt_errf(im->err, st, "out of memory");
    int region = 0;
    for (int i = 0; i < nattr && st == LT_OK; i++) {
        st = lt_imp_convert_attr(im, np, n, aps[i], &n->attrs[i], b, s, ops, &region);
        /* a referenced attribute takes the name the callee uses */
        if (st == LT_OK && aps[i] != np->attribute[i] && fc) {
            for (size_t j = 0; j < np->n_attribute; j++)
                if (np->attribute[j]->ref_attr_name && aps[i]->name &&
                    strcmp(np->attribute[j]->ref_attr_name, aps[i]->name) == 0)
                    n->attrs[i].name = lt_ir_strdup(m, np->attribute[j]->name);
        }
    }
    n->nregions = region;
    free(aps);
    if (st == LT_OK)
        st = check_control(im, np, n);
    if (st != LT_OK)
        return st;
    for (size_t i = 0; i < np->n_output; i++) {
        if (!np->output[i] || !*np->output[i])
            continue;
        char vn[512];
        snprintf(vn, sizeof vn, "%s%s", fc ? fc->prefix : "", np->output[i]);
        lt_ival *v = lt_ival_new(m, b, vn);
        if (!v)
            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        v->def = n;
        n->out[i] = v;
        st = lt_imp_define_value(im, s, b, np->output[i], v, np);
        if (st != LT_OK)
            return st;
    }
    return LT_OK;
}

static lt_status add_initializer(imp *im, scope *s, lt_block *b, const char *name, lt_tensor *t)
{
    lt_module *m = im->m;
    int p = lt_module_add_param(m, name);
    lt_ival *v = p >= 0 ? lt_ival_new(m, b, name) : NULL;
    if (!v) {
        free(t->data);
        return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    }
    m->params[p].data = *t;
    m->params[p].value = v;
    v->param = p;
    lt_type_tensor(&v->type, t->dtype, t->rank, t->dims);
    return lt_imp_define_value(im, s, b, name, v, NULL);
}

lt_status lt_imp_graph(imp *im, scope *outer, const Onnx__GraphProto *g, lt_block *b, bool is_main,
                              const opsets *ops)
{
    lt_module *m = im->m;
    scope s = {outer, {0}};
    lt_status st = LT_OK;
    int *order = NULL;
    char what[300];
    if (g->n_node > (1u << 24) || g->n_initializer > (1u << 24) || g->n_input > (1u << 20) ||
        g->n_output > (1u << 20))
        return lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s' is implausibly large", im->path,
                       str_or(g->name, "main"));
    b->name = lt_ir_strdup(m, str_or(g->name, b->name));

    /* initializers */
    for (size_t i = 0; i < g->n_initializer && st == LT_OK; i++) {
        const Onnx__TensorProto *tp = g->initializer[i];
        if (!tp || !tp->name || !*tp->name) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s': initializer %zu has no name", im->path,
                         str_or(g->name, "main"), i);
            break;
        }
        snprintf(what, sizeof what, "initializer '%s'", tp->name);
        lt_tp_ctx c = {im->path, m->base_dir, what};
        lt_tensor t;
        st = lt_tensor_from_proto(&c, tp, &t, im->err);
        if (st == LT_OK)
            st = add_initializer(im, &s, b, tp->name, &t);
    }
    for (size_t i = 0; i < g->n_sparse_initializer && st == LT_OK; i++) {
        const Onnx__SparseTensorProto *sp = g->sparse_initializer[i];
        const char *name = sp && sp->values ? sp->values->name : NULL;
        if (!name || !*name) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: sparse initializer %zu has no name", im->path, i);
            break;
        }
        snprintf(what, sizeof what, "sparse initializer '%s'", name);
        lt_tp_ctx c = {im->path, m->base_dir, what};
        lt_tensor t;
        st = lt_tensor_from_sparse(&c, sp, &t, im->err);
        if (st == LT_OK)
            st = add_initializer(im, &s, b, name, &t);
    }
    if (st != LT_OK)
        goto done;

    /* inputs; in the main graph an input may shadow an initializer (its default) */
    st = lt_block_set_params(m, b, (int)g->n_input);
    if (st != LT_OK)
        st = lt_errf(im->err, st, "out of memory");
    if (st == LT_OK && is_main) {
        m->input_default = lt_ir_alloc(m, sizeof(int) * (g->n_input + 1));
        if (!m->input_default)
            st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    }
    for (size_t i = 0; i < g->n_input && st == LT_OK; i++) {
        const Onnx__ValueInfoProto *vi = g->input[i];
        if (!vi || !vi->name || !*vi->name) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s': input %zu has no name", im->path,
                         str_or(g->name, "main"), i);
            break;
        }
        lt_ival *init = lt_imp_map_get(&s.names, vi->name);
        lt_ival *v = lt_ival_new(m, b, vi->name);
        if (!v) {
            st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
            break;
        }
        snprintf(what, sizeof what, "input '%s'", vi->name);
        st = lt_type_from_proto(m, vi->type, &v->type, what, im->err);
        if (st != LT_OK)
            break;
        if (init && init->param >= 0) {
            m->params[init->param].is_input_default = true;
            if (v->type.dtype == LT_UNDEFINED && v->type.rank < 0)
                v->type = init->type;
            lt_imp_map_put(&s.names, vi->name, v); /* the input shadows its initializer */
        } else {
            st = lt_imp_define_value(im, &s, b, vi->name, v, NULL);
        }
        b->params[i] = v;
        if (is_main)
            m->input_default[i] = init && init->param >= 0 ? init->param : -1;
    }
    if (st != LT_OK)
        goto done;

    /* nodes, in dependency order */
    order = malloc(sizeof *order * (g->n_node + 1));
    if (!order) {
        st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    st = lt_imp_order_nodes(im, g, order);
    for (size_t i = 0; i < g->n_node && st == LT_OK; i++)
        st = lt_imp_node(im, &s, b, g->node[order[i]], ops, NULL);
    if (st != LT_OK)
        goto done;

    /* declared types */
    for (size_t i = 0; i < g->n_value_info && st == LT_OK; i++) {
        const Onnx__ValueInfoProto *vi = g->value_info[i];
        if (!vi || !vi->name)
            continue;
        lt_ival *v = lt_imp_map_get(&s.names, vi->name);
        if (!v || v->def == NULL)
            continue;
        snprintf(what, sizeof what, "value_info '%s'", vi->name);
        lt_type t;
        st = lt_type_from_proto(m, vi->type, &t, what, im->err);
        if (st == LT_OK && v->type.rank < 0 && v->type.dtype == LT_UNDEFINED)
            v->type = t;
    }

    /* outputs */
    if (st == LT_OK && lt_block_set_results(m, b, (int)g->n_output) != LT_OK)
        st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < g->n_output && st == LT_OK; i++) {
        const Onnx__ValueInfoProto *vi = g->output[i];
        if (!vi || !vi->name || !*vi->name) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s': output %zu has no name", im->path,
                         str_or(g->name, "main"), i);
            break;
        }
        lt_ival *v = lt_imp_scope_lookup(&s, vi->name);
        if (!v) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s': output '%s' is never defined", im->path,
                         str_or(g->name, "main"), vi->name);
            break;
        }
        snprintf(what, sizeof what, "output '%s'", vi->name);
        lt_type t;
        st = lt_type_from_proto(m, vi->type, &t, what, im->err);
        if (st == LT_OK && v->def && v->type.rank < 0 && v->type.dtype == LT_UNDEFINED)
            v->type = t;
        b->results[i] = v;
        v->uses++;
    }
done:
    free(order);
    lt_imp_map_free(&s.names);
    return st;
}

static lt_status import_model(lt_module *m, const Onnx__ModelProto *mp, lt_err *err)
{
    imp im = {m, err, mp, m->path, {-1, -1, -1, -1}, 0, 0, NULL, 0};
    /* IR 11-14 add element types (refused per tensor until lantern holds
     * them), multi-device configurations (hints for a sharded run; a
     * one-device run may ignore them) and opaque types in every build
     * (refused where a value has one). */
    if (!mp->has_ir_version || mp->ir_version < 3 || mp->ir_version > 14)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: IR version %lld is outside the 3..14 lantern reads", m->path,
                       (long long)mp->ir_version);
    if (!mp->graph)
        return lt_errf(err, LT_ERR_INVALID, "%s: the model has no graph", m->path);
    m->ir_version = mp->ir_version;
    m->producer_name = lt_ir_strdup(m, mp->producer_name);
    m->producer_version = lt_ir_strdup(m, mp->producer_version);
    m->graph_name = lt_ir_strdup(m, mp->graph->name);
    for (size_t i = 0; i < mp->n_metadata_props; i++) {
        const Onnx__StringStringEntryProto *e = mp->metadata_props[i];
        if (!e || !e->key)
            continue;
        lt_status ms = lt_model_set_metadata(m, e->key, e->value ? e->value : "", err);
        if (ms != LT_OK)
            return ms;
    }
    if (mp->n_opset_import > 1024)
        return lt_errf(err, LT_ERR_INVALID, "%s: implausibly many opset imports", m->path);
    m->nopsets = (int)mp->n_opset_import;
    m->opsets = lt_ir_alloc(m, sizeof *m->opsets * (mp->n_opset_import + 1));
    if (!m->opsets)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < mp->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *o = mp->opset_import[i];
        const char *d = o && o->domain ? o->domain : "";
        int64_t v = o && o->has_version ? o->version : 0;
        lt_status os = lt_imp_opset_import(&im, &im.model_ops, o, "the model");
        if (os != LT_OK)
            return os;
        m->opsets[i].domain = lt_ir_strdup(m, d);
        m->opsets[i].version = v;
    }
    if (mp->ir_version == 3 && im.model_ops.onnx < 0 && mp->n_opset_import == 0)
        im.model_ops.onnx = 1;
    m->main = lt_block_new(m, NULL, "main");
    if (!m->main)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    im.fn_size = calloc(mp->n_functions + 1, sizeof *im.fn_size);
    if (!im.fn_size)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status st = lt_imp_graph(&im, NULL, mp->graph, m->main, true, &im.model_ops);
    free(im.fn_size);
    if (st == LT_OK)
        st = lt_imp_torch_signature(&im, mp->graph);
    if (st == LT_OK)
        st = lt_ir_untie_identity_params(m, err);
    int nsplit = 0;
    if (st == LT_OK)
        st = lt_ir_split_merged_params(m, &nsplit, err);
    if (st == LT_OK)
        st = lt_ir_restore_biases(m, &nsplit, err);
    int nunfolded = 0;
    if (st == LT_OK)
        st = lt_ir_unfold_batch_norms(m, &nunfolded, err);
    if (st == LT_OK) {
        lt_ir_freeze_buffers(m);
        lt_ir_tie_folded_copies(m);
        int ngathered, nunfolded_ops;
        st = lt_ir_ungather_tables(m, &ngathered, err);
        if (st == LT_OK)
            st = lt_ir_unfold_computed(m, &nunfolded_ops, err);
        int npadding;
        if (st == LT_OK)
            st = lt_ir_mark_embedding_padding(m, &npadding, err);
    }
    if (st != LT_OK)
        return st;
    if (m->nunsupported)
        return LT_OK; /* types of unknown ops cannot be inferred; report first */
    st = lt_infer_module(m, err);
    /* opset < 7 broadcasts in numpy's form, now that ranks are known */
    int nlegacy = 0;
    if (st == LT_OK)
        st = lt_ir_legacy_broadcast(m, &nlegacy, err);
    if (st == LT_OK && nlegacy)
        st = lt_infer_module(m, err);
    if (st == LT_OK)
        st = lt_ir_verify(m, err);
    return st;
}

/* Messages are printed as one line that starts with the file's name; names
 * taken from the file may hold line breaks or other control characters. */
static void tidy_message(lt_err *err, const char *path)
{
    size_t pl = strlen(path), ml = strnlen(err->msg, sizeof err->msg - 1);
    err->msg[ml] = 0;
    if (strncmp(err->msg, path, pl) != 0 && pl + 2 + ml < sizeof err->msg) {
        memmove(err->msg + pl + 2, err->msg, ml + 1);
        memcpy(err->msg, path, pl);
        memcpy(err->msg + pl, ": ", 2);
    }
    for (char *c = err->msg; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
}

static lt_status load_buffer(const void *data, size_t len, const char *name, const char *base_dir,
                             lt_model **out, lt_err *err)
{
    *out = NULL;
    lt_module *m = lt_module_new();
    if (!m)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    m->path = lt_ir_strdup(m, name ? name : "<buffer>");
    m->base_dir = base_dir ? lt_ir_strdup(m, base_dir) : NULL;
    if (len == 0) {
        lt_module_free(m);
        return lt_errf(err, LT_ERR_INVALID, "%s: the file is empty, not an ONNX model", name ? name : "<buffer>");
    }
    if (lt_imp_wire_depth(&onnx__model_proto__descriptor, data, (const uint8_t *)data + len, 0) > LT_MAX_PROTO_DEPTH) {
        lt_errf(err, LT_ERR_INVALID, "%s: protobuf messages are nested more than %d deep (subgraphs or types)",
                m->path, LT_MAX_PROTO_DEPTH);
        lt_module_free(m);
        return LT_ERR_INVALID;
    }
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, len, data);
    if (!mp) {
        lt_errf(err, LT_ERR_INVALID, "%s: not an ONNX model (the protobuf does not parse: truncated or corrupt)",
                m->path);
        lt_module_free(m);
        return LT_ERR_INVALID;
    }
    lt_status st = import_model(m, mp, err);
    onnx__model_proto__free_unpacked(mp, NULL);
    if (st != LT_OK) {
        lt_module_free(m);
        return st;
    }
    *out = m;
    return LT_OK;
}

lt_status lt_model_load_buffer(const void *data, size_t len, const char *name, const char *base_dir,
                               lt_model **out, lt_err *err)
{
    if (!out)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_load_buffer: out is NULL");
    *out = NULL;
    if (!data && len > 0)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_load_buffer: data is NULL with len %zu", len);
    lt_status st = load_buffer(data, len, name, base_dir, out, err);
    if (st != LT_OK)
        tidy_message(err, name ? name : "<buffer>");
    return st;
}

lt_status lt_model_load(const char *path, lt_model **out, lt_err *err)
{
    if (!path || !out)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_load: %s is NULL", !path ? "path" : "out");
    *out = NULL;
    uint8_t *data;
    size_t len;
    lt_status st = lt_read_file(path, LT_MAX_MODEL_BYTES, &data, &len, err);
    if (st != LT_OK)
        return st;
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    st = lt_model_load_buffer(data, len, path, dirname(dir), out, err);
    free(data);
    return st;
}

int lt_model_num_inputs(const lt_model *m) { return m ? m->main->nparams : 0; }
const char *lt_model_input_name(const lt_model *m, int i)
{
    return i >= 0 && i < lt_model_num_inputs(m) ? m->main->params[i]->name : NULL;
}
int lt_model_num_outputs(const lt_model *m) { return m ? m->main->nresults : 0; }
const char *lt_model_output_name(const lt_model *m, int i)
{
    return i >= 0 && i < lt_model_num_outputs(m) ? m->main->results[i]->name : NULL;
}
