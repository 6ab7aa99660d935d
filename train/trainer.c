/* The step-level trainer: one model copy turned into its forward/backward
 * program, a second copy (forward only) that receives the trained
 * parameters, the optimizer; one step runs the program on a batch, stores
 * the running statistics it returns, clips and updates. lt_train's loop
 * (train.c) drives one, and programs drive one through lt_trainer_*. */
#include "trainer.h"
#include "ad/ad.h"
#include "ir/acc_to_add.h"
#include "ir/fold_heads.h"
#include "ir/fold_scale.h"
#include "ir/fold_transpose.h"
#include "ir/fuse_elementwise.h"
#include "ir/sum_pool_grad.h"
#include "ir/torch_names.h"
#include "ir/train_mode.h"
#include "optim.h"
#include "runtime/memplan.h"
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t lt_train_rand(uint64_t *state)
{
    /* splitmix64 */
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 random bits */
static double uniform01(uint64_t *state) { return (double)(lt_train_rand(state) >> 11) * 0x1.0p-53; }

/* ---- re-initialization ---- */

/* fan-in of parameter value v as the node reading it sees it; 0 if unknown */
static int64_t fan_in_in(const lt_block *b, const lt_ival *v, const lt_tensor *t)
{
    for (int k = 0; k < b->nnodes; k++) {
        const lt_node *n = b->nodes[k];
        for (int i = 0; i < n->nin; i++) {
            if (n->in[i] != v)
                continue;
            if (n->op == LT_OP_CONV && i == 1 && t->rank >= 3)
                return t->numel / t->dims[0];
            if (n->op == LT_OP_GEMM && i == 1 && t->rank == 2)
                return lt_attr_int(n, "transB", 0) ? t->dims[1] : t->dims[0];
            if (n->op == LT_OP_GEMM && i == 0 && t->rank == 2)
                return lt_attr_int(n, "transA", 0) ? t->dims[0] : t->dims[1];
            if (n->op == LT_OP_MAT_MUL && i == 1 && t->rank >= 2)
                return t->dims[t->rank - 2];
            if (n->op == LT_OP_MAT_MUL && i == 0 && t->rank >= 2)
                return t->dims[t->rank - 1];
        }
        for (int r = 0; r < n->nregions; r++) {
            int64_t f = fan_in_in(n->regions[r], v, t);
            if (f > 0)
                return f;
        }
    }
    return 0;
}

/* Whether parameter value v is the scale (input 1) of a normalization op,
 * or the running variance (input 4) of a BatchNormalization: those start at
 * 1 (the running mean at 0, as a new nn.BatchNorm's). */
static bool starts_at_one(const lt_block *b, const lt_ival *v)
{
    for (int k = 0; k < b->nnodes; k++) {
        const lt_node *n = b->nodes[k];
        for (int i = 0; i < n->nin; i++) {
            if (n->in[i] != v)
                continue;
            if (i == 1 && (n->op == LT_OP_BATCH_NORMALIZATION || n->op == LT_OP_LAYER_NORMALIZATION ||
                           n->op == LT_OP_INSTANCE_NORMALIZATION || n->op == LT_OP_GROUP_NORMALIZATION ||
                           n->op == LT_OP_RMS_NORMALIZATION))
                return true;
            if (i == 4 && n->op == LT_OP_BATCH_NORMALIZATION)
                return true;
        }
        for (int r = 0; r < n->nregions; r++)
            if (starts_at_one(n->regions[r], v))
                return true;
    }
    return false;
}

/* He-uniform (bound sqrt(6 / fan_in)) where a Conv, Gemm or MatMul tells the
 * fan-in, Glorot-uniform (sqrt(6 / (fan_in + fan_out)), PyTorch's fan
 * convention) elsewhere; rank 0 and 1 tensors (biases) become zero, but the
 * scales of normalization ops (and a batch norm's variance) one, as
 * PyTorch initializes them. */
static void init_random(lt_module *m, uint64_t seed)
{
    uint64_t rng = seed ^ 0x696e69745f72616eull;
    for (int p = 0; p < m->nparams; p++) {
        lt_param *pp = &m->params[p];
        lt_tensor *t = &pp->data;
        if (!pp->trainable || (t->dtype != LT_F32 && t->dtype != LT_F64) || t->numel == 0)
            continue;
        /* a norm's weight or bias the exporter folded into a constant, and
         * a scale the graph multiplies by itself (RMSNorm written out), hold
         * their fresh values (ones, zeros) in the file already */
        if (pp->torch_source || (t->rank < 2 && lt_ir_one_value(t) && lt_tensor_get_f64(t, 0) == 1.0))
            continue;
        double bound = 0;
        if (t->rank < 2 && starts_at_one(m->main, pp->value)) {
            for (int64_t i = 0; i < t->numel; i++)
                lt_tensor_set_f64(t, i, 1.0);
            continue;
        }
        if (t->rank >= 2) {
            int64_t fan_in = fan_in_in(m->main, pp->value, t);
            if (fan_in > 0) {
                bound = sqrt(6.0 / (double)fan_in);
            } else {
                int64_t rf = t->numel / (t->dims[0] * t->dims[1]);
                bound = sqrt(6.0 / (double)((t->dims[0] + t->dims[1]) * rf));
            }
        }
        for (int64_t i = 0; i < t->numel; i++)
            lt_tensor_set_f64(t, i, bound ? (2 * uniform01(&rng) - 1) * bound : 0.0);
    }
}

/* ---- setting up ---- */

static lt_status check_opts(const lt_train_opts *o, lt_err *err)
{
    if (!(o->clip_norm >= 0) || !isfinite(o->clip_norm))
        return lt_errf(err, LT_ERR_INVALID, "clip norm must be >= 0, got %g", o->clip_norm);
    if (o->loss != LT_LOSS_SOFTMAX_CROSS_ENTROPY && o->loss != LT_LOSS_NLL && o->loss != LT_LOSS_MSE &&
        o->loss != LT_LOSS_BCE_LOGITS && o->loss != LT_LOSS_MODEL)
        return lt_errf(err, LT_ERR_INVALID, "training takes the losses softmax-cross-entropy, nll, mse, bce-logits and model");
    return LT_OK;
}

static bool on_cpu(void);

/* Folded copies of tied weights (ir/tie_transposed.c), in both model
 * copies alike (the same file gives the same pairs); the note names them. */
static lt_status tie_copies(lt_trainer *t, int *ntied, lt_err *err)
{
    char list[1024], note[1400];
    int n2 = 0;
    lt_status st = lt_ir_tie_transposed_params(t->tm, ntied, list, sizeof list, err);
    if (st == LT_OK)
        st = lt_ir_tie_transposed_params(t->em, &n2, NULL, 0, err);
    if (st == LT_OK && n2 != *ntied)
        return lt_errf(err, LT_ERR_INTERNAL, "%s: the two model copies tie different weights", t->path);
    if (st == LT_OK && *ntied && on_cpu())
        st = lt_ir_fold_transpose(t->em, NULL, err); /* the evaluations read the tie in place too */
    if (st != LT_OK || !*ntied || !t->o->on_note)
        return st;
    snprintf(note, sizeof note, "%s: %d initializer(s) hold exactly the transpose of another (an exporter's folded "
             "copy of a tied weight), trained as that one tensor as PyTorch trains the tie and written back as its "
             "transpose (--no-tie keeps them apart): %s", t->path, *ntied, list);
    t->o->on_note(note, t->o->user);
    return LT_OK;
}

static lt_status apply_freeze(lt_trainer *t, lt_err *err)
{
    for (int f = 0; f < t->o->nfreeze; f++) {
        int hits = 0;
        for (int p = 0; p < t->tm->nparams; p++)
            if (fnmatch(t->o->freeze[f], t->tm->params[p].name, 0) == 0) {
                t->tm->params[p].trainable = false;
                hits++;
                /* a tied weight's folded copy (tie_copies) freezes the tie,
                 * and an initializer computed from a parameter
                 * (ir/unfold_computed.c) that parameter */
                const char *src = t->tm->params[p].transpose_of ? t->tm->params[p].transpose_of
                                                                : t->tm->params[p].computed_from;
                for (int q = 0; src && q < t->tm->nparams; q++)
                    if (!strcmp(t->tm->params[q].name, src))
                        t->tm->params[q].trainable = false;
            }
        if (!hits)
            return lt_errf(err, LT_ERR_INVALID, "%s: --freeze %s: the model has no parameter of that name", t->path,
                           t->o->freeze[f]);
    }
    return LT_OK;
}

/* An initializer torch's exporter computed from a parameter through an
 * operation lantern cannot undo (lt_param.fold_op: the sigmoid of Swin V2's
 * 16 * sigmoid(table); ir/gathered_table.c) cannot train as PyTorch trains the parameter, and
 * trained in its place it would follow another parameterisation: refused,
 * with what to do, unless --freeze keeps it fixed (the user's choice). */
static lt_status check_folds(const lt_trainer *t, lt_err *err)
{
    for (int p = 0; p < t->tm->nparams; p++) {
        const lt_param *pp = &t->tm->params[p];
        if (pp->trainable && pp->fold_op && pp->fold_param)
            return lt_errf(err, LT_ERR_UNSUPPORTED,
                           "%s: initializer '%s' is parameter '%s' of the source module computed through operations "
                           "torch's exporter folded into it (%s among them), which lantern cannot undo to train '%s' "
                           "as PyTorch does; export with torch.onnx.export(..., optimize=False) (or dynamo=False, "
                           "do_constant_folding=False) to keep '%s', or --freeze %s to train the rest with it fixed",
                           t->path, pp->name, pp->fold_param, pp->fold_op, pp->fold_param, pp->fold_param, pp->name);
    }
    return LT_OK;
}

/* Gradient outputs come in module parameter order: match each "<p>_grad" to
 * the next parameter of that name and type. */
static lt_status map_gradients(lt_trainer *t, lt_err *err)
{
    lt_model *m = t->tm;
    int nout = lt_model_num_outputs(m);
    /* loss, the gradients, then program state (running statistics) */
    t->ngrad = 0;
    while (1 + t->ngrad < nout) {
        const char *on = lt_model_output_name(m, 1 + t->ngrad);
        size_t l = strlen(on);
        if (l <= 5 || strcmp(on + l - 5, "_grad") != 0)
            break;
        t->ngrad++;
    }
    if (t->ngrad < 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: nothing to train: no float parameter reaches the loss (or all are frozen)",
                       t->path);
    t->grad_param = calloc(t->ngrad, sizeof *t->grad_param);
    t->params = calloc(t->ngrad, sizeof *t->params);
    t->grads = calloc(t->ngrad, sizeof *t->grads);
    if (!t->grad_param || !t->params || !t->grads)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    int p = 0;
    for (int g = 0; g < t->ngrad; g++) {
        const char *on = lt_model_output_name(m, g + 1);
        size_t l = strlen(on);
        for (; p < m->nparams; p++) {
            const lt_param *pp = &m->params[p];
            if (pp->trainable && strlen(pp->name) + 5 == l && strncmp(pp->name, on, l - 5) == 0 &&
                strcmp(on + l - 5, "_grad") == 0)
                break;
        }
        if (p == m->nparams)
            return lt_errf(err, LT_ERR_INTERNAL, "%s: gradient output '%s' matches no parameter", t->path, on);
        t->grad_param[g] = p;
        t->params[g] = &m->params[p].data;
        p++;
    }
    return LT_OK;
}

/* Both copies come from the same file, so their parameters line up. */
static lt_status check_copies(lt_trainer *t, lt_err *err)
{
    if (t->tm->nparams != t->em->nparams)
        return lt_errf(err, LT_ERR_INTERNAL, "%s: the two model copies differ", t->path);
    for (int p = 0; p < t->tm->nparams; p++)
        if (strcmp(t->tm->params[p].name, t->em->params[p].name) != 0 ||
            t->tm->params[p].data.dtype != t->em->params[p].data.dtype ||
            t->tm->params[p].data.numel != t->em->params[p].data.numel)
            return lt_errf(err, LT_ERR_INTERNAL, "%s: the two model copies differ at parameter '%s'", t->path,
                           t->tm->params[p].name);
    return LT_OK;
}

lt_status lt_trainer_sync(lt_trainer *t, lt_err *err)
{
    lt_status st = lt_trainer_pull(t, err);
    if (st != LT_OK)
        return st;
    for (int p = 0; p < t->tm->nparams; p++) {
        const lt_tensor *src = &t->tm->params[p].data;
        if (src->dtype != LT_STRING && src->numel > 0)
            memcpy(t->em->params[p].data.data, src->data, (size_t)src->numel * lt_dtype_size(src->dtype));
    }
    lt_ir_refresh_tied(t->em);
    t->em_stale = false;
    return LT_OK;
}

/* ---- parameters on a device ---- */

static bool trains_on(const lt_backend *be)
{
    return be && !be->host && be->optim_update && be->sum_squares && be->accumulate;
}

static size_t param_bytes(const lt_tensor *t) { return (size_t)t->numel * lt_dtype_size(t->dtype); }

/* The results that carry running statistics, and the parameters they set. */
static lt_status find_stats(lt_trainer *t, lt_err *err)
{
    const lt_block *b = t->tm->main;
    t->stat_result = calloc((size_t)b->nresults + 1, sizeof *t->stat_result);
    t->stat_param = calloc((size_t)b->nresults + 1, sizeof *t->stat_param);
    if (!t->stat_result || !t->stat_param)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    static const char *const sfx[2] = {LT_RUNNING_SUM, LT_RUNNING_COUNT};
    for (int r = 0; r < b->nresults; r++) {
        const char *on = b->results[r]->name;
        size_t l = on ? strlen(on) : 0;
        for (int k = 0; k < 2; k++) {
            size_t sl = strlen(sfx[k]);
            if (l <= sl || strcmp(on + l - sl, sfx[k]) != 0)
                continue;
            t->stat_result[r] = true;
            for (int p = 0; k == 0 && p < t->tm->nparams; p++)
                if (strlen(t->tm->params[p].name) == l - sl && !strncmp(t->tm->params[p].name, on, l - sl))
                    t->stat_param[t->nstat++] = p;
        }
    }
    return LT_OK;
}

/* Whether a node of b (or of its regions) that the backend runs reads
 * parameter p there (not as an input it reads on the host). */
static bool read_on(const lt_backend *be, const lt_block *b, int p)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 0; j < n->nin; j++) {
            uint64_t host_in = 0;
            if (n->in[j] && n->in[j]->param == p && be->kernel(be, n, &host_in) && j < 64 && !((host_in >> j) & 1))
                return true;
        }
        for (int r = 0; r < n->nregions; r++)
            if (read_on(be, n->regions[r], p))
                return true;
    }
    return false;
}

