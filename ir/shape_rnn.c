/* Shape inference rules: rnn family (RNN, GRU, LSTM) and the signal ops
 * (DFT, STFT, MelWeightMatrix). */
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

/* The integer value of a constant scalar input, or -1. */
static int64_t const_int(lt_infer_ctx *c, const lt_node *n, int i)
{
    if (i >= n->nin || !n->in[i])
        return -1;
    const lt_tensor *t = lt_infer_const(c, n->in[i]);
    if (!t || t->numel != 1)
        return -1;
    switch (t->dtype) {
    case LT_I64: return ((const int64_t *)t->data)[0];
    case LT_I32: return ((const int32_t *)t->data)[0];
    default: return -1;
    }
}

static lt_status recurrent(lt_infer_ctx *c, lt_node *n, int gates)
{
    const lt_type *x = in_type(n, 0), *w = in_type(n, 1), *r = in_type(n, 2);
    lt_dtype dt = x ? x->dtype : w ? w->dtype : LT_UNDEFINED;
    if (x && x->rank >= 0 && x->rank != 3)
        return lt_infer_fail(c, n, "X must have rank 3 (got %d)", x->rank);
    const char *dir = lt_attr_str(n, "direction", "forward");
    int64_t D = strcmp(dir, "bidirectional") == 0 ? 2 : 1;
    int layout = (int)lt_attr_int(n, "layout", 0);
    lt_dim S = unknown, B = unknown, H = unknown;
    if (x && x->rank == 3) {
        S = x->dims[layout ? 1 : 0];
        B = x->dims[layout ? 0 : 1];
    }
    int64_t hs = lt_attr_int(n, "hidden_size", -1);
    if (hs > ((int64_t)1 << 32))
        return lt_infer_fail(c, n, "hidden_size %lld is more than lantern can hold", (long long)hs);
    if (hs > 0)
        H = known(hs);
    else if (r && r->rank == 3)
        H = r->dims[2];
    if (w && w->rank == 3 && w->dims[0].sym < 0 && w->dims[0].v >= 0 && w->dims[0].v != D)
        return lt_infer_fail(c, n, "W has %lld directions, the direction attribute says %lld",
                             (long long)w->dims[0].v, (long long)D);
    if (hs > 0 && w && w->rank == 3 && w->dims[1].sym < 0 && w->dims[1].v >= 0 && w->dims[1].v != gates * hs)
        return lt_infer_fail(c, n, "W has %lld rows, expected %lld", (long long)w->dims[1].v,
                             (long long)(gates * hs));
    lt_type y, yh;
    lt_type_unknown(&y, dt, 4);
    lt_type_unknown(&yh, dt, 3);
    if (layout) {
        y.dims[0] = B, y.dims[1] = S, y.dims[2] = known(D), y.dims[3] = H;
        yh.dims[0] = B, yh.dims[1] = known(D), yh.dims[2] = H;
    } else {
        y.dims[0] = S, y.dims[1] = known(D), y.dims[2] = B, y.dims[3] = H;
        yh.dims[0] = known(D), yh.dims[1] = B, yh.dims[2] = H;
    }
    set_out(n, 0, &y);
    set_out(n, 1, &yh);
    if (gates == 4)
        set_out(n, 2, &yh);
    /* the workspace output the AD adds for the gradient: [D, per direction]
     * in the compute type (runtime/cpu/grad_rnn_tmpl.h) */
    lt_type ws;
    lt_type_unknown(&ws, dt == LT_F64 || dt == LT_UNDEFINED ? dt : LT_F32, 2);
    ws.dims[0] = known(D);
    set_out(n, gates == 4 ? 3 : 2, &ws);
    return LT_OK;
}

static lt_status rnn(lt_infer_ctx *c, lt_node *n) { return recurrent(c, n, 1); }
static lt_status gru(lt_infer_ctx *c, lt_node *n) { return recurrent(c, n, 3); }
static lt_status lstm(lt_infer_ctx *c, lt_node *n) { return recurrent(c, n, 4); }

