/* ai.onnx.preview.training Gradient: the gradient of y (summed) with respect
 * to xs, through the same CPS transform as `lantern grad`. The part of the
 * enclosing block that computes y from xs is copied into a module of its
 * own, differentiated with respect to its inputs, and run on the node's
 * inputs. */
#include "../runtime.h"
#include <stdlib.h>
#include <string.h>

static void mark_needed(const lt_ival *v, const lt_node *stop, bool *needed, const bool *is_x)
{
    if (!v || is_x[v->id] || !v->def || v->def->block != stop->block || v->def->index >= stop->index ||
        needed[v->def->index])
        return;
    needed[v->def->index] = true;
    for (int j = 0; j < v->def->nin; j++)
        mark_needed(v->def->in[j], stop, needed, is_x);
}

static lt_status build_sub(lt_kctx *k, const char *yname, int nx, lt_module **out)
{
    const lt_node *n = k->node;
    const lt_block *b = n->block;
    lt_module *src = (lt_module *)lt_k_module(k);
    lt_status s = LT_OK;
    lt_ival *y = NULL;
    for (int i = 0; i < n->index && !y; i++)
        for (int j = 0; j < b->nodes[i]->nout; j++)
            if (b->nodes[i]->out[j] && !strcmp(b->nodes[i]->out[j]->name, yname))
                y = b->nodes[i]->out[j];
    for (int p = 0; p < b->nparams && !y; p++)
        if (!strcmp(b->params[p]->name, yname))
            y = b->params[p];
    if (!y)
        return lt_k_fail(k, LT_ERR_INVALID, "y names '%s', which is not computed before this node", yname);
    bool *is_x = calloc(src->nvalues + 1, sizeof *is_x), *needed = calloc(b->nnodes + 1, sizeof *needed);
    lt_ival **map = calloc(src->nvalues + 1, sizeof *map);
    lt_module *m = lt_module_new();
    if (!is_x || !needed || !map || !m) {
        s = lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    m->path = src->path;
    m->ir_version = src->ir_version;
    m->main = lt_block_new(m, NULL, "gradient");
    lt_block_set_params(m, m->main, nx);
    m->input_default = lt_ir_alloc(m, sizeof(int) * (nx + 1));
    for (int i = 0; i < nx; i++) {
        const lt_ival *x = n->in[i];
        if (!x) {
            s = lt_k_fail(k, LT_ERR_INVALID, "input %d is missing", i);
            goto done;
        }
        is_x[x->id] = true;
        lt_ival *p = lt_ival_new(m, m->main, x->name);
        p->type = x->type;
        m->main->params[i] = p;
        m->input_default[i] = -1;
        map[x->id] = p;
    }
    mark_needed(y, n, needed, is_x);
    for (int i = 0; i < n->index && s == LT_OK; i++) {
        if (!needed[i])
            continue;
        const lt_node *o = b->nodes[i];
        if (o->nregions) {
            s = lt_k_fail(k, LT_ERR_UNSUPPORTED, "y depends on control flow ('%s'), which Gradient cannot slice", o->name);
            break;
        }
        lt_node *c = lt_node_new(m, m->main, o->op, o->nin, o->nout);
        c->opset = o->opset;
        c->name = o->name;
        c->attrs = o->attrs; /* immutable, owned by the source module, which outlives this one */
        c->nattr = o->nattr;
        for (int j = 0; j < o->nin && s == LT_OK; j++) {
            const lt_ival *v = o->in[j];
            if (!v)
                continue;
            if (!map[v->id] && v->param >= 0) { /* a parameter: copied, differentiated too */
                int p = lt_module_add_param(m, v->name);
                lt_tensor *t = &m->params[p].data;
                *t = src->params[v->param].data;
                t->buf = NULL;
                t->data = malloc(lt_tensor_nbytes(t) ? lt_tensor_nbytes(t) : 1);
                if (t->data && lt_tensor_nbytes(t))
                    memcpy(t->data, src->params[v->param].data.data, lt_tensor_nbytes(t));
                lt_ival *pv = lt_ival_new(m, m->main, v->name);
                pv->param = p;
                pv->type = v->type;
                m->params[p].value = pv;
                map[v->id] = pv;
            }
            if (!map[v->id])
                s = lt_k_fail(k, LT_ERR_UNSUPPORTED, "y depends on '%s', which is neither in xs nor a parameter",
                              v->name);
            c->in[j] = map[v->id];
        }
        for (int j = 0; j < o->nout && s == LT_OK; j++) {
            if (!o->out[j])
                continue;
            c->out[j] = lt_ival_new(m, m->main, o->out[j]->name);
            c->out[j]->def = c;
            c->out[j]->type = o->out[j]->type;
            map[o->out[j]->id] = c->out[j];
        }
    }
    if (s == LT_OK && !map[y->id])
        s = lt_k_fail(k, LT_ERR_INVALID, "y does not depend on xs");
    if (s == LT_OK) {
        lt_block_set_results(m, m->main, 1);
        m->main->results[0] = map[y->id];
        lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 1};
        s = lt_model_grad(m, &o, k->err);
    }
done:
    free(is_x);
    free(needed);
    free(map);
    if (s != LT_OK) {
        lt_module_free(m);
        return s;
    }
    *out = m;
    return LT_OK;
}

