/* torch's dynamo exporter writes a BatchNorm as an inference-mode
 * BatchNormalization even from a model in training mode, and its
 * optimizer then folds it into the Conv (or Gemm, ConvTranspose) before it
 * (onnxscript's FuseBatchNormIntoConv): the product's weight becomes
 * W * gamma / sqrt(var + eps) and its bias beta - mean * gamma /
 * sqrt(var + eps). Trained as found, the network has no BatchNorm: no
 * batch statistics, where PyTorch normalises every batch.
 *
 * For a fresh BatchNorm (gamma 1, beta 0, running mean 0, variance 1) the
 * fold can be undone: the fused bias is zero, which the optimizer drops
 * (RemoveOptionalBiasFrom..., so the fused node has no bias input), and
 * the weight is W / sqrt(1 + eps). The node's torch.fx call
 * is the BatchNorm's (_native_batch_norm_legit_functional(%conv, %p_bn_weight,
 * %p_bn_bias, %b_bn_running_mean, %b_bn_running_var, training, momentum,
 * eps)), or _native_batch_norm_legit_no_training(...) without the flag
 * from a model exported in eval mode: it names the four tensors and gives
 * eps and momentum. So such a node gets its weight times sqrt(1 + eps)
 * back (and its own bias so, where the product had one in the source and
 * the fold kept it: fresh_with_bias says when that is a fresh pair's) and a BatchNormalization after it reading new
 * tensors of those four names with the fresh values; the exporter writes
 * the BatchNormalization and its tensors into the graph
 * (lt_model.bn_inserts, importer/export.c). A fused bias left in the file
 * says the BatchNorm was not fresh (trained statistics), a weight of zeros
 * (a residual branch's last BatchNorm started at gamma 0) cannot be scaled
 * back, and output channels scaled unlike each other say the scales were
 * not all one (channels_alike): those stay folded, as the trainer's note
 * says. */
#include "torch_names.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The four tensors of the BatchNorm the fx call names, in the order
 * weight, bias, running_mean, running_var, and its momentum and eps:
 * false when the call is not a batch norm's or does not say. */
static bool bn_call(const lt_module *m, const lt_node *n, const char **t, double *momentum, double *eps)
{
    const char *call = n->fx_call;
    if (!call || !strstr(call, "batch_norm"))
        return false;
    static const char *const leaves[4] = {"weight", "bias", "running_mean", "running_var"};
    for (int k = 0; k < 4; k++)
        if (!(t[k] = lt_torch_fx_leaf(m, call, leaves[k])) || lt_torch_is_param(m, t[k]))
            return false;
    if (strlen(t[0]) <= strlen(".weight"))
        return false; /* no module of its own */
    /* the module of all four is one */
    size_t ls = strlen(t[0]) - strlen(".weight");
    for (int k = 1; k < 4; k++)
        if (strncmp(t[k], t[0], ls) != 0 || t[k][ls] != '.')
            return false;
    /* "..., %b_bn_running_var, True, 0.1, 1e-05)": the numbers after the
     * last placeholder (after the flag when there is one) */
    const char *args = strstr(call, "args = (");
    const char *last = NULL;
    for (const char *p = args ? strchr(args, '%') : NULL; p; p = strchr(p + 1, '%'))
        last = p;
    if (!last)
        return false;
    double v[2];
    /* _native_batch_norm_legit_no_training (a model exported in eval mode)
     * has no training flag before its momentum and eps */
    int got = strstr(call, "_no_training") ? 1 : 0;
    for (const char *p = strchr(last, ','); p && got < 3; p = strchr(p + 1, ',')) {
        const char *s = p + 1;
        while (*s == ' ')
            s++;
        if (!strncmp(s, "True", 4) || !strncmp(s, "False", 5)) {
            got = got ? got : 1;
            continue;
        }
        char *end;
        double x = strtod(s, &end);
        if (end == s || got < 1)
            return false;
        v[got - 1] = x;
        got++;
    }
    if (got < 3 || !(v[0] >= 0 && v[0] <= 1) || !(v[1] > 0 && v[1] < 1))
        return false;
    *momentum = v[0];
    *eps = v[1];
    return true;
}

