/* Activity analysis: which values depend on a parameter and reach the
 * loss, so that only they get adjoints (a fixed point over the blocks,
 * regions included). */
#include "ad_impl.h"
#include <stdlib.h>
#include <string.h>

static bool is_float(lt_dtype t)
{
    return t == LT_F32 || t == LT_F64 || t == LT_F16 || t == LT_BF16;
}

bool lt_ad_mark(lt_ad *c, const lt_ival *v)
{
    if (!v || c->active[v->id] || v->id >= c->nsrc)
        return false;
    if (v->type.kind != LT_KIND_TENSOR || (v->type.dtype != LT_UNDEFINED && !is_float(v->type.dtype)))
        return false;
    c->active[v->id] = true;
    return true;
}

static bool any_active_in_block(lt_ad *c, const lt_block *b)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] && c->active[n->in[j]->id])
                return true;
        for (int r = 0; r < n->nregions; r++)
            if (any_active_in_block(c, n->regions[r]))
                return true;
    }
    for (int j = 0; j < b->nresults; j++)
        if (c->active[b->results[j]->id])
            return true;
    return false;
}

bool lt_ad_activity_pass(lt_ad *c, const lt_block *b)
{
    bool changed = false;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (n->op == LT_OP_LOOP && n->nregions == 1) {
            const lt_block *body = n->regions[0];
            int N = n->nin - 2;
            for (int j = 0; j < N; j++) {
                const lt_ival *vs[4] = {n->in[2 + j], body->params[2 + j], 1 + j < body->nresults ? body->results[1 + j] : NULL,
                                        j < n->nout ? n->out[j] : NULL};
                bool any = false;
                for (int q = 0; q < 4; q++)
                    any |= vs[q] && c->active[vs[q]->id];
                if (any)
                    for (int q = 0; q < 4; q++)
                        changed |= lt_ad_mark(c, vs[q]);
            }
        } else if (n->op == LT_OP_SCAN && n->nregions == 1 && n->opset >= 9) {
            const lt_block *body = n->regions[0];
            int S = (int)lt_attr_int(n, "num_scan_inputs", 0), N = n->nin - S;
            for (int j = 0; j < N; j++) {
                const lt_ival *vs[4] = {n->in[j], body->params[j], j < body->nresults ? body->results[j] : NULL,
                                        j < n->nout ? n->out[j] : NULL};
                bool any = false;
                for (int q = 0; q < 4; q++)
                    any |= vs[q] && c->active[vs[q]->id];
                if (any)
                    for (int q = 0; q < 4; q++)
                        changed |= lt_ad_mark(c, vs[q]);
            }
            for (int s = 0; s < S; s++)
                if (n->in[N + s] && c->active[n->in[N + s]->id])
                    changed |= lt_ad_mark(c, body->params[N + s]);
        }
        for (int r = 0; r < n->nregions; r++)
            changed |= lt_ad_activity_pass(c, n->regions[r]);
        bool in_active = false;
        for (int j = 0; j < n->nin; j++) {
            if (!n->in[j] || !c->active[n->in[j]->id])
                continue;
            if (c->diff_only && lt_ad_input_nondiff(n, j)) {
                if (!c->blocked) {
                    c->blocked = n;
                    c->blocked_in = j;
                }
                continue;
            }
            in_active = true;
        }
        const lt_node *split = lt_ad_seq_split(n), *fq = lt_ad_fake_quant(n);
        in_active |= split && c->active[split->in[0]->id];
        in_active |= fq && c->active[fq->in[0]->id];
        for (int r = 0; r < n->nregions && !in_active; r++)
            in_active = any_active_in_block(c, n->regions[r]);
        if (n->op == LT_OP_SCAN && n->opset < 9) {
            /* Scan-8 (a batch axis, sequence lengths) is not differentiated:
             * its outputs are active so that lt_ad_loop says so, where
             * leaving them inactive would give its inputs zero gradients */
            for (int k = 0; in_active && k < n->nout; k++)
                changed |= lt_ad_mark(c, n->out[k]);
            continue;
        }
        if (n->op == LT_OP_LOOP || n->op == LT_OP_SCAN) {
            /* scan outputs follow the body's per-iteration values */
            const lt_block *body = n->nregions ? n->regions[0] : NULL;
            int N = n->op == LT_OP_LOOP ? n->nin - 2 : n->nin - (int)lt_attr_int(n, "num_scan_inputs", 0);
            int first = n->op == LT_OP_LOOP ? 1 + N : N;
            for (int k = N; body && k < n->nout; k++)
                if (first + k - N < body->nresults && c->active[body->results[first + k - N]->id])
                    changed |= lt_ad_mark(c, n->out[k]);
            continue;
        }
        if (n->op == LT_OP_IF && n->nregions == 2) {
            for (int j = 0; j < n->nout; j++)
                for (int r = 0; r < 2; r++)
                    if (j < n->regions[r]->nresults && c->active[n->regions[r]->results[j]->id])
                        changed |= lt_ad_mark(c, n->out[j]);
            continue;
        }
        if (in_active)
            for (int j = 0; j < n->nout; j++)
                changed |= lt_ad_mark(c, n->out[j]);
    }
    return changed;
}

/* Flow the transform cannot follow: an active value that enters a sequence
 * or optional (other than through SplitToSequence read by SequenceAt,
 * rules_sequence.c) has no adjoint there; what is computed from it
 * downstream is marked, so that a loss so marked is refused rather than
 * given gradients that silently miss that path. */
bool lt_ad_taint_pass(lt_ad *c, const lt_block *b, bool *taint, const lt_node **why)
{
    bool changed = false;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        bool active_in = false, tainted_in = false;
        for (int r = 0; r < n->nregions; r++) {
            changed |= lt_ad_taint_pass(c, n->regions[r], taint, why);
            for (int j = 0; j < n->regions[r]->nresults; j++)
                tainted_in |= n->regions[r]->results[j] && taint[n->regions[r]->results[j]->id];
        }
        if (lt_ad_seq_split(n))
            continue;
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] && n->in[j]->id < c->nsrc) {
                active_in |= c->active[n->in[j]->id];
                tainted_in |= taint[n->in[j]->id];
            }
        for (int j = 0; j < n->nout; j++) {
            const lt_ival *o = n->out[j];
            if (!o || o->id >= c->nsrc || taint[o->id])
                continue;
            bool seq = o->type.kind == LT_KIND_SEQUENCE || o->type.kind == LT_KIND_OPTIONAL;
            bool flt = o->type.kind == LT_KIND_TENSOR && (o->type.dtype == LT_UNDEFINED || is_float(o->type.dtype));
            if ((active_in && seq) || (tainted_in && (seq || flt))) {
                taint[o->id] = true;
                if (!*why)
                    *why = n;
                changed = true;
            }
        }
    }
    return changed;
}