/* Moves the trainer's parameters, gradients and optimizer to the training
 * session's backend, where it has the hooks for that: the trained
 * parameters, and the others that a node on the backend reads (a parameter
 * only host kernels read stays on the host, with no copy per step). */
static lt_status to_device(lt_trainer *t, lt_err *err)
{
    const lt_backend *be = lt_session_backend(t->ts);
    if (!trains_on(be))
        return LT_OK;
    lt_module *m = t->tm;
    t->dparam = calloc((size_t)m->nparams + 1, sizeof *t->dparam);
    t->dparams = calloc((size_t)t->ngrad + 1, sizeof *t->dparams);
    if (!t->dparam || !t->dparams)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    t->dev = be;
    bool *trained = calloc((size_t)m->nparams + 1, sizeof *trained);
    if (!trained)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    for (int g = 0; g < t->ngrad; g++)
        trained[t->grad_param[g]] = true;
    for (int p = 0; p < m->nparams; p++) {
        const lt_tensor *h = &m->params[p].data;
        if ((h->dtype != LT_F32 && h->dtype != LT_F64) || h->numel == 0 || (!trained[p] && !read_on(be, m->main, p)))
            continue;
        lt_status st = lt_tensor_alloc_on(&t->dparam[p], be, h->dtype, h->rank, h->dims, err);
        if (st == LT_OK)
            st = be->upload(be, t->dparam[p].buf, h->data, param_bytes(h), err);
        if (st == LT_OK)
            st = lt_session_bind_param(t->ts, p, &t->dparam[p], err);
        if (st != LT_OK) {
            free(trained);
            return st;
        }
    }
    free(trained);
    for (int g = 0; g < t->ngrad; g++) {
        t->dparams[g] = &t->dparam[t->grad_param[g]];
        if (!t->dparams[g]->buf)
            return lt_errf(err, LT_ERR_INTERNAL, "%s: trained parameter %d is not on the device", t->path, g);
    }
    lt_status st = find_stats(t, err);
    if (st == LT_OK)
        st = lt_optim_to_backend(t->opt, be, err);
    if (st == LT_OK)
        lt_session_keep_results(t->ts, true);
    return st;
}

lt_status lt_trainer_pull(lt_trainer *t, lt_err *err)
{
    lt_module *m = t->tm;
    /* the copies the importer made of trained tensors (a tied weight's
     * folded transpose, a gathered table's folded form), which nothing
     * reads in training, are written from those once the host holds them:
     * a checkpoint then holds them as `lantern export` writes them */
    if (!t->dev || !t->host_stale) {
        lt_ir_refresh_tied(m);
        return LT_OK;
    }
    for (int p = 0; p < m->nparams; p++)
        if (t->dparam[p].buf) {
            lt_status st = t->dev->download(t->dev, m->params[p].data.data, t->dparam[p].buf,
                                            param_bytes(&m->params[p].data), err);
            if (st != LT_OK)
                return st;
        }
    lt_status st = lt_optim_pull(t->opt, err);
    if (st == LT_OK) {
        t->host_stale = false;
        lt_ir_refresh_tied(m);
    }
    return st;
}

/* Parameter p's host data to its device copy. */
static lt_status push_param(lt_trainer *t, int p, lt_err *err)
{
    if (!t->dev || !t->dparam[p].buf)
        return LT_OK;
    const lt_tensor *h = &t->tm->params[p].data;
    return t->dev->upload(t->dev, t->dparam[p].buf, h->data, param_bytes(h), err);
}

lt_status lt_trainer_push(lt_trainer *t, lt_err *err)
{
    if (!t->dev)
        return LT_OK;
    for (int p = 0; p < t->tm->nparams; p++) {
        lt_status st = push_param(t, p, err);
        if (st != LT_OK)
            return st;
    }
    lt_status st = lt_optim_push(t->opt, err);
    if (st == LT_OK)
        t->host_stale = false;
    return st;
}

/* A running statistic's sum result r, once only one batch norm added to it
 * (count 1): the updated statistic itself, copied into the parameter's
 * device copy there (zeroed, then added: the backend's accumulate hook)
 * without a round trip through the host; false where that does not apply
 * (count other than 1 or not readable, no device copy, another shape). */
