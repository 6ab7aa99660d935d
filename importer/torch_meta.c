/* What torch's exporter records beside the graph (metadata_props of nodes,
 * NodeProto 9, and of the main graph, GraphProto 16, which the IR 8 schema
 * does not name): the module path each node came from, the torch.fx node
 * it was made from and the fx values that one read, the onnxscript
 * rewrite rule that made a node, and the graph signature of the exported
 * program, which names every parameter and buffer of the source module.
 * The IR keeps them so that what the exporter's optimizer merged or folded
 * can be told apart (ir/split_merged.c, ir/unmerge.c) or named to the
 * user. The optimizer also records, on the value_info of each initializer
 * its constant folding made (ValueInfoProto 4, metadata_props, which the
 * IR 8 schema does not name either), the values it folded it from
 * (ir/gathered_table.c reads them). */
#include "import_impl.h"
#include <string.h>

static bool span_is(const lt_imp_span *s, const char *lit)
{
    size_t n = strlen(lit);
    return s->len == n && memcmp(s->p, lit, n) == 0;
}

/* The next quoted element of a Python list literal of strings at *p, as
 * ['', 'h.0', 'h.0.ln', 'layer_norm'] is written: false at the end or on
 * anything else. Names hold no escapes; a backslash ends the parse. */
static bool next_element(const uint8_t **p, const uint8_t *end, lt_imp_span *el)
{
    const uint8_t *q = *p;
    while (q < end && (*q == '[' || *q == ',' || *q == ' '))
        q++;
    if (q >= end || (*q != '\'' && *q != '"'))
        return false;
    uint8_t quote = *q++;
    const uint8_t *s = q;
    while (q < end && *q != quote && *q != '\\')
        q++;
    if (q >= end || *q != quote)
        return false;
    el->p = s;
    el->len = (size_t)(q - s);
    *p = q + 1;
    return true;
}

/* name_scopes lists the module paths from the root ('') down, then the
 * graph node's own name: the module is the one before last. */
static const char *module_of(lt_module *m, const lt_imp_span *v)
{
    const uint8_t *p = v->p, *end = v->p + v->len;
    lt_imp_span el, prev = {NULL, 0}, last = {NULL, 0};
    int n = 0;
    while (next_element(&p, end, &el)) {
        prev = last;
        last = el;
        n++;
    }
    if (n < 2)
        return NULL;
    return lt_ir_strndup(m, (const char *)prev.p, prev.len);
}

/* "%layer_norm_1 : [num_users=1] = call_function[...](args = (%x, ...))":
 * the name after '%' up to " : ", and what follows the first " = ". Text of
 * another form is left out; false only when out of memory. */
static bool fx_node(lt_module *m, const lt_imp_span *v, lt_node *n)
{
    const uint8_t *p = v->p, *end = v->p + v->len;
    if (p >= end || *p != '%')
        return true;
    const uint8_t *s = ++p;
    while (p < end && *p != ' ')
        p++;
    if (p == s || end - p < 3 || memcmp(p, " : ", 3) != 0)
        return true;
    const uint8_t *call = p;
    while (call + 3 <= end && memcmp(call, " = ", 3) != 0)
        call++;
    if (call + 3 > end)
        return true;
    call += 3;
    n->fx_name = lt_ir_strndup(m, (const char *)s, (size_t)(p - s));
    n->fx_call = lt_ir_strndup(m, (const char *)call, (size_t)(end - call));
    return n->fx_name && n->fx_call;
}

lt_status lt_imp_node_torch_meta(imp *im, const Onnx__NodeProto *np, lt_node *n)
{
    for (unsigned i = 0; i < np->base.n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &np->base.unknown_fields[i];
        const uint8_t *p;
        size_t len;
        lt_imp_span key, value;
        if (u->tag != 9 || !lt_imp_unknown_payload(u, &p, &len) || !lt_imp_string_entry(p, len, &key, &value))
            continue;
        if (span_is(&key, "pkg.torch.onnx.name_scopes")) {
            n->scope = module_of(im->m, &value);
        } else if (span_is(&key, "pkg.torch.onnx.fx_node")) {
            if (!fx_node(im->m, &value, n))
                return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        } else if (span_is(&key, "pkg.onnxscript.rewriter.rule_name")) {
            n->rule = lt_ir_strndup(im->m, (const char *)value.p, value.len);
            if (!n->rule)
                return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        }
    }
    return LT_OK;
}

/* One "NAME: PARAMETER target='a.b'" or "NAME: BUFFER target='a.b' ..."
 * line of the signature's inputs: the target, else an empty span; *buffer
 * says which kind, *ph the NAME (the fx graph's placeholder for it). */