/* The number of output channels of n's product: a Conv's weight axis 0,
 * a ConvTranspose's axis 1 times its groups, a Gemm's N. 0 when not known. */
static int64_t channels(const lt_node *n, const lt_tensor *w)
{
    if (n->op == LT_OP_CONV)
        return w->rank >= 3 ? w->dims[0] : 0;
    if (n->op == LT_OP_CONV_TRANSPOSE)
        return w->rank >= 3 ? w->dims[1] * lt_attr_int(n, "group", 1) : 0;
    return w->rank == 2 ? w->dims[lt_attr_int(n, "transB", 0) ? 0 : 1] : 0;
}

/* The output channel of entry i of n's weight w (c channels). */
static int64_t channel_of(const lt_node *n, const lt_tensor *w, int64_t i, int64_t c)
{
    if (n->op == LT_OP_CONV)
        return i / (w->numel / w->dims[0]);
    if (n->op == LT_OP_GEMM)
        return lt_attr_int(n, "transB", 0) ? i / w->dims[1] : i % w->dims[1];
    /* ConvTranspose [Cin, Cout / g, k...]: input channel ic of group
     * ic / (Cin / g) feeds output channel group * (Cout / g) + j */
    int64_t per_in = w->numel / w->dims[0], ic = i / per_in, j = (i % per_in) / (per_in / w->dims[1]);
    int64_t g = c / w->dims[1];
    return (ic / (w->dims[0] / (g ? g : 1))) * w->dims[1] + j;
}