static bool stat_on_device(lt_trainer *t, int nout, lt_value *const *out, int r, lt_status *st, lt_err *err)
{
    const lt_block *b = t->tm->main;
    const char *on = b->results[r]->name;
    size_t l = strlen(on), sl = strlen(LT_RUNNING_SUM);
    if (l <= sl || strcmp(on + l - sl, LT_RUNNING_SUM) != 0)
        return false;
    int p = -1;
    for (int q = 0; q < t->tm->nparams && p < 0; q++)
        if (strlen(t->tm->params[q].name) == l - sl && !strncmp(t->tm->params[q].name, on, l - sl))
            p = q;
    const lt_tensor *cnt = NULL, *sum = lt_value_tensor(out[r]);
    for (int q = 0; q < nout && q < b->nresults && !cnt; q++) {
        const char *qn = b->results[q]->name;
        size_t ql = qn ? strlen(qn) : 0, cl = strlen(LT_RUNNING_COUNT);
        /* the count is a host constant handed on by Identity when one
         * batch norm adds to it; one the device holds is left to the host */
        if (ql == l - sl + cl && !strncmp(qn, on, l - sl) && !strcmp(qn + l - sl, LT_RUNNING_COUNT) &&
            !lt_value_backend(out[q]))
            cnt = lt_value_tensor(out[q]);
    }
    if (p < 0 || !t->dparam[p].buf || !sum || !cnt || cnt->numel != 1 || lt_value_backend(out[r]) != t->dev ||
        sum->dtype != t->dparam[p].dtype || sum->numel != t->dparam[p].numel || lt_tensor_get_f64(cnt, 0) != 1)
        return false;
    *st = t->dev->accumulate(t->dev, &t->dparam[p], NULL, err);
    if (*st == LT_OK)
        *st = t->dev->accumulate(t->dev, &t->dparam[p], sum, err);
    t->host_stale = true;
    return true;
}

/* On a device, after a run: the loss comes to the host, the gradients go to
 * the device where a host kernel made them, and each running statistic is
 * stored: on the device where one batch norm updated it (stat_on_device),
 * else through the host (its sum and count come back, the statistic is
 * stored into its parameter there and sent back, small per-channel
 * vectors). Counted with the run's copies. */
static lt_status dev_results(lt_trainer *t, int nout, lt_value **out, lt_err *err)
{
    lt_copy_stats *c = &t->copies;
    const lt_block *b = t->tm->main;
    lt_value **host = t->nstat ? calloc((size_t)nout + 1, sizeof *host) : NULL;
    if (t->nstat && !host)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status st = LT_OK;
    for (int r = 0; r < nout && st == LT_OK; r++) {
        bool grad = r >= 1 && r <= t->ngrad, stat = r < b->nresults && t->stat_result[r];
        if (stat && stat_on_device(t, nout, out, r, &st, err))
            continue;
        if (host)
            host[r] = out[r];
        if (!(r == 0 || grad || stat) || st != LT_OK)
            continue;
        lt_value *moved = NULL;
        st = lt_value_move(out[r], grad ? t->dev : NULL, &moved, c, err);
        if (st == LT_OK && moved) {
            lt_value_free(out[r]);
            out[r] = host ? (host[r] = moved) : moved;
        }
    }
    if (st != LT_OK || t->nstat == 0) {
        free(host);
        return st;
    }
    /* only this store and lt_trainer_push write the statistics' device
     * copies through the host, so the host data of those is current: the
     * store keeps what it does not write (a branch not taken) and skips
     * the sums left out of host[] (stored on the device) */
    st = lt_ir_store_running_stats(t->tm, nout, host, err);
    for (int i = 0; i < t->nstat && st == LT_OK; i++) {
        int p = t->stat_param[i];
        bool stored_here = false;
        for (int r = 0; r < nout && r < b->nresults && !stored_here; r++) {
            const char *on = b->results[r]->name;
            size_t pl = strlen(t->tm->params[p].name);
            stored_here = host[r] && t->stat_result[r] && !strncmp(on, t->tm->params[p].name, pl) &&
                          !strcmp(on + pl, LT_RUNNING_SUM);
        }
        if (stored_here)
            st = push_param(t, p, err);
    }
    free(host);
    return st;
}

/* Whether the training program runs on a CPU backend (LANTERN_BACKEND):
 * fused elementwise chains are a CPU kernel, a GPU backend has its own
 * kernels for the ops themselves. */
static bool on_cpu(void)
{
    lt_err e;
    const lt_backend *be = lt_backend_from_env(&e);
    return !be || strncmp(be->name, "cpu", 3) == 0;
}

/* FusedElementwise runs on the CPU backends, and on cuda unless
 * LANTERN_CUDA_FUSED=0 (cuda/fused.c) */
static bool fuses_elementwise(void)
{
    const char *off = getenv("LANTERN_CUDA_FUSED");
    return on_cpu() || !off || strcmp(off, "0") != 0;
}

/* The graph's constants stay fixed; the note names the first few. */
static void keep_constants(lt_trainer *t)
{
    char list[512] = "";
    size_t at = 0;
    int kept = 0;
    for (int p = 0; p < t->tm->nparams; p++) {
        lt_param *pp = &t->tm->params[p];
        if (!lt_ir_graph_constant(t->tm, pp))
            continue;
        pp->trainable = false;
        if (kept < 4 && at < sizeof list) {
            int w = snprintf(list + at, sizeof list - at, "%s%s", kept ? ", " : "", pp->name);
            at += w > 0 ? (size_t)w : 0;
        } else if (kept == 4 && at < sizeof list) {
            int w = snprintf(list + at, sizeof list - at, ", ...");
            at += w > 0 ? (size_t)w : 0;
        }
        kept++;
    }
    if (kept && t->o->on_note) {
        char note[800];
        snprintf(note, sizeof note,
                 "%s: %d single-valued initializer(s) named as an exporter names its constants, or in an If/Loop/Scan "
                 "body, stay fixed as the graph's constants (%s); --train-constants trains them",
                 t->path, kept, list);
        t->o->on_note(note, t->o->user);
    }
}

/* The float Constant nodes of 256 values or more in b and its regions: n
 * of them, v values, the largest's output name and the Loop/Scan/If it is
 * in (NULL: the main graph). */
static void big_constants(const lt_block *b, const lt_node *in, int *n, int64_t *v, const lt_tensor **top,
                          const char **top_name, const lt_node **top_in)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *k = b->nodes[i];
        for (int r = 0; r < k->nregions; r++)
            big_constants(k->regions[r], k, n, v, top, top_name, top_in);
        if (k->op != LT_OP_CONSTANT || k->nattr < 1 || k->attrs[0].kind != LT_ATTR_TENSOR || !k->attrs[0].t ||
            !lt_dtype_is_float(k->attrs[0].t->dtype) || k->attrs[0].t->numel < 256 || k->nout < 1 || !k->out[0] ||
            !k->out[0]->uses)
            continue;
        const lt_tensor *t = k->attrs[0].t;
        ++*n;
        *v += t->numel;
        if (!*top || t->numel > (*top)->numel) {
            *top = t;
            *top_name = k->out[0]->name;
            *top_in = in;
        }
    }
}

/* Weights the exporter wrote as Constant nodes (TorchScript does so for a
 * scripted module's nn.LSTM run inside a loop body) are not initializers,
 * so they do not train: said, since the loss then moves only the rest. */
static void note_constant_weights(const lt_trainer *t)
{
    if (!t->o->on_note)
        return;
    int n = 0;
    int64_t v = 0;
    const lt_tensor *top = NULL;
    const char *name = NULL;
    const lt_node *in = NULL;
    big_constants(t->tm->main, NULL, &n, &v, &top, &name, &in);
    if (!n)
        return;
    char dims[96] = "", note[900];
    size_t at = 0;
    for (int d = 0; d < top->rank && at < sizeof dims; d++) {
        int w = snprintf(dims + at, sizeof dims - at, "%s%lld", d ? "," : "", (long long)top->dims[d]);
        at += w > 0 ? (size_t)w : 0;
    }
    char where[300] = "the main graph";
    if (in)
        snprintf(where, sizeof where, "the body of %s '%s'", lt_op_names[in->op],
                 in->name && *in->name ? in->name : "?");
    snprintf(note, sizeof note,
             "%s: %d Constant node(s) hold float tensors of 256 values or more (%lld values; the largest '%s', %s[%s], "
             "in %s) and stay fixed: lantern trains initializers, and an exporter writes some weights as Constant "
             "nodes (TorchScript does for an nn.LSTM or Linear a scripted loop body runs); if these are weights, "
             "the model trains without them",
             t->path, n, (long long)v, name ? name : "?", lt_dtype_name(top->dtype), dims, where);
    t->o->on_note(note, t->o->user);
}

/* A trainable weight of more than one element holding one value throughout
 * and read by several nodes is most likely equal initializers an exporter
 * merged (torch's dynamo exporter does so for the fresh LayerNorm scales
 * and zero biases of an untrained model, with no Identity to untie): they
 * train as one tensor. The file cannot tell that from a real share, so
 * this is a note, not a change. */