static lt_imp_span signature_target(const uint8_t *line, const uint8_t *end, bool *buffer, lt_imp_span *ph)
{
    static const char *const kinds[] = {": PARAMETER target='", ": BUFFER target='"};
    lt_imp_span t = {NULL, 0};
    for (int k = 0; k < 2; k++) {
        size_t kl = strlen(kinds[k]);
        for (const uint8_t *q = line; q + kl <= end; q++) {
            if (memcmp(q, kinds[k], kl) != 0)
                continue;
            const uint8_t *s = q + kl, *e = s;
            while (e < end && *e != '\'')
                e++;
            if (e < end && e > s) {
                t.p = s;
                t.len = (size_t)(e - s);
                *buffer = k == 1;
                ph->p = line;
                ph->len = (size_t)(q - line);
            }
            return t;
        }
    }
    return t;
}

/* pkg.onnxscript.optimizer.folded_from of the main graph's value_info,
 * kept on the initializer of that name (lt_param.folded_from). */
static lt_status folded_from(imp *im, const Onnx__GraphProto *g)
{
    lt_module *m = im->m;
    for (size_t i = 0; i < g->n_value_info; i++) {
        const Onnx__ValueInfoProto *vi = g->value_info[i];
        for (unsigned k = 0; vi && vi->name && k < vi->base.n_unknown_fields; k++) {
            const ProtobufCMessageUnknownField *u = &vi->base.unknown_fields[k];
            const uint8_t *p;
            size_t len;
            lt_imp_span key, value;
            if (u->tag != 4 || !lt_imp_unknown_payload(u, &p, &len) || !lt_imp_string_entry(p, len, &key, &value) ||
                !span_is(&key, "pkg.onnxscript.optimizer.folded_from"))
                continue;
            for (int q = 0; q < m->nparams; q++) {
                lt_param *pp = &m->params[q];
                if (!pp->name || strcmp(pp->name, vi->name) != 0 || !pp->value || pp->value->block != m->main)
                    continue;
                if (!(pp->folded_from = lt_ir_strndup(m, (const char *)value.p, value.len)))
                    return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
            }
        }
    }
    return LT_OK;
}

lt_status lt_imp_torch_signature(imp *im, const Onnx__GraphProto *g)
{
    lt_module *m = im->m;
    lt_status st = folded_from(im, g);
    if (st != LT_OK)
        return st;
    for (unsigned i = 0; i < g->base.n_unknown_fields; i++) {
        const ProtobufCMessageUnknownField *u = &g->base.unknown_fields[i];
        const uint8_t *p;
        size_t len;
        lt_imp_span key, value;
        if (u->tag != 16 || !lt_imp_unknown_payload(u, &p, &len) || !lt_imp_string_entry(p, len, &key, &value) ||
            !span_is(&key, "pkg.torch.export.ExportedProgram.graph_signature"))
            continue;
        /* twice over the text: count the names, then keep them */
        for (int pass = 0; pass < 2; pass++) {
            const uint8_t *q = value.p, *end = value.p + value.len;
            bool inputs = false;
            int n = 0;
            while (q < end) {
                const uint8_t *e = memchr(q, '\n', (size_t)(end - q));
                if (!e)
                    e = end;
                if (e - q >= 1 && q[0] == '#') {
                    inputs = e - q >= 8 && memcmp(q, "# inputs", 8) == 0;
                } else if (inputs) {
                    bool buffer = false;
                    lt_imp_span ph = {NULL, 0};
                    lt_imp_span t = signature_target(q, e, &buffer, &ph);
                    if (t.len && pass == 1) {
                        m->torch_buffer[n] = buffer;
                        if (!(m->torch_name[n] = lt_ir_strndup(m, (const char *)t.p, t.len)) ||
                            !(m->torch_placeholder[n] = lt_ir_strndup(m, (const char *)ph.p, ph.len)))
                            return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
                    }
                    n += t.len > 0;
                }
                q = e + (e < end);
            }
            if (pass == 0 && (!(m->torch_name = lt_ir_alloc(m, sizeof *m->torch_name * (size_t)(n + 1))) ||
                              !(m->torch_placeholder = lt_ir_alloc(m, sizeof *m->torch_placeholder * (size_t)(n + 1))) ||
                              !(m->torch_buffer = lt_ir_alloc(m, sizeof *m->torch_buffer * (size_t)(n + 1)))))
                return lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
            m->ntorch = n;
        }
    }
    return LT_OK;
}