static double entry(const lt_tensor *t, int64_t i)
{
    return t->dtype == LT_F64 ? ((const double *)t->data)[i] : ((const float *)t->data)[i];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Whether the output channels of the folded weight look alike, as
 * gamma / sqrt(var + eps) the same for every channel leaves them: their
 * root mean squares within quartiles of ratio 1 + 5 / sqrt(entries per
 * channel), which fresh weights of PyTorch's and Hugging Face's inits meet
 * with room to spare. A BatchNorm whose scales the model drew at random
 * (Hugging Face's MobileViT draws them from N(0, 0.02)) spreads them
 * further, and cannot be given back as a fresh one. Fewer than eight
 * channels say too little to tell. */
static bool channels_alike(const lt_node *n, const lt_tensor *w, int64_t c)
{
    if (c < 8)
        return c > 0;
    double *ss = calloc((size_t)c, sizeof *ss);
    if (!ss)
        return false;
    for (int64_t i = 0; i < w->numel; i++) {
        double v = entry(w, i);
        int64_t ch = channel_of(n, w, i, c);
        if (ch >= 0 && ch < c)
            ss[ch] += v * v;
    }
    qsort(ss, (size_t)c, sizeof *ss, cmp_double);
    double per = (double)w->numel / (double)c, q1 = sqrt(ss[c / 4]), q3 = sqrt(ss[(3 * c) / 4]);
    free(ss);
    return q1 > 0 && q3 / q1 <= 1.0 + 5.0 / sqrt(per);
}

/* Whether n's own bias b (a Conv2d or Linear made with bias=True) beside a
 * BatchNorm folded in looks like a fresh pair's: the fold then leaves
 * W / sqrt(1 + eps) and b / sqrt(1 + eps), where a trained BatchNorm leaves
 * (b - mean) * gamma / sqrt(var + eps) + beta, which the bias alone cannot
 * tell apart. PyTorch's default initialisation of Conv, ConvTranspose and
 * Linear (kaiming_uniform_ with a = sqrt(5), and its bias rule) draws both
 * uniformly within 1 / sqrt(fan_in): every entry within that bound, and the
 * largest weight near it (64 or more entries miss 0.9 of it with
 * probability below 0.0013), is what a fresh pair leaves and a trained one,
 * whose scales spread the channels, does not. */
static bool fresh_with_bias(const lt_module *m, const lt_node *n, const lt_tensor *w, int64_t c)
{
    const lt_ival *bv = n->in[2];
    if (bv->param < 0 || bv->param >= m->nparams || bv->uses != 1 || w->rank < 2 || w->dims[0] < 1)
        return false;
    const lt_tensor *b = &m->params[bv->param].data;
    if (b->dtype != w->dtype || !b->data || b->rank != 1 || b->numel != c)
        return false;
    int64_t fan_in = n->op == LT_OP_GEMM ? (lt_attr_int(n, "transB", 0) ? w->dims[1] : w->dims[0])
                                         : w->numel / w->dims[0];
    double bound = (1.0 + 1e-6) / sqrt((double)fan_in), top = 0;
    for (int64_t i = 0; i < w->numel; i++) {
        double v = fabs(entry(w, i));
        if (!(v <= bound))
            return false;
        top = v > top ? v : top;
    }
    for (int64_t i = 0; i < b->numel; i++)
        if (!(fabs(entry(b, i)) <= bound))
            return false;
    return w->numel < 64 || top >= 0.9 * bound;
}

/* A new parameter name of c values, each v, of type dt. */
static lt_ival *filled(lt_module *m, const char *name, lt_dtype dt, int64_t c, double v)
{
    size_t es = lt_dtype_size(dt);
    void *data = malloc(es * (size_t)c);
    lt_ival *val = data ? lt_ival_new(m, m->main, name) : NULL;
    int q = val ? lt_module_add_param(m, name) : -1;
    if (q < 0) {
        free(data);
        return NULL;
    }
    for (int64_t i = 0; i < c; i++) {
        if (dt == LT_F64)
            ((double *)data)[i] = v;
        else
            ((float *)data)[i] = (float)v;
    }
    lt_param *p = &m->params[q];
    p->data = (lt_tensor){.dtype = dt, .rank = 1, .dims = {c}, .numel = c, .data = data};
    p->value = val;
    val->param = q;
    lt_type_tensor(&val->type, dt, 1, &c);
    return val;
}

static lt_status record(lt_module *m, const lt_node *n, const lt_node *bn)
{
    lt_bn_insert *grown = lt_ir_alloc(m, sizeof *grown * (size_t)(m->nbn_inserts + 1));
    if (!grown)
        return LT_ERR_NOMEM;
    if (m->nbn_inserts)
        memcpy(grown, m->bn_inserts, sizeof *grown * (size_t)m->nbn_inserts);
    lt_bn_insert *r = &grown[m->nbn_inserts];
    r->after = n->name;
    r->name = bn->name;
    r->in = n->out[0]->name;
    r->out = bn->out[0]->name;
    r->epsilon = lt_attr_float(bn, "epsilon", 1e-5f);
    r->momentum = lt_attr_float(bn, "momentum", 0.9f);
    for (int k = 0; k < 4; k++)
        r->param[k] = bn->in[k + 1]->name;
    /* the readers of the product's result, which now read the BatchNorm's */
    const lt_block *b = m->main;
    int nread = 0;
    for (int pass = 0; pass < 2; pass++) {
        int at = 0;
        for (int i = 0; i < b->nnodes; i++)
            for (int k = 0; k < b->nodes[i]->nin; k++) {
                if (b->nodes[i]->in[k] != bn->out[0] || b->nodes[i] == bn)
                    continue;
                if (pass) {
                    r->read_node[at] = b->nodes[i]->name;
                    r->read_slot[at] = k;
                }
                at++;
            }
        if (!pass) {
            nread = at;
            r->read_node = lt_ir_alloc(m, sizeof *r->read_node * (size_t)(nread + 1));
            r->read_slot = lt_ir_alloc(m, sizeof *r->read_slot * (size_t)(nread + 1));
            if (!r->read_node || !r->read_slot)
                return LT_ERR_NOMEM;
        }
    }
    r->nread = nread;
    m->bn_inserts = grown;
    m->nbn_inserts++;
    return LT_OK;
}

static lt_status unfold(lt_module *m, lt_node *n, const char **t, double momentum, double eps)
{
    lt_block *b = m->main;
    lt_param *wp = &m->params[n->in[1]->param];
    lt_tensor *w = &wp->data;
    int64_t c = channels(n, w);
    /* the weight back, the same for every channel: W' divided by the
     * factor the fold multiplied by, 1 / sqrt(1 + eps) in the weight's own
     * precision, gives W bit for bit nearly always (multiplying by
     * sqrt(1 + eps) instead misses one weight in ten by a unit in the last
     * place, enough to turn a near tie in a MaxPool the other way) */
    lt_tensor *own = n->nin > 2 && n->in[2] ? &m->params[n->in[2]->param].data : NULL;
    for (int k = 0; k < (own ? 2 : 1); k++) {
        lt_tensor *t = k ? own : w;
        if (t->dtype == LT_F64) {
            double s = 1.0 / sqrt(1.0 + eps);
            for (int64_t i = 0; i < t->numel; i++)
                ((double *)t->data)[i] /= s;
        } else {
            float s = 1.0f / sqrtf(1.0f + (float)eps);
            for (int64_t i = 0; i < t->numel; i++)
                ((float *)t->data)[i] /= s;
        }
    }
    lt_node *bn = lt_node_new(m, b, LT_OP_BATCH_NORMALIZATION, 5, 1);
    if (!bn || lt_node_set_attrs(m, bn, 2) != LT_OK)
        return LT_ERR_NOMEM;
    bn->attrs[0] = (lt_attr){.name = "epsilon", .kind = LT_ATTR_FLOAT, .f = (float)eps};
    bn->attrs[1] = (lt_attr){.name = "momentum", .kind = LT_ATTR_FLOAT, .f = (float)(1.0 - momentum)};
    size_t ls = strlen(t[0]) - strlen(".weight");
    char nm[1024];
    snprintf(nm, sizeof nm, "%.*s.batch_norm", (int)ls, t[0]);
    bn->name = lt_ir_strdup(m, nm);
    bn->scope = lt_ir_strndup(m, t[0], ls);
    bn->opset = n->opset;
    bn->domain_name = n->domain_name;
    static const double fresh[4] = {1, 0, 0, 1};
    lt_dtype dt = w->dtype; /* adding parameters moves them: w is not read after */
    for (int k = 0; k < 4; k++)
        if (!(bn->in[k + 1] = filled(m, t[k], dt, c, fresh[k])))
            return LT_ERR_NOMEM;
    snprintf(nm, sizeof nm, "%s@bn", n->out[0]->name ? n->out[0]->name : n->name);
    lt_ival *out = lt_ival_new(m, b, nm);
    if (!out || !bn->name || !bn->scope)
        return LT_ERR_NOMEM;
    out->def = bn;
    out->type = n->out[0]->type;
    bn->out[0] = out;
    /* every reader of the product reads the BatchNorm (which reads it) */
    lt_module_replace_reads(m, n->out[0], out);
    bn->in[0] = n->out[0];
    n->out[0]->uses++;
    for (int k = 1; k < 5; k++)
        bn->in[k]->uses++;
    lt_block_place_at(b, bn, n->index + 1);
    return record(m, n, bn);
}

lt_status lt_ir_unfold_batch_norms(lt_module *m, int *nunfolded, lt_err *err)
{
    *nunfolded = 0;
    if (!m->ntorch)
        return LT_OK;
    lt_block *b = m->main;
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        const char *t[4];
        double momentum, eps;
        if ((n->op != LT_OP_CONV && n->op != LT_OP_CONV_TRANSPOSE && n->op != LT_OP_GEMM) || !n->rule ||
            !strstr(n->rule, "FuseBatchNormInto") ||
            n->nout != 1 || !n->out[0] || !n->name || !*n->name || n->nin < 2 || !n->in[1] ||
            n->in[1]->param < 0 || n->in[1]->param >= m->nparams)
            continue;
        const lt_param *wp = &m->params[n->in[1]->param];
        if ((wp->data.dtype != LT_F32 && wp->data.dtype != LT_F64) || !wp->data.data || lt_ir_one_value(&wp->data) ||
            n->in[1]->uses != 1 || channels(n, &wp->data) < 1 || lt_ir_read_elsewhere(m->main, n->out[0]) ||
            !channels_alike(n, &wp->data, channels(n, &wp->data)) ||
            (n->nin > 2 && n->in[2] && !fresh_with_bias(m, n, &wp->data, channels(n, &wp->data))) ||
            !bn_call(m, n, t, &momentum, &eps))
            continue;
        if (unfold(m, n, t, momentum, eps) != LT_OK)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory giving back the BatchNorm folded into node '%s'", n->name);
        ++*nunfolded;
        i++; /* past the BatchNormalization */
    }
    return LT_OK;
}