static void note_merged(const lt_trainer *t)
{
    if (!t->o->on_note)
        return;
    int n = 0, most = 0;
    const char *name = NULL;
    for (int p = 0; p < t->tm->nparams; p++) {
        const lt_param *pp = &t->tm->params[p];
        const lt_tensor *d = &pp->data;
        if (!pp->trainable || !lt_dtype_is_float(d->dtype) || d->numel < 2 || !pp->value || pp->value->uses < 2 ||
            !lt_ir_one_value(d))
            continue;
        n++;
        if (pp->value->uses > most) {
            most = pp->value->uses;
            name = pp->name;
        }
    }
    if (!n)
        return;
    char note[700];
    snprintf(note, sizeof note,
             "%s: %d weight(s) holding one value throughout feed several nodes each (%s feeds %d): an exporter may "
             "have merged equal initializers of separate layers (torch's dynamo exporter does for an untrained "
             "model's LayerNorm scales and zero biases); they train as one tensor, as the file says",
             t->path, n, name, most);
    t->o->on_note(note, t->o->user);
}

/* TorchScript's onnx::LSTM_N, onnx::GRU_N, onnx::RNN_N: an nn.LSTM's weights
 * with their gates reordered and the two biases joined, which train as the
 * module's own do */
static bool recurrence_weights(const char *n)
{
    return !strncmp(n, "onnx::LSTM_", 11) || !strncmp(n, "onnx::GRU_", 10) || !strncmp(n, "onnx::RNN_", 10);
}

/* What the importer made of torch's exporters' optimizations: tensors it
 * split from one merged initializer (ir/split_merged.c), nodes it copied
 * for modules whose computation was merged away (ir/unmerge.c); BatchNorms the
 * exporter folded into a Conv or Gemm (dynamo's rewrite rule, or a
 * TorchScript Conv weight named as its constant folding names what it
 * makes), which train as that product's weights with no batch statistics;
 * parameters the graph signature names that the file lacks. The file keeps
 * no trace of the folded or dropped tensors' values, so these are notes. */
static void note_exporter_rewrites(const lt_trainer *t)
{
    if (!t->o->on_note)
        return;
    const lt_module *m = t->tm;
    int nsplit = 0, nfold = 0;
    const lt_param *split = NULL;
    const lt_node *fold = NULL;
    int nrestored = 0, nbuffers = 0;
    const lt_param *restored = NULL, *buffer = NULL;
    for (int p = 0; p < m->nparams; p++) {
        if (m->params[p].torch_buffer && !nbuffers++)
            buffer = &m->params[p];
        if (m->params[p].split_from && !nsplit++)
            split = &m->params[p];
        if (m->params[p].restored && !nrestored++)
            restored = &m->params[p];
    }
    int nconst = 0, ncomputed = 0;
    const lt_node *cfold = NULL, *computed = NULL;
    for (int i = 0; i < m->main->nnodes; i++) {
        const lt_node *n = m->main->nodes[i];
        bool unfolded = false; /* its BatchNorm given back (ir/unfold_bn.c) */
        for (int b = 0; b < m->nbn_inserts && !unfolded; b++)
            unfolded = n->name && !strcmp(m->bn_inserts[b].after, n->name);
        if (n->rule && strstr(n->rule, "FuseBatchNormInto") && !unfolded && !nfold++)
            fold = n;
        /* TorchScript names a weight its constant folding made onnx::OP_N;
         * a Conv's own weight keeps its parameter's name */
        const lt_ival *w = n->nin > 1 ? n->in[1] : NULL;
        const lt_ival *bias = n->nin > 2 ? n->in[2] : NULL;
        if ((n->op == LT_OP_CONV || n->op == LT_OP_CONV_TRANSPOSE) && w && w->param >= 0 &&
            m->params[w->param].trainable && !strncmp(m->params[w->param].name, "onnx::Conv", 10)) {
            /* a folded BatchNorm makes the bias too; a weight computed from
             * parameters (weight norm) leaves the Conv's own bias named */
            bool bn = bias && bias->param >= 0 && !strncmp(m->params[bias->param].name, "onnx::Conv", 10);
            if (bn && !nconst++)
                cfold = n;
            if (!bn && !ncomputed++)
                computed = n;
        }
    }
    /* other trained tensors TorchScript's constant folding made (named
     * onnx::OP_N): a Linear's transposed weight (MatMul, Gemm) trains as
     * the weight would, and Conv's are noted above; the rest were computed
     * from parameters or constants. And tf2onnx's optimizer folds a
     * BatchNorm into the Conv before it, naming the products
     * NAME_weights_fused_bn and NAME_bias_fused_bn */
    int nfolded = 0, ntf = 0;
    const char *folded = NULL, *tf = NULL;
    for (int p = 0; p < m->nparams; p++) {
        const lt_param *pp = &m->params[p];
        const char *nm = pp->name;
        if (!pp->trainable || !nm)
            continue;
        size_t l = strlen(nm), sl = strlen("_weights_fused_bn");
        if (l > sl && !strcmp(nm + l - sl, "_weights_fused_bn") && !ntf++)
            tf = nm;
        if (strncmp(nm, "onnx::", 6) != 0 || !lt_dtype_is_float(pp->data.dtype) || lt_ir_graph_constant(m, pp) ||
            !strncmp(nm + 6, "MatMul_", 7) || !strncmp(nm + 6, "Gemm_", 5) || !strncmp(nm + 6, "Conv", 4) ||
            recurrence_weights(nm))
            continue;
        if (!nfolded++)
            folded = nm;
    }
    if (ntf) {
        char note[700];
        snprintf(note, sizeof note,
                 "%s: %d Conv weight(s) hold a BatchNormalization tf2onnx folded in (%s%s): they train as plain "
                 "weights, with no batch statistics, unlike the Keras model",
                 t->path, ntf, tf, ntf > 1 ? ", ..." : "");
        t->o->on_note(note, t->o->user);
    }
    if (nfolded) {
        char note[1000];
        snprintf(note, sizeof note,
                 "%s: %d initializer(s) are tensors TorchScript's constant folding computed (%s%s), which train each "
                 "as a tensor of its own: one computed from a parameter trains unlike the module's (a norm scale "
                 "stored as 1 + weight takes weight decay on 1 + weight; a table gathered into one entry per "
                 "position, such as a relative position bias, trains each entry apart), and one computed from "
                 "constants (a mask) is fixed in PyTorch: --freeze it; torch.onnx.export(..., "
                 "do_constant_folding=False) keeps the parameters",
                 t->path, nfolded, folded, nfolded > 1 ? ", ..." : "");
        t->o->on_note(note, t->o->user);
    }
    if (ncomputed) {
        char note[1000];
        snprintf(note, sizeof note,
                 "%s: %d Conv weight(s) are tensors the exporter computed once from parameters (%s, read by node "
                 "'%s', whose bias keeps its parameter's name): a parametrization such as weight norm "
                 "(g * v / |v|), which then trains as a plain weight, unlike the source module; remove the "
                 "parametrization before export (torch.nn.utils.parametrize.remove_parametrizations) to train "
                 "the weight itself, or --freeze it",
                 t->path, ncomputed, m->params[computed->in[1]->param].name, computed->name ? computed->name : "?");
        t->o->on_note(note, t->o->user);
    }
    char note[1400];
    if (nconst) {
        snprintf(note, sizeof note,
                 "%s: %d Conv weight(s) are tensors the exporter made by constant folding (%s, read by node '%s'): "
                 "an eval-mode TorchScript export folds the BatchNorm after a Conv into it, which then trains "
                 "without batch statistics, unlike the source module; torch.onnx.export(..., "
                 "training=torch.onnx.TrainingMode.TRAINING) keeps the BatchNorm",
                 t->path, nconst, m->params[cfold->in[1]->param].name, cfold->name ? cfold->name : "?");
        t->o->on_note(note, t->o->user);
    }
    int ncopies = 0;
    const lt_param *copy = NULL;
    for (int p = 0; p < m->nparams; p++)
        if (m->params[p].copy_of && !ncopies++)
            copy = &m->params[p];
    if (ncopies) {
        snprintf(note, sizeof note,
                 "%s: %d initializer(s) are further copies the exporter folded of one weight that a module applies "
                 "more than once (as the products' torch.fx calls name it), trained as that one tensor as PyTorch "
                 "trains it (%s = %s); the written model holds each copy", t->path, ncopies, copy->name,
                 copy->copy_of);
        t->o->on_note(note, t->o->user);
    }
    if (m->nbn_inserts) {
        snprintf(note, sizeof note,
                 "%s: %d BatchNorm(s) the exporter had folded, fresh, into the product before them train again as "
                 "BatchNorms with batch statistics, as the nodes' torch.fx calls name them ('%s' after node '%s'); "
                 "the written model holds them", t->path, m->nbn_inserts, m->bn_inserts[0].name,
                 m->bn_inserts[0].after);
        t->o->on_note(note, t->o->user);
    }
    int ngathered = 0;
    const lt_param *gathered = NULL;
    for (int p = 0; p < m->nparams; p++)
        if (m->params[p].gathered_from && !ngathered++)
            gathered = &m->params[p];
    if (ngathered) {
        snprintf(note, sizeof note,
                 "%s: %d initializer(s) the graph signature does not name hold a few values copied many times, a "
                 "table the exporter gathered or expanded from a parameter and folded, as its record of the folding "
                 "says (a relative position bias): they train as those values, each moved once by the sum of its "
                 "copies' gradients as PyTorch moves the table (%s, as %s); the written model holds the gathered "
                 "tensor",
                 t->path, ngathered, gathered->name,
                 gathered->gathered_from);
        t->o->on_note(note, t->o->user);
    }
    int nwhole = 0;
    const lt_clone *whole = NULL;
    for (int c = 0; c < m->nclones; c++)
        if (m->clones[c].whole && !nwhole++)
            whole = &m->clones[c];
    if (nwhole) {
        snprintf(note, sizeof note,
                 "%s: %d node(s) the exporter had merged from two modules' computations of one tensor (fresh norms "
                 "of one input compute the same thing) run apart again, copied for the module whose computation was "
                 "merged away as the nodes' torch.fx metadata and the graph signature name it ('%s' for module "
                 "'%s'); the written model holds the copies",
                 t->path, nwhole, whole->from, whole->scope);
        t->o->on_note(note, t->o->user);
    }
    if (nsplit) {
        snprintf(note, sizeof note,
                 "%s: %d tensor(s) of the source module that the exporter had merged into one initializer for holding "
                 "equal values train apart again, as the graph signature and the nodes' module paths name them "
                 "(%s, split from %s); the written model holds each as an initializer of its own",
                 t->path, nsplit, split->name, split->split_from);
        t->o->on_note(note, t->o->user);
    }
    /* trained initializers the signature does not name, besides the
     * exporter's val_N: folded from parameters or from buffers */
    int nother = 0;
    const char *other = NULL;
    for (int p = 0; m->ntorch && p < m->nparams; p++) {
        const lt_param *pp = &m->params[p];
        bool table = false; /* a gathered table's values (ir/gathered_table.c), noted above */
        for (int q = 0; q < m->nparams && !table; q++)
            table = m->params[q].gathered_from && pp->name && !strcmp(m->params[q].gathered_from, pp->name);
        if (!pp->trainable || !pp->value || !lt_dtype_is_float(pp->data.dtype) || pp->torch_source || !pp->name ||
            !strncmp(pp->name, "val_", 4) || lt_torch_named(m, pp->name) || lt_ir_graph_constant(m, pp) || table)
            continue;
        if (!nother++)
            other = pp->name;
    }
    if (nother) {
        snprintf(note, sizeof note,
                 "%s: %d initializer(s) the graph signature does not name train as weights (%s%s): values the "
                 "exporter folded from parameters train in their place (a reshaped or permuted copy as PyTorch "
                 "trains the parameter; a broadcast or several slices of one, such as position embeddings, each "
                 "copy on its own, unlike PyTorch; a value computed from one, such as -exp(A_log) where the file "
                 "does not record the folding, in another parameterisation, unlike PyTorch), and ones folded from "
                 "buffers (rotary embeddings' cos and sin tables) are fixed in PyTorch: --freeze those; "
                 "torch.onnx.export(..., optimize=False) keeps the source's tensors",
                 t->path, nother, other, nother > 1 ? ", ..." : "");
        t->o->on_note(note, t->o->user);
    }
    if (nbuffers) {
        snprintf(note, sizeof note,
                 "%s: %d initializer(s) holding buffers of the source module (the graph signature's), a table the "
                 "exporter folded from them that every layer multiplies by (a rotary embedding's cos, sin), or a "
                 "constant it folded that no parameter made (one number, half precision, one its record says no "
                 "parameter made, or any where every parameter is accounted for), stay fixed as PyTorch keeps them (%s%s)", t->path, nbuffers,
                 buffer->name, nbuffers > 1 ? ", ..." : "");
        t->o->on_note(note, t->o->user);
    }
    if (nrestored) {
        snprintf(note, sizeof note,
                 "%s: %d bias(es) the exporter dropped for holding zeros (onnxscript's RemoveOptionalBias rules) "
                 "train from zero again as the graph signature names them (%s, of node '%s'); the written model "
                 "holds each as an initializer its node reads",
                 t->path, nrestored, restored->name, restored->split_node[0]);
        t->o->on_note(note, t->o->user);
    }
    /* parameters the signature names that the file lacks, bias-named ones
     * (likely dropped, where folded weights still train) listed first */
    char list[300] = "";
    size_t at = 0;
    int nmissing = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < m->ntorch; i++) {
            const char *tn = m->torch_name[i];
            bool bias = strstr(tn, "bias") != NULL;
            if (m->torch_buffer[i] || lt_torch_is_param(m, tn) || bias != (pass == 0))
                continue;
            if (nmissing++ < 3 && at < sizeof list) {
                int w = snprintf(list + at, sizeof list - at, "%s%s", at ? ", " : "", tn);
                at += w > 0 ? (size_t)w : 0;
            }
        }
    if (nmissing) {
        snprintf(note, sizeof note,
                 "%s: %d parameter(s) of the source module the graph signature names have no initializer of that "
                 "name (%s%s): the exporter's optimizer folded them into others (a weight's transpose, val_N, "
                 "trains as the weight would; a table gathered or expanded into copies of its values, such as a "
                 "relative position bias, trains as the table where the file records the folding, entry by entry "
                 "otherwise; a broadcast or several slices of one, such as position embeddings, train each copy on "
                 "its own, unlike PyTorch; a value computed from one through other operations, such as "
                 "16 * sigmoid(table), is not trained in its place where the file records the folding), merged two "
                 "modules' nodes into one, or dropped them; torch.onnx.export(..., optimize=False) keeps every one",
                 t->path, nmissing, list, nmissing > 3 ? ", ..." : "");
        t->o->on_note(note, t->o->user);
    }
    if (nfold) {
        const char *rule = strstr(fold->rule, "FuseBatchNormInto");
        int rl = (int)strcspn(rule, ", ");
        snprintf(note, sizeof note,
                 "%s: %d node(s) have a BatchNorm the exporter folded in (onnxscript rule %.*s; node '%s' of module "
                 "'%s'): they train as plain %s weights, with no batch statistics, unlike the source module; "
                 "torch.onnx.export(..., optimize=False) keeps the BatchNorm",
                 t->path, nfold, rl, rule, fold->name ? fold->name : "?", fold->scope ? fold->scope : "?",
                 lt_op_names[fold->op]);
        t->o->on_note(note, t->o->user);
    }
}