static lt_status dft(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0);
    if (!x)
        return LT_OK;
    lt_type t;
    lt_type_unknown(&t, x->dtype, x->rank);
    int r = x->rank;
    if (r < 0) {
        set_out(n, 0, &t);
        return LT_OK;
    }
    if (r < 2)
        return lt_infer_fail(c, n, "input must have rank >= 2 (got %d)", r);
    int64_t axis = lt_attr_int(n, "axis", 1);
    if (n->opset >= 20) {
        /* axis became input 2 (default -2) */
        axis = -2;
        if (n->nin > 2 && n->in[2]) {
            const lt_tensor *a = lt_infer_const(c, n->in[2]);
            if (!a || a->numel != 1 || (a->dtype != LT_I64 && a->dtype != LT_I32)) {
                set_out(n, 0, &t);
                return LT_OK;
            }
            axis = a->dtype == LT_I64 ? ((const int64_t *)a->data)[0] : ((const int32_t *)a->data)[0];
        }
    }
    int64_t given = axis;
    if (axis < 0)
        axis += r;
    if (axis < 0 || axis > r - 2)
        return lt_infer_fail(c, n, "axis %lld is out of range for rank %d", (long long)given, r);
    for (int i = 0; i < r - 1; i++)
        t.dims[i] = x->dims[i];
    bool onesided = lt_attr_int(n, "onesided", 0) != 0, inverse = lt_attr_int(n, "inverse", 0) != 0;
    /* inverse and onesided (irfft): half spectrum in, real signal of
     * dft_length (default 2 (bins - 1)) out */
    bool irfft = onesided && inverse, half_out = onesided && !inverse;
    t.dims[r - 1] = known(irfft ? 1 : 2);
    int64_t len = -1;
    if (n->nin > 1 && n->in[1])
        len = const_int(c, n, 1);
    else if (x->dims[axis].sym < 0)
        len = !irfft ? x->dims[axis].v : x->dims[axis].v > 1 ? 2 * (x->dims[axis].v - 1) : -1;
    else if (!onesided)
        len = -2; /* same symbol as the input */
    if (len >= 0)
        t.dims[axis] = known(half_out ? len / 2 + 1 : len);
    else if (len == -1)
        t.dims[axis] = unknown;
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status stft(lt_infer_ctx *c, lt_node *n)
{
    const lt_type *x = in_type(n, 0), *w = in_type(n, 2);
    lt_type t;
    lt_type_unknown(&t, x ? x->dtype : LT_UNDEFINED, 4);
    t.dims[3] = known(2);
    if (x && x->rank >= 1)
        t.dims[0] = x->dims[0];
    int64_t step = const_int(c, n, 1), fl = const_int(c, n, 3);
    if (fl < 0 && w && w->rank == 1 && w->dims[0].sym < 0)
        fl = w->dims[0].v;
    bool onesided = lt_attr_int(n, "onesided", 1) != 0;
    if (fl > 0)
        t.dims[2] = known(onesided ? fl / 2 + 1 : fl);
    if (fl > 0 && step > 0 && x && x->rank >= 2 && x->dims[1].sym < 0 && x->dims[1].v >= fl)
        t.dims[1] = known((x->dims[1].v - fl) / step + 1);
    set_out(n, 0, &t);
    return LT_OK;
}

static lt_status mel_weight_matrix(lt_infer_ctx *c, lt_node *n)
{
    int64_t odt = lt_attr_int(n, "output_datatype", LT_F32);
    lt_type t;
    lt_type_unknown(&t, odt > 0 && odt < LT_DTYPE_COUNT ? (lt_dtype)odt : LT_UNDEFINED, 2);
    int64_t nmel = const_int(c, n, 0), len = const_int(c, n, 1);
    if (len > 0)
        t.dims[0] = known(len / 2 + 1);
    if (nmel > 0)
        t.dims[1] = known(nmel);
    set_out(n, 0, &t);
    return LT_OK;
}

void lt_infer_register_rnn(lt_infer_fn *tab)
{
    tab[LT_OP_RNN] = rnn;
    tab[LT_OP_GRU] = gru;
    tab[LT_OP_LSTM] = lstm;
    tab[LT_OP_DFT] = dft;
    tab[LT_OP_STFT] = stft;
    tab[LT_OP_MEL_WEIGHT_MATRIX] = mel_weight_matrix;
}
