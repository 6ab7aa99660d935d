/* Shape inference rules: grad_rnn family (RNNGrad, GRUGrad, LSTMGrad).
 * Each gradient has its forward input's type; the bias, initial-state and
 * peephole gradients are derived from X, W and R when those inputs were
 * omitted from the forward node. */
#include "infer.h"
#include <string.h>

static const lt_type *in_type(const lt_node *n, int i)
{
    if (i >= n->nin || !n->in[i] || n->in[i]->type.kind != LT_KIND_TENSOR)
        return NULL;
    return &n->in[i]->type;
}

static void set_out(lt_node *n, int i, const lt_type *t)
{
    if (i < n->nout && n->out[i])
        n->out[i]->type = *t;
}

static lt_dim known(int64_t v) { return (lt_dim){v, -1}; }
static const lt_dim unknown = {-1, -1};

/* output i gets input j's type when j is given, else `fallback` */
static void like_or(lt_node *n, int i, int j, const lt_type *fallback)
{
    const lt_type *t = in_type(n, j);
    set_out(n, i, t ? t : fallback);
}

static lt_status recurrent_grad(lt_infer_ctx *c, lt_node *n, int gates)
{
    const lt_type *x = in_type(n, 0), *w = in_type(n, 1), *r = in_type(n, 2);
    lt_dtype dt = LT_UNDEFINED;
    const lt_type *known_dt[3] = {x, w, r};
    for (int i = 0; i < 3 && dt == LT_UNDEFINED; i++)
        if (known_dt[i])
            dt = known_dt[i]->dtype;
    if (x && x->rank >= 0 && x->rank != 3)
        return lt_infer_fail(c, n, "X must have rank 3 (got %d)", x->rank);
    if (w && w->rank >= 0 && w->rank != 3)
        return lt_infer_fail(c, n, "W must have rank 3 (got %d)", w->rank);
    if (r && r->rank >= 0 && r->rank != 3)
        return lt_infer_fail(c, n, "R must have rank 3 (got %d)", r->rank);
    const char *dir = lt_attr_str(n, "direction", "forward");
    int64_t D = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    int layout = (int)lt_attr_int(n, "layout", 0);
    lt_dim B = unknown, H = unknown;
    if (x && x->rank == 3)
        B = x->dims[layout ? 0 : 1];
    int64_t hs = lt_attr_int(n, "hidden_size", -1);
    if (hs > 0)
        H = known(hs);
    else if (r && r->rank == 3)
        H = r->dims[2];

    if (x)
        set_out(n, 0, x);
    if (w)
        set_out(n, 1, w);
    if (r)
        set_out(n, 2, r);
    lt_type bt, ht, pt;
    lt_type_unknown(&bt, dt, 2);
    bt.dims[0] = known(D);
    if (H.sym < 0 && H.v > 0)
        bt.dims[1] = known(2 * gates * H.v);
    like_or(n, 3, 3, &bt);
    lt_type_unknown(&ht, dt, 3);
    if (layout)
        ht.dims[0] = B, ht.dims[1] = known(D), ht.dims[2] = H;
    else
        ht.dims[0] = known(D), ht.dims[1] = B, ht.dims[2] = H;
    like_or(n, 4, 5, &ht);
    if (gates == 4) {
        like_or(n, 5, 6, &ht);
        lt_type_unknown(&pt, dt, 2);
        pt.dims[0] = known(D);
        if (H.sym < 0 && H.v > 0)
            pt.dims[1] = known(3 * H.v);
        like_or(n, 6, 7, &pt);
    }
    return LT_OK;
}

static lt_status rnn_grad(lt_infer_ctx *c, lt_node *n) { return recurrent_grad(c, n, 1); }
static lt_status gru_grad(lt_infer_ctx *c, lt_node *n) { return recurrent_grad(c, n, 3); }
static lt_status lstm_grad(lt_infer_ctx *c, lt_node *n) { return recurrent_grad(c, n, 4); }

void lt_infer_register_grad_rnn(lt_infer_fn *tab)
{
    tab[LT_OP_RNN_GRAD] = rnn_grad;
    tab[LT_OP_GRU_GRAD] = gru_grad;
    tab[LT_OP_LSTM_GRAD] = lstm_grad;
}