/* The optimizers update float32 and float64 weights: a half-precision one
 * is named before anything else is done (not frozen: frozen ones only run) */
static lt_status check_param_types(const lt_trainer *t, lt_err *err)
{
    for (int p = 0; p < t->tm->nparams; p++) {
        const lt_param *pp = &t->tm->params[p];
        lt_dtype dt = pp->data.dtype;
        if (pp->trainable && lt_dtype_is_float(dt) && dt != LT_F32 && dt != LT_F64)
            return lt_errf(err, LT_ERR_UNSUPPORTED,
                           "%s: parameter '%s' is %s; lantern trains float32 and float64 weights (convert the model to "
                           "float32, or --freeze it)", t->path, pp->name, lt_dtype_name(dt));
    }
    return LT_OK;
}

/* Parameters kept fixed for what they are (not by --freeze), listed for
 * the note that says so */
typedef struct fixed_list {
    char names[600];
    size_t used;
    int n;
} fixed_list;

static void fix_param(fixed_list *l, lt_param *pp)
{
    if (!pp->trainable)
        return;
    pp->trainable = false;
    char shown[200];
    int w = snprintf(l->names + l->used, sizeof l->names - l->used, "%s'%s'", l->n ? ", " : "",
                     lt_str_printable(pp->name, shown, sizeof shown));
    if (w > 0 && l->used + (size_t)w < sizeof l->names)
        l->used += (size_t)w;
    l->n++;
}

/* An initializer holding an infinity is a mask (a -inf causal or padding
 * mask the exporter wrote from a buffer), not a weight: PyTorch never trains
 * it, and a step with weight decay would turn it into nan. It stays fixed,
 * and a note names it. */
static void fix_infinite(lt_trainer *t)
{
    fixed_list l = {.n = 0};
    for (int p = 0; p < t->tm->nparams; p++) {
        lt_param *pp = &t->tm->params[p];
        const lt_tensor *d = &pp->data;
        if (!pp->trainable || !lt_dtype_is_float(d->dtype) || !d->data)
            continue;
        int64_t i = 0;
        while (i < d->numel && !isinf(lt_tensor_get_f64(d, i)))
            i++;
        if (i < d->numel)
            fix_param(&l, pp);
    }
    if (l.n && t->o->on_note) {
        char note[900];
        snprintf(note, sizeof note, "%s: %d initializer(s) hold -inf or inf, as masks do, and are kept fixed, not "
                 "trained: %s", t->path, l.n, l.names);
        t->o->on_note(note, t->o->user);
    }
}

static void quant_stats_in(lt_module *m, const lt_block *b, fixed_list *l)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        for (int j = 1; n->op == LT_OP_QUANTIZE_LINEAR && j < 3 && j < n->nin; j++)
            if (n->in[j] && n->in[j]->param >= 0 && lt_dtype_is_float(m->params[n->in[j]->param].data.dtype))
                fix_param(l, &m->params[n->in[j]->param]);
        for (int r = 0; r < n->nregions; r++)
            quant_stats_in(m, n->regions[r], l);
    }
}

/* A QuantizeLinear's scale and zero point are an observer's statistics (a
 * fake-quantized model's buffers, which torch's exporter writes as
 * initializers): PyTorch does not train them, and the straight-through
 * gradient gives them none. They stay fixed, and a note names them. */
static void fix_quant_stats(lt_trainer *t)
{
    fixed_list l = {.n = 0};
    quant_stats_in(t->tm, t->tm->main, &l);
    if (l.n && t->o->on_note) {
        char note[900];
        snprintf(note, sizeof note, "%s: %d initializer(s) are the scales or zero points of QuantizeLinear nodes (fake "
                 "quantization's observer statistics) and are kept fixed, not trained: %s", t->path, l.n, l.names);
        t->o->on_note(note, t->o->user);
    }
}