static lt_status op_gradient(lt_kctx *k)
{
    const lt_attr *xs = lt_attr_find(k->node, "xs");
    const char *yname = lt_attr_str(k->node, "y", NULL);
    if (!xs || xs->kind != LT_ATTR_STRINGS || !yname)
        return lt_k_fail(k, LT_ERR_INVALID, "needs attributes xs (strings) and y (string)");
    int nx = xs->n;
    if (nx > k->nin || nx != k->nout)
        return lt_k_fail(k, LT_ERR_INVALID, "xs names %d values for %d inputs and %d outputs", nx, k->nin, k->nout);
    for (int i = 0; i < nx; i++)
        if (!k->node->in[i] || strcmp(k->node->in[i]->name, xs->strings[i]))
            return lt_k_fail(k, LT_ERR_INVALID, "input %d must be xs[%d] = '%s'", i, i, xs->strings[i]);
    lt_module *m = NULL;
    lt_status s = build_sub(k, yname, nx, &m);
    if (s != LT_OK)
        return s;
    lt_session *sess = NULL;
    const char **names = calloc(nx + 1, sizeof *names);
    int nout = lt_model_num_outputs(m);
    lt_value **outs = calloc(nout + 1, sizeof *outs);
    if (!names || !outs)
        s = lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nx && s == LT_OK; i++)
        names[i] = xs->strings[i];
    if (s == LT_OK)
        s = lt_session_new(m, &sess, k->err);
    if (s == LT_OK)
        s = lt_session_run(sess, nx, names, k->in, outs, k->err);
    for (int i = 0; i < nx && s == LT_OK; i++) {
        char want[512];
        snprintf(want, sizeof want, "%s_grad", xs->strings[i]);
        int r = 1;
        while (r < nout && strcmp(lt_model_output_name(m, r), want))
            r++;
        if (r == nout) {
            s = lt_k_fail(k, LT_ERR_RUNTIME, "no gradient for '%s' (not a float tensor?)", xs->strings[i]);
            break;
        }
        lt_k_out_value(k, i, outs[r]);
        outs[r] = NULL;
    }
    for (int i = 0; outs && i < nout; i++)
        lt_value_free(outs[i]);
    free(outs);
    free(names);
    lt_session_free(sess);
    lt_module_free(m);
    return s;
}

void lt_cpu_register_control_gradient(lt_kernel_fn *tab) { tab[LT_OP_GRADIENT] = op_gradient; }
