/* Shape inference driver: walks blocks in order and applies each op's rule;
 * also the helpers rules share. */
#include "infer.h"
#include <stdarg.h>
#include <pthread.h>
#include <string.h>

lt_infer_fn lt_infer_rules[LT_OP_COUNT];

static void fill(void)
{
    lt_infer_register_elementwise(lt_infer_rules);
    lt_infer_register_reduce(lt_infer_rules);
    lt_infer_register_nn(lt_infer_rules);
    lt_infer_register_tensor(lt_infer_rules);
    lt_infer_register_linalg(lt_infer_rules);
    lt_infer_register_rnn(lt_infer_rules);
    lt_infer_register_control(lt_infer_rules);
    lt_infer_register_norm(lt_infer_rules);
    lt_infer_register_index(lt_infer_rules);
    lt_infer_register_image(lt_infer_rules);
    lt_infer_register_misc(lt_infer_rules);
    lt_infer_register_grad_nn(lt_infer_rules);
    lt_infer_register_grad_misc(lt_infer_rules);
    lt_infer_register_grad_rnn(lt_infer_rules);
    lt_infer_register_grad_sampling(lt_infer_rules);
    lt_infer_register_attention(lt_infer_rules);
    lt_infer_register_onnx26(lt_infer_rules);
}

void lt_infer_rules_init(void)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, fill);
}

const lt_tensor *lt_infer_const(lt_infer_ctx *c, const lt_ival *v)
{
    if (!v)
        return NULL;
    if (v->param >= 0)
        return c->m->params[v->param].is_input_default ? NULL : &c->m->params[v->param].data;
    if (v->def && v->def->op == LT_OP_CONSTANT && v->def->nattr > 0) {
        const lt_attr *a = lt_attr_find(v->def, "value");
        return a ? a->t : NULL;
    }
    return NULL;
}

lt_status lt_infer_fail(lt_infer_ctx *c, const lt_node *n, const char *fmt, ...)
{
    char msg[LT_ERR_MSG_MAX], lb[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return lt_errf(c->err, LT_ERR_INVALID, "%s: %s: %s", c->m->path, lt_node_label(n, lb, sizeof lb), msg);
}

bool lt_infer_broadcast(const lt_type *a_in, const lt_type *b_in, lt_type *out)
{
    /* out may alias a or b */
    lt_type ac = *a_in, bc = *b_in;
    const lt_type *a = &ac, *b = &bc;
    lt_dtype dt = a->dtype != LT_UNDEFINED ? a->dtype : b->dtype;
    if (a->rank < 0 || b->rank < 0) {
        lt_type_unknown(out, dt, -1);
        return true;
    }
    int r = a->rank > b->rank ? a->rank : b->rank;
    lt_type_unknown(out, dt, r);
    for (int i = 0; i < r; i++) {
        int ia = i - (r - a->rank), ib = i - (r - b->rank);
        lt_dim da = ia >= 0 ? a->dims[ia] : (lt_dim){1, -1};
        lt_dim db = ib >= 0 ? b->dims[ib] : (lt_dim){1, -1};
        if (da.sym < 0 && da.v == 1)
            out->dims[i] = db;
        else if (db.sym < 0 && db.v == 1)
            out->dims[i] = da;
        else if (da.sym >= 0 && db.sym == da.sym)
            out->dims[i] = da;
        else if (da.sym < 0 && db.sym < 0 && da.v >= 0 && db.v >= 0) {
            if (da.v != db.v)
                return false;
            out->dims[i] = da;
        } else if (da.sym < 0 && da.v > 1)
            out->dims[i] = da; /* the other is unknown or symbolic: it must be this or 1 */
        else if (db.sym < 0 && db.v > 1)
            out->dims[i] = db;
        else
            out->dims[i] = (lt_dim){-1, -1};
    }
    return true;
}

void lt_infer_same(lt_node *n, int i, int j)
{
    if (i < n->nout && n->out[i] && j < n->nin && n->in[j])
        n->out[i]->type = n->in[j]->type;
}

/* Types that the model itself declared (graph outputs, value_info) win over
 * nothing, but a rule's answer refines them; a rank the rule knows replaces
 * another declared one (torch's TorchScript exporter declares rank 3 for
 * what its own unbind loop makes of rank 2). */
static void merge(lt_type *declared, const lt_type *inferred)
{
    if (declared->dtype == LT_UNDEFINED && declared->rank < 0) {
        *declared = *inferred;
        return;
    }
    /* a file declares a sequence's element type only; the rules may know
     * the elements' shape (shape_control.c) */
    if (declared->kind == LT_KIND_SEQUENCE && inferred->kind == LT_KIND_SEQUENCE &&
        declared->inner == 0 && inferred->inner != 0 &&
        (declared->dtype == LT_UNDEFINED || declared->dtype == inferred->dtype)) {
        *declared = *inferred;
        return;
    }
    if (inferred->kind != LT_KIND_TENSOR || declared->kind != LT_KIND_TENSOR)
        return;
    if (declared->dtype == LT_UNDEFINED)
        declared->dtype = inferred->dtype;
    if (declared->rank < 0) {
        *declared = *inferred;
        if (declared->dtype == LT_UNDEFINED)
            declared->dtype = inferred->dtype;
        return;
    }
    if (inferred->rank >= 0 && declared->rank != inferred->rank) {
        lt_dtype dt = declared->dtype;
        *declared = *inferred;
        if (declared->dtype == LT_UNDEFINED)
            declared->dtype = dt;
        return;
    }
    if (declared->rank == inferred->rank)
        for (int d = 0; d < declared->rank; d++)
            if (declared->dims[d].sym < 0 && declared->dims[d].v < 0)
                declared->dims[d] = inferred->dims[d];
}

static lt_status infer_block(lt_infer_ctx *c, lt_block *b)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        lt_type saved[16];
        int ns = n->nout < 16 ? n->nout : 16;
        for (int j = 0; j < ns; j++)
            if (n->out[j]) {
                saved[j] = n->out[j]->type;
                lt_type_unknown(&n->out[j]->type, LT_UNDEFINED, -1);
            }
        /* regions first: their results feed the node's rule (If, Loop) */
        lt_infer_region_params(n);
        for (int r = 0; r < n->nregions; r++) {
            lt_status s = infer_block(c, n->regions[r]);
            if (s != LT_OK)
                return s;
        }
        if (lt_infer_rules[n->op]) {
            lt_status s = lt_infer_rules[n->op](c, n);
            if (s != LT_OK)
                return s;
        }
        for (int j = 0; j < ns; j++)
            if (n->out[j]) {
                lt_type inferred = n->out[j]->type;
                n->out[j]->type = saved[j];
                merge(&n->out[j]->type, &inferred);
            }
    }
    return LT_OK;
}

lt_status lt_infer_module(lt_module *m, lt_err *err)
{
    lt_infer_rules_init();
    lt_infer_ctx c = {m, err};
    for (int i = 0; i < m->nfuncs; i++) {
        lt_status s = infer_block(&c, m->funcs[i]->body);
        if (s != LT_OK)
            return s;
    }
    return infer_block(&c, m->main);
}