/* Float initializers the nodes read only as their settings (a Resize's
 * scales: ir/freeze_buffers.c) get no gradient; trained, weight decay
 * alone would move them. They stay fixed, and a note names the first. */
static void note_op_settings(const lt_trainer *t)
{
    const lt_module *m = t->tm;
    const lt_param *first = NULL;
    int n = 0;
    for (int p = 0; p < m->nparams; p++)
        if (m->params[p].op_setting && !n++)
            first = &m->params[p];
    if (!n || !t->o->on_note)
        return;
    char note[600], shown[200];
    snprintf(note, sizeof note, "%s: %d float initializer(s) are read only as operators' settings (a Resize's scales "
             "or roi, a Dropout's ratio, a loss's class weights), which get no gradient: they stay fixed, as PyTorch "
             "keeps them ('%s'%s)", t->path, n, lt_str_printable(first->name, shown, sizeof shown), n > 1 ? ", ..." : "");
    t->o->on_note(note, t->o->user);
}

/* A nan in a weight to be trained would only show as a diverged loss. */
static lt_status check_param_values(const lt_trainer *t, lt_err *err)
{
    for (int p = 0; p < t->tm->nparams; p++) {
        const lt_param *pp = &t->tm->params[p];
        const lt_tensor *d = &pp->data;
        if (!pp->trainable || !lt_dtype_is_float(d->dtype) || !d->data)
            continue;
        for (int64_t i = 0; i < d->numel; i++)
            if (isnan(lt_tensor_get_f64(d, i)))
                return lt_errf(err, LT_ERR_INVALID, "%s: initializer '%s' holds nan (element %lld); the weights to "
                               "train must be numbers (--init random replaces them, --freeze keeps one as it is)",
                               t->path, pp->name, (long long)i);
    }
    return LT_OK;
}

lt_status lt_trainer_rewrite(lt_model *tm, bool cpu, bool fuse, lt_err *err)
{
    /* cells into sums first (on every backend: a sum is cheaper than a
     * cell's zeroing, adding and copying out), so that the sums join the
     * elementwise chains around them; the sums of MaxPool gradients over
     * their planes taken from dy; for the CPU only, transposes of the last
     * two axes into the matrix products that read them, then scalar scales on
     * either side of a product into it, then attention's head split and merge
     * into the per-head products; the fused chains where the backend runs
     * them */
    lt_status st = lt_ir_acc_to_add(tm, NULL, err);
    if (st == LT_OK)
        st = lt_ir_sum_pool_grad(tm, NULL, err);
    if (st == LT_OK && cpu)
        st = lt_ir_fold_transpose(tm, NULL, err);
    if (st == LT_OK && cpu)
        st = lt_ir_fold_scale(tm, NULL, err);
    if (st == LT_OK && cpu)
        st = lt_ir_fold_heads(tm, NULL, err);
    if (st == LT_OK && fuse)
        st = lt_ir_fuse_elementwise(tm, err);
    return st;
}

lt_status lt_trainer_init(lt_trainer *t, const char *path, const lt_train_opts *o, lt_err *err)
{
    t->o = o;
    t->path = path;
    lt_pool_reset_peak(); /* --stats reports this trainer's peak */
    const char *gov = getenv("LANTERN_THREAD_GOV");
    lt_thread_gov_init(&t->gov, gov && !strcmp(gov, "0") ? 1 : 0); /* on unless LANTERN_THREAD_GOV=0 */
    lt_mplan_stats_reset();
    lt_status st = check_opts(o, err);
    if (st == LT_OK)
        st = lt_model_load(path, &t->tm, err);
    if (st == LT_OK)
        st = lt_model_load(path, &t->em, err);
    int ntied = 0;
    if (st == LT_OK && !o->no_tie)
        st = tie_copies(t, &ntied, err);
    if (st == LT_OK)
        st = check_copies(t, err);
    if (st == LT_OK)
        st = apply_freeze(t, err);
    if (st == LT_OK)
        st = check_folds(t, err);
    if (st == LT_OK && !o->train_constants)
        keep_constants(t);
    if (st == LT_OK)
        st = check_param_types(t, err);
    if (st != LT_OK)
        return st;
    note_merged(t);
    note_constant_weights(t);
    note_exporter_rewrites(t);
    fix_infinite(t);
    fix_quant_stats(t);
    note_op_settings(t);
    if (o->init_random) {
        init_random(t->tm, o->seed);
        t->em_stale = true;
    } else {
        st = check_param_values(t, err);
        if (st != LT_OK)
            return st;
    }
    lt_grad_opts g = {o->loss, 0, NULL, 0, o->output, o->set_ignore_index, o->ignore_index, o->npadding, o->padding};
    t->class_axis = o->class_axis;
    if (o->class_axis < -1 || o->class_axis > 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: the class axis is 1 or -1 (the last), or 0 to take it from the "
                       "labels; got %d", path, o->class_axis);
    if (o->loss != LT_LOSS_SOFTMAX_CROSS_ENTROPY && o->loss != LT_LOSS_NLL)
        t->class_axis = -1;
    else if (!t->class_axis && t->hint_rank > 0)
        st = lt_model_class_axis(t->em, o->output, t->hint_rank, t->hint_dims, &t->class_axis, err);
    else if (!t->class_axis)
        t->class_axis = -1;
    g.class_axis = t->class_axis;
    if (st == LT_OK)
        st = lt_ir_set_training(t->tm, err);
    int all_stats = st == LT_OK ? lt_ir_count_running_stats(t->tm) : 0;
    if (st == LT_OK)
        st = lt_model_grad(t->tm, &g, err);
    if (st == LT_OK)
        st = map_gradients(t, err);
    int nstats = 0;
    if (st == LT_OK)
        st = lt_ir_expose_running_stats(t->tm, &nstats, err);
    if (st == LT_OK && nstats < all_stats && o->on_note) {
        /* batch norms inside If/Loop/Scan bodies (or after an If) train on
         * batch statistics, but their running statistics stay where they
         * were: say so rather than export stale values silently */
        char note[512];
        snprintf(note, sizeof note,
                 "%s: %d of %d BatchNormalization running statistics sit inside If/Loop/Scan bodies or after an If; "
                 "training does not update them and the export keeps their imported values",
                 path, all_stats - nstats, all_stats);
        o->on_note(note, o->user);
    }
    if (st == LT_OK)
        st = lt_trainer_rewrite(t->tm, on_cpu(), fuses_elementwise(), err);
    if (st == LT_OK)
        st = lt_optim_new(&o->optim, t->ngrad, (const lt_tensor *const *)t->params, &t->opt, err);
    if (st == LT_OK)
        st = lt_session_new(t->tm, &t->ts, err);
    if (st == LT_OK)
        st = lt_session_new(t->em, &t->es, err);
    if (st == LT_OK)
        st = to_device(t, err);
    return st;
}

void lt_trainer_fini(lt_trainer *t)
{
    lt_thread_gov_fini(&t->gov);
    lt_session_free(t->ts);
    lt_session_free(t->es);
    lt_optim_free(t->opt);
    for (int p = 0; t->dparam && p < t->tm->nparams; p++)
        lt_tensor_release(&t->dparam[p]);
    lt_model_free(t->tm);
    lt_model_free(t->em);
    free(t->grad_param);
    free(t->params);
    free(t->grads);
    for (int g = 0; t->acc && g < t->ngrad; g++)
        lt_tensor_release(&t->acc[g]);
    free(t->acc);
    free(t->dparam);
    free(t->dparams);
    free(t->stat_param);
    free(t->stat_result);
    memset(t, 0, sizeof *t);
}

/* ---- a step ---- */

/* One run of the training program, its thread count set and its time
 * reported to the governor (per input element). */
/* A run that failed where the loss gives the targets the output's computed
 * shape (ad/loss.c, LT_AD_TARGETS_NODE) is data that does not fit the
 * model: the message names the targets first. */
static lt_status name_targets(const lt_trainer *t, lt_status st, int n, const char *const *names,
                              lt_value *const *inputs, lt_err *err)
{
    const lt_tensor *y = NULL;
    for (int i = 0; i < n && !y; i++)
        if (names[i] && !strcmp(names[i], "targets") && inputs[i])
            y = lt_value_tensor(inputs[i]);
    if (!y || !strstr(err->msg, "'" LT_AD_TARGETS_NODE "'"))
        return st;
    char shape[160];
    size_t k = 0;
    for (int d = 0; d < y->rank && k + 24 < sizeof shape; d++)
        k += (size_t)snprintf(shape + k, sizeof shape - k, "%s%lld", d ? "," : "", (long long)y->dims[d]);
    shape[k] = 0;
    const char *out = t->o->output ? t->o->output : lt_model_output_name(t->em, 0);
    char was[LT_ERR_MSG_MAX];
    size_t np = strlen(t->path);
    snprintf(was, sizeof was, "%s", err->msg + (!strncmp(err->msg, t->path, np) && !strncmp(err->msg + np, ": ", 2) ? np + 2 : 0));
    return lt_errf(err, LT_ERR_INVALID, "%s: the targets, [%s] in this batch, do not hold as many values as output "
                   "'%s' computes (%s): the loss compares them element by element", t->path, shape,
                   out ? out : "?", was);
}

static lt_status run_program(lt_trainer *t, int n, const char *const *names, lt_value *const *inputs,
                             lt_value **out, lt_err *err)
{
    double work = 0;
    for (int i = 0; i < n; i++) {
        const lt_tensor *x = inputs[i] ? lt_value_tensor(inputs[i]) : NULL;
        work += x ? (double)x->numel : 0;
    }
    lt_thread_gov_before(&t->gov);
    double t0 = lt_thread_gov_now();
    lt_status st = lt_session_run(t->ts, n, names, inputs, out, err);
    if (st == LT_OK)
        lt_thread_gov_after(&t->gov, lt_thread_gov_now() - t0, work);
    else
        st = name_targets(t, st, n, names, inputs, err);
    return st;
}

/* Adds the training program's last run to the trainer's traffic counts. */
static void count_run(lt_trainer *t)
{
    lt_copy_stats c;
    lt_session_copy_stats(t->ts, &c);
    t->copies.uploads += c.uploads;
    t->copies.downloads += c.downloads;
    t->copies.upload_bytes += c.upload_bytes;
    t->copies.download_bytes += c.download_bytes;
    t->copies.device_nodes += c.device_nodes;
    t->copies.host_nodes += c.host_nodes;
    t->runs++;
}

void lt_trainer_stats(const lt_trainer *t, lt_run_stats *out)
{
    memset(out, 0, sizeof *out);
    out->runs = t->runs;
    out->peak_bytes = lt_pool_peak_bytes();
    const lt_backend *be = lt_session_backend(t->ts);
    if (be && !be->host)
        out->peak_backend_bytes = be->peak_bytes(be);
    double n = t->runs > 0 ? (double)t->runs : 1.0;
    out->uploads = (double)t->copies.uploads / n;
    out->downloads = (double)t->copies.downloads / n;
    out->upload_bytes = (double)t->copies.upload_bytes / n;
    out->download_bytes = (double)t->copies.download_bytes / n;
    out->device_nodes = (double)t->copies.device_nodes / n;
    out->host_nodes = (double)t->copies.host_nodes / n;
    lt_mplan_stats m;
    lt_mplan_stats_get(&m);
    out->arena_bytes = m.arena_bytes;
    out->arena_peak_bytes = m.arena_peak;
    out->layouts = (int64_t)m.layouts;
    out->arenas = (int64_t)m.arenas;
    out->planned = (double)m.planned / n;
    out->inplace = (double)m.inplace / n;
    out->pooled = (double)m.pooled / n;
}

/* Gradient clipping as torch.nn.utils.clip_grad_norm_: the factor
 * max_norm / (norm + 1e-6), where it is below 1. */
static double clip_scale(double max_norm, double norm)
{
    double f = max_norm / (norm + 1e-6);
    return f < 1 ? f : 1;
}

/* A loss that is not finite: a batch whose labels all equal the ignore
 * index (a mean over no label) is bad data, named as such; anything else
 * diverged. */
static lt_status bad_loss(const lt_trainer *t, double loss, int n, const char *const *names,
                          lt_value *const *inputs, lt_err *err)
{
    const lt_train_opts *o = t->o;
    int64_t ign = o->set_ignore_index ? o->ignore_index : -100;
    for (int i = 0; (o->loss == LT_LOSS_SOFTMAX_CROSS_ENTROPY || o->loss == LT_LOSS_NLL) && i < n; i++) {
        const lt_tensor *y = lt_value_tensor(inputs[i]);
        if (strcmp(names[i], "labels") != 0 || !y || !lt_dtype_is_int(y->dtype) || y->numel < 1)
            continue;
        bool all = true;
        for (int64_t e = 0; e < y->numel && all; e++)
            all = lt_tensor_get_i64(y, e) == ign;
        if (all)
            return lt_errf(err, LT_ERR_INVALID, "%s: every label of the batch of step %lld is %lld, the ignore index: "
                           "its loss is a mean over no label (%g)", t->path, (long long)t->steps + 1, (long long)ign,
                           loss);
    }
    return lt_errf(err, LT_ERR_RUNTIME, "%s: the loss is %g (diverged: try a lower --lr or --clip-norm)", t->path, loss);
}

lt_status lt_trainer_step_in(lt_trainer *t, double lr, int n, const char *const *names, lt_value *const *inputs,
                             double *loss, lt_err *err)
{
    int nout = lt_model_num_outputs(t->tm);
    lt_value **out = calloc(nout, sizeof *out);
    if (!out)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status st = run_program(t, n, names, inputs, out, err);
    count_run(t);
    if (st == LT_OK)
        st = t->dev ? dev_results(t, nout, out, err) : lt_ir_store_running_stats(t->tm, nout, out, err);
    for (int g = 0; g < t->ngrad && st == LT_OK; g++) {
        t->grads[g] = lt_value_tensor(out[g + 1]);
        if (!t->grads[g])
            st = lt_errf(err, LT_ERR_INTERNAL, "%s: gradient %d is not a tensor", t->path, g);
    }
    if (st == LT_OK) {
        const lt_tensor *L = lt_value_tensor(out[0]);
        *loss = L && L->numel == 1 ? lt_tensor_get_f64(L, 0) : NAN;
        if (!isfinite(*loss))
            st = bad_loss(t, *loss, n, names, inputs, err);
    }
    double scale = 1, norm = 0;
    if (st == LT_OK && t->o->clip_norm > 0) {
        st = lt_grad_global_norm_on(t->dev, t->ngrad, t->grads, &norm, err);
        scale = clip_scale(t->o->clip_norm, norm);
    }
    if (st == LT_OK)
        st = lt_optim_step(t->opt, lr, scale, t->dev ? t->dparams : t->params, t->grads, err);
    for (int i = 0; i < nout; i++)
        lt_value_free(out[i]);
    free(out);
    if (st == LT_OK) {
        t->em_stale = true;
        t->host_stale = t->dev != NULL;
        t->steps++;
    }
    return st;
}

lt_status lt_trainer_accum_in(lt_trainer *t, int n, const char *const *names, lt_value *const *inputs,
                              double *loss, lt_err *err)
{
    int nout = lt_model_num_outputs(t->tm);
    lt_value **out = calloc(nout, sizeof *out);
    lt_status st = out ? LT_OK : lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (st == LT_OK && !t->acc) {
        if (!(t->acc = calloc((size_t)t->ngrad, sizeof *t->acc)))
            st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        for (int g = 0; g < t->ngrad && st == LT_OK; g++) {
            st = lt_tensor_alloc_on(&t->acc[g], t->dev, t->params[g]->dtype, t->params[g]->rank, t->params[g]->dims,
                                    err);
            if (st == LT_OK && t->dev)
                st = t->dev->accumulate(t->dev, &t->acc[g], NULL, err);
            else if (st == LT_OK)
                memset(t->acc[g].data, 0, lt_tensor_nbytes(&t->acc[g]));
        }
        t->nacc = 0;
    }
    if (st == LT_OK) {
        st = run_program(t, n, names, inputs, out, err);
        count_run(t);
    }
    if (st == LT_OK)
        st = t->dev ? dev_results(t, nout, out, err) : lt_ir_store_running_stats(t->tm, nout, out, err);
    if (st == LT_OK) {
        const lt_tensor *L = lt_value_tensor(out[0]);
        *loss = L && L->numel == 1 ? lt_tensor_get_f64(L, 0) : NAN;
        if (!isfinite(*loss))
            st = bad_loss(t, *loss, n, names, inputs, err);
    }
    for (int g = 0; g < t->ngrad && st == LT_OK; g++) {
        const lt_tensor *gr = lt_value_tensor(out[g + 1]);
        lt_tensor *a = &t->acc[g];
        if (!gr || gr->dtype != a->dtype || gr->numel != a->numel) {
            st = lt_errf(err, LT_ERR_INTERNAL, "%s: gradient %d does not match its parameter", t->path, g);
        } else if (t->dev) {
            st = t->dev->accumulate(t->dev, a, gr, err);
        } else if (a->dtype == LT_F64) {
            double *d = a->data;
            const double *src = gr->data;
            for (int64_t i = 0; i < a->numel; i++)
                d[i] += src[i];
        } else {
            float *d = a->data;
            const float *src = gr->data;
            for (int64_t i = 0; i < a->numel; i++)
                d[i] += src[i];
        }
    }
    for (int i = 0; out && i < nout; i++)
        lt_value_free(out[i]);
    free(out);
    if (st == LT_OK)
        t->nacc++;
    return st;
}

lt_status lt_trainer_apply_in(lt_trainer *t, double lr, lt_err *err)
{
    if (!t->acc || t->nacc < 1)
        return lt_errf(err, LT_ERR_INTERNAL, "%s: an optimizer step without gradients", t->path);
    double scale = 1.0 / (double)t->nacc;
    for (int g = 0; g < t->ngrad; g++)
        t->grads[g] = &t->acc[g];
    lt_status st = LT_OK;
    if (t->o->clip_norm > 0) {
        double norm = 0;
        st = lt_grad_global_norm_on(t->dev, t->ngrad, t->grads, &norm, err);
        scale *= clip_scale(t->o->clip_norm, norm * scale);
    }
    if (st == LT_OK)
        st = lt_optim_step(t->opt, lr, scale, t->dev ? t->dparams : t->params, t->grads, err);
    for (int g = 0; g < t->ngrad; g++) {
        if (t->dev) {
            lt_status zs = t->dev->accumulate(t->dev, &t->acc[g], NULL, err);
            if (st == LT_OK)
                st = zs;
        } else {
            memset(t->acc[g].data, 0, lt_tensor_nbytes(&t->acc[g]));
        }
    }
    t->nacc = 0;
    if (st == LT_OK) {
        t->em_stale = true;
        t->host_stale = t->dev != NULL;
        t->steps++;
    }
    return st;
}

lt_status lt_trainer_ckpt_state(lt_trainer *t, int64_t n, int64_t B, int64_t steps, lt_ckpt_state *c, lt_err *err)
{
    lt_module *m = t->tm;
    lt_status pst = lt_trainer_pull(t, err); /* what a save writes is the device's */
    if (pst != LT_OK)
        return pst;
    int nv = 0;
    size_t np = (size_t)m->nparams + 1;
    /* the values and their names share one block, so that freeing c->values frees both */
    lt_tensor **values = malloc((sizeof *values + sizeof(const char *)) * np);
    const char **vnames = values ? (const char **)(values + np) : NULL;
    const char **names = malloc(sizeof *names * (size_t)(t->ngrad + 1));
    if (!values || !names) {
        free(values);
        free(names);
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    for (int p = 0; p < m->nparams; p++)
        if (m->params[p].data.dtype != LT_STRING && m->params[p].data.numel > 0) {
            vnames[nv] = m->params[p].name;
            values[nv++] = &m->params[p].data;
        }
    uint64_t hash = lt_ckpt_model_hash(nv, vnames, (const lt_tensor *const *)values);
    for (int g = 0; g < t->ngrad; g++)
        names[g] = m->params[t->grad_param[g]].name;
    hash = hash * 31 ^ lt_ckpt_model_hash(t->ngrad, names, (const lt_tensor *const *)t->params);
    free(names);
    lt_ckpt_state z = {.model_hash = hash, .nvalues = nv, .values = values, .names = vnames, .n = t->ngrad,
                       .params = t->params, .opt = t->opt, .nsamples = n, .batch = B, .steps = steps};
    *c = z;
    return LT_OK;
}

/* ---- the public step API ---- */

lt_status lt_trainer_new(const char *model_path, const lt_train_opts *o, lt_trainer **out, lt_err *err)
{
    if (!model_path || !o || !out)
        return lt_errf(err, LT_ERR_INVALID, "lt_trainer_new: %s is NULL",
                       !model_path ? "model_path" : !o ? "o" : "out");
    *out = NULL;
    lt_trainer *t = calloc(1, sizeof *t);
    if (!t)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    t->own_opts = *o;
    t->own_opts.nfreeze = 0; /* the patterns are only read here */
    t->own_opts.freeze = NULL;
    t->own_opts.npadding = 0; /* so are the padding rows */
    t->own_opts.padding = NULL;
    lt_train_opts setup = *o;
    lt_status st = lt_trainer_init(t, model_path, &setup, err);
    t->o = &t->own_opts;
    if (st != LT_OK) {
        lt_trainer_free(t);
        return st;
    }
    t->path = NULL; /* the caller's string may go; messages name the model below */
    *out = t;
    return LT_OK;
}

void lt_trainer_free(lt_trainer *t)
{
    if (!t)
        return;
    lt_trainer_fini(t);
    free(t);
}

/* The arguments a step or an accumulate reads before the run checks the rest. */
static lt_status check_step_args(const char *fn, const lt_trainer *t, int n, const char *const *names,
                                 lt_value *const *inputs, lt_err *err)
{
    if (!t)
        return lt_errf(err, LT_ERR_INVALID, "%s: the trainer is NULL", fn);
    if (n < 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: n is %d; the count of inputs cannot be negative", fn, n);
    if (n > 0 && (!names || !inputs))
        return lt_errf(err, LT_ERR_INVALID, "%s: %s is NULL with %d input(s) given", fn, !names ? "names" : "inputs",
                       n);
    return LT_OK;
}

lt_status lt_trainer_step(lt_trainer *t, double lr, int n, const char *const *names, lt_value *const *inputs,
                          double *loss, lt_err *err)
{
    if (loss)
        *loss = NAN;
    lt_status cs = check_step_args("lt_trainer_step", t, n, names, inputs, err);
    if (cs != LT_OK)
        return cs;
    /* a batch of no samples has a loss of nan (a mean over nothing) */
    for (int i = 0; i < n; i++) {
        const lt_tensor *x = inputs[i] ? lt_value_tensor(inputs[i]) : NULL;
        if (x && x->rank >= 1 && x->dims[0] == 0)
            return lt_errf(err, LT_ERR_INVALID, "lt_trainer_step: input '%s' has a batch of 0 (dims[0] is 0); a step "
                           "needs at least one sample", names[i] ? names[i] : "?");
    }
    if (!(lr >= 0) || !isfinite(lr))
        return lt_errf(err, LT_ERR_INVALID, "learning rate must be >= 0, got %g", lr);
    double l = NAN;
    t->path = t->tm->path;
    lt_status st = lt_trainer_step_in(t, lr, n, names, inputs, &l, err);
    t->path = NULL;
    if (loss)
        *loss = l;
    return st;
}

lt_status lt_trainer_accumulate(lt_trainer *t, int n, const char *const *names, lt_value *const *inputs,
                                double *loss, lt_err *err)
{
    lt_status cs = check_step_args("lt_trainer_accumulate", t, n, names, inputs, err);
    if (cs != LT_OK)
        return cs;
    double l = NAN;
    t->path = t->tm->path;
    lt_status st = lt_trainer_accum_in(t, n, names, inputs, &l, err);
    t->path = NULL;
    if (loss)
        *loss = l;
    return st;
}

lt_status lt_trainer_apply(lt_trainer *t, double lr, lt_err *err)
{
    if (!t)
        return lt_errf(err, LT_ERR_INVALID, "lt_trainer_apply: the trainer is NULL");
    if (!(lr >= 0) || !isfinite(lr))
        return lt_errf(err, LT_ERR_INVALID, "learning rate must be >= 0, got %g", lr);
    if (!t->acc || t->nacc < 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: lt_trainer_apply without lt_trainer_accumulate since the last step",
                       t->tm->path);
    t->path = t->tm->path;
    lt_status st = lt_trainer_apply_in(t, lr, err);
    t->path = NULL;
    return st;
}

lt_model *lt_trainer_model(lt_trainer *t)
{
    lt_err ignored;
    if (t->em_stale)
        lt_trainer_sync(t, &ignored); /* a device that fails here fails the next step too */
    return t->em;
}

lt_status lt_trainer_forward(lt_trainer *t, int n, const char *const *names, lt_value *const *inputs,
                             lt_value **outputs, lt_err *err)
{
    if (!t)
        return lt_errf(err, LT_ERR_INVALID, "lt_trainer_forward: the trainer is NULL");
    if (t->em_stale) {
        lt_status st = lt_trainer_sync(t, err);
        if (st != LT_OK)
            return st;
    }
    return lt_session_run(t->es, n, names, inputs, outputs, err);
}

int64_t lt_trainer_num_steps(const lt_trainer *t) { return t->steps; }

lt_status lt_trainer_set_param(lt_trainer *t, const char *name, const lt_tensor *v, lt_err *err)
{
    if (!t || !name || !v)
        return lt_errf(err, LT_ERR_INVALID, "lt_trainer_set_param: %s is NULL",
                       !t ? "the trainer" : !name ? "name" : "the new value (v)");
    for (int p = 0; p < t->tm->nparams; p++)
        if (!strcmp(t->tm->params[p].name, name)) {
            /* the other parameters' host data must not go stale behind it */
            lt_status st = lt_trainer_pull(t, err);
            if (st == LT_OK)
                st = lt_model_set_param(t->tm, p, v, err);
            if (st == LT_OK)
                st = push_param(t, p, err);
            if (st == LT_OK)
                t->em_stale = true;
            return st;
        }
    return lt_errf(err, LT_ERR_INVALID, "%s: no parameter '%s'", t->tm->path, name);
}

lt_status lt_trainer_export(lt_trainer *t, const char *original_onnx, const char *out_path, lt_err *err)
{
    if (t->em_stale) {
        lt_status st = lt_trainer_sync(t, err);
        if (st != LT_OK)
            return st;
    }
    return lt_model_export(t->em, original_onnx, out_path, err);
}

lt_status lt_trainer_save_checkpoint(lt_trainer *t, const char *dir, lt_err *err)
{
    if (!t || !dir)
        return lt_errf(err, LT_ERR_INVALID, "lt_trainer_save_checkpoint: %s is NULL", !t ? "the trainer" : "dir");
    lt_ckpt_state c;
    /* no epochs here: the position is the step count, written as epochs of
     * one step each */
    lt_status st = lt_trainer_ckpt_state(t, 0, 0, 1, &c, err);
    if (st != LT_OK)
        return st;
    c.epoch = t->steps + 1;
    c.step = 0;
    c.global = t->steps;
    st = lt_ckpt_save(dir, &c, err);
    free((void *)c.values);
    return st;
}

lt_status lt_trainer_load_checkpoint(lt_trainer *t, const char *dir, lt_err *err)
{
    if (!t || !dir)
        return lt_errf(err, LT_ERR_INVALID, "lt_trainer_load_checkpoint: %s is NULL", !t ? "the trainer" : "dir");
    lt_ckpt_state c;
    lt_status st = lt_trainer_ckpt_state(t, 0, 0, 1, &c, err);
    if (st != LT_OK)
        return st;
    st = lt_ckpt_load(dir, &c, err);
    if (st == LT_OK)
        st = lt_trainer_push(t, err);
    if (st == LT_OK) {
        t->steps = c.global;
        t->em_stale = true;
    }
    free((void *)c.values);
    return st;
}
