/* The training loop as a library function: one model copy turned into its
 * forward/backward program, a second copy (forward only) that receives the
 * trained parameters for evaluation; seeded shuffling, batches gathered by a
 * prefetch thread, optimizer steps with a learning-rate schedule and
 * gradient clipping, per-epoch test loss and accuracy. Also evaluation on
 * its own (lantern eval). How data feeds the model: train_feed.c. */
#include "runtime.h"
#include "ir/train_mode.h"
#include "checkpoint.h"
#include "prefetch.h"
#include "train_feed.h"
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* uniform in [0, 1) with 53 random bits */
static double uniform01(uint64_t *state) { return (double)(splitmix64(state) >> 11) * 0x1.0p-53; }

lt_status lt_model_evaluate(lt_model *m, const lt_eval_opts *o, lt_eval_result *r, lt_err *err)
{
    lt_feed f;
    lt_dataset *d = NULL;
    lt_session *s = NULL;
    lt_loss_kind loss = o->loss == LT_LOSS_SUM ? LT_LOSS_SOFTMAX_CROSS_ENTROPY : o->loss;
    lt_status st = lt_dataset_open_opts(o->data, 1, &o->norm, &d, err);
    if (st == LT_OK)
        st = lt_feed_plan(m, d, loss, o->output, &f, err);
    if (st == LT_OK)
        st = lt_session_new(m, &s, err);
    if (st == LT_OK)
        st = lt_feed_evaluate(&f, s, m, d, o->limit, r, err);
    lt_session_free(s);
    lt_dataset_free(d);
    return st;
}

void lt_train_defaults(lt_train_opts *o)
{
    memset(o, 0, sizeof *o);
    o->data = "fashion-mnist";
    o->epochs = 1;
    o->batch = 64;
    lt_optim_defaults(LT_OPTIM_SGD, &o->optim);
    o->schedule.kind = LT_SCHEDULE_CONSTANT;
    o->schedule.lr = 0.01;
    o->schedule.gamma = 0.1;
    o->loss = LT_LOSS_SOFTMAX_CROSS_ENTROPY;
    o->seed = 1;
}

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

/* He-uniform (bound sqrt(6 / fan_in)) where a Conv, Gemm or MatMul tells the
 * fan-in, Glorot-uniform (sqrt(6 / (fan_in + fan_out)), PyTorch's fan
 * convention) elsewhere; rank 0 and 1 (biases) become zero. */
static void init_random(lt_module *m, uint64_t seed)
{
    uint64_t rng = seed ^ 0x696e69745f72616eull;
    for (int p = 0; p < m->nparams; p++) {
        lt_param *pp = &m->params[p];
        lt_tensor *t = &pp->data;
        if (!pp->trainable || (t->dtype != LT_F32 && t->dtype != LT_F64) || t->numel == 0)
            continue;
        double bound = 0;
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

/* ---- the loop ---- */

typedef struct trainer {
    const lt_train_opts *o;
    const char *path;
    lt_model *tm, *em; /* training program; forward model for evaluation */
    lt_session *ts, *es;
    lt_dataset *train, *test;
    lt_feed feed;
    int ngrad;
    int *grad_param;    /* module parameter of gradient output 1 + i */
    lt_tensor **params; /* the training model's parameters being updated */
    const lt_tensor **grads;
    lt_optim *opt;
    int64_t *order;
    uint64_t rng;
    lt_err *err;
} trainer;

static lt_status check_opts(const lt_train_opts *o, lt_err *err)
{
    if (o->epochs < 1)
        return lt_errf(err, LT_ERR_INVALID, "epochs must be >= 1, got %d", o->epochs);
    if (o->batch < 1 || o->batch > (1 << 20))
        return lt_errf(err, LT_ERR_INVALID, "batch size must be 1..1048576, got %lld", (long long)o->batch);
    if (!(o->schedule.lr > 0) || !isfinite(o->schedule.lr))
        return lt_errf(err, LT_ERR_INVALID, "learning rate must be > 0, got %g", o->schedule.lr);
    if (o->schedule.warmup < 0 || o->limit < 0 || o->test_limit < 0)
        return lt_errf(err, LT_ERR_INVALID, "warmup and limits must be >= 0");
    if (o->schedule.kind == LT_SCHEDULE_STEP && !(o->schedule.gamma > 0 && o->schedule.gamma <= 1))
        return lt_errf(err, LT_ERR_INVALID, "the step schedule's gamma must be in (0, 1], got %g", o->schedule.gamma);
    if (!(o->clip_norm >= 0) || !isfinite(o->clip_norm))
        return lt_errf(err, LT_ERR_INVALID, "clip norm must be >= 0, got %g", o->clip_norm);
    if (o->loss != LT_LOSS_SOFTMAX_CROSS_ENTROPY && o->loss != LT_LOSS_NLL && o->loss != LT_LOSS_MSE &&
        o->loss != LT_LOSS_BCE_LOGITS && o->loss != LT_LOSS_MODEL)
        return lt_errf(err, LT_ERR_INVALID, "training takes the losses softmax-cross-entropy, nll, mse, bce-logits and model");
    return LT_OK;
}

static lt_status apply_freeze(trainer *tr)
{
    for (int f = 0; f < tr->o->nfreeze; f++) {
        int hits = 0;
        for (int p = 0; p < tr->tm->nparams; p++)
            if (fnmatch(tr->o->freeze[f], tr->tm->params[p].name, 0) == 0) {
                tr->tm->params[p].trainable = false;
                hits++;
            }
        if (!hits)
            return lt_errf(tr->err, LT_ERR_INVALID, "%s: --freeze %s: the model has no parameter of that name",
                           tr->path, tr->o->freeze[f]);
    }
    return LT_OK;
}

/* Gradient outputs come in module parameter order: match each "<p>_grad" to
 * the next parameter of that name and type. */
static lt_status map_gradients(trainer *tr)
{
    lt_model *m = tr->tm;
    int nout = lt_model_num_outputs(m);
    /* loss, the gradients, then program state (running statistics) */
    tr->ngrad = 0;
    while (1 + tr->ngrad < nout) {
        const char *on = lt_model_output_name(m, 1 + tr->ngrad);
        size_t l = strlen(on);
        if (l <= 5 || strcmp(on + l - 5, "_grad") != 0)
            break;
        tr->ngrad++;
    }
    if (tr->ngrad < 1)
        return lt_errf(tr->err, LT_ERR_INVALID, "%s: nothing to train: no float parameter reaches the loss (or all are frozen)",
                       tr->path);
    tr->grad_param = calloc(tr->ngrad, sizeof *tr->grad_param);
    tr->params = calloc(tr->ngrad, sizeof *tr->params);
    tr->grads = calloc(tr->ngrad, sizeof *tr->grads);
    if (!tr->grad_param || !tr->params || !tr->grads)
        return lt_errf(tr->err, LT_ERR_NOMEM, "out of memory");
    int p = 0;
    for (int g = 0; g < tr->ngrad; g++) {
        const char *on = lt_model_output_name(m, g + 1);
        size_t l = strlen(on);
        for (; p < m->nparams; p++) {
            const lt_param *pp = &m->params[p];
            if (pp->trainable && strlen(pp->name) + 5 == l && strncmp(pp->name, on, l - 5) == 0 &&
                strcmp(on + l - 5, "_grad") == 0)
                break;
        }
        if (p == m->nparams)
            return lt_errf(tr->err, LT_ERR_INTERNAL, "%s: gradient output '%s' matches no parameter", tr->path, on);
        tr->grad_param[g] = p;
        tr->params[g] = &m->params[p].data;
        p++;
    }
    return LT_OK;
}

/* Both copies come from the same file, so their parameters line up. */
static lt_status check_copies(trainer *tr)
{
    if (tr->tm->nparams != tr->em->nparams)
        return lt_errf(tr->err, LT_ERR_INTERNAL, "%s: the two model copies differ", tr->path);
    for (int p = 0; p < tr->tm->nparams; p++)
        if (strcmp(tr->tm->params[p].name, tr->em->params[p].name) != 0 ||
            tr->tm->params[p].data.dtype != tr->em->params[p].data.dtype ||
            tr->tm->params[p].data.numel != tr->em->params[p].data.numel)
            return lt_errf(tr->err, LT_ERR_INTERNAL, "%s: the two model copies differ at parameter '%s'", tr->path,
                           tr->tm->params[p].name);
    return LT_OK;
}

static void copy_params(trainer *tr)
{
    for (int p = 0; p < tr->tm->nparams; p++) {
        const lt_tensor *src = &tr->tm->params[p].data;
        if (src->dtype != LT_STRING && src->numel > 0)
            memcpy(tr->em->params[p].data.data, src->data, (size_t)src->numel * lt_dtype_size(src->dtype));
    }
}

static lt_status setup(trainer *tr, const char *path)
{
    const lt_train_opts *o = tr->o;
    lt_status st = check_opts(o, tr->err);
    if (st == LT_OK)
        st = lt_model_load(path, &tr->tm, tr->err);
    if (st == LT_OK)
        st = lt_model_load(path, &tr->em, tr->err);
    if (st == LT_OK)
        st = check_copies(tr);
    if (st == LT_OK)
        st = lt_dataset_open_opts(o->data, 0, &o->norm, &tr->train, tr->err);
    if (st == LT_OK && lt_dataset_has_split(o->data, 1))
        st = lt_dataset_open_opts(o->data, 1, &o->norm, &tr->test, tr->err);
    if (st == LT_OK)
        st = lt_feed_plan(tr->em, tr->train, o->loss, o->output, &tr->feed, tr->err);
    if (st == LT_OK && tr->feed.fixed_batch && tr->feed.fixed_batch != o->batch)
        st = lt_errf(tr->err, LT_ERR_INVALID, "%s: input '%s' has a fixed batch size of %lld; use --batch %lld", path,
                     tr->feed.x_name, (long long)tr->feed.fixed_batch, (long long)tr->feed.fixed_batch);
    if (st == LT_OK)
        st = apply_freeze(tr);
    if (st != LT_OK)
        return st;
    if (o->init_random)
        init_random(tr->tm, o->seed);
    lt_grad_opts g = {o->loss, 0, NULL, 0, o->output};
    st = lt_ir_set_training(tr->tm, tr->err);
    int all_stats = st == LT_OK ? lt_ir_count_running_stats(tr->tm) : 0;
    if (st == LT_OK)
        st = lt_model_grad(tr->tm, &g, tr->err);
    if (st == LT_OK)
        st = map_gradients(tr);
    int nstats = 0;
    if (st == LT_OK)
        st = lt_ir_expose_running_stats(tr->tm, &nstats, tr->err);
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
        st = lt_optim_new(&o->optim, tr->ngrad, (const lt_tensor *const *)tr->params, &tr->opt, tr->err);
    if (st == LT_OK)
        st = lt_session_new(tr->tm, &tr->ts, tr->err);
    if (st == LT_OK)
        st = lt_session_new(tr->em, &tr->es, tr->err);
    return st;
}

static void shuffle(trainer *tr, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(splitmix64(&tr->rng) % (uint64_t)(i + 1));
        int64_t t = tr->order[i];
        tr->order[i] = tr->order[j];
        tr->order[j] = t;
    }
}

/* One optimizer step on the batch in x, y; *loss gets the batch's loss. */
static lt_status train_step(trainer *tr, lt_feed_batch *b, double lr, double *loss)
{
    const char *names[2] = {tr->feed.x_name, tr->feed.y_name};
    lt_value *in[2] = {b->x, b->y ? b->y : b->raw};
    int nout = lt_model_num_outputs(tr->tm);
    lt_value **out = calloc(nout, sizeof *out);
    if (!out)
        return lt_errf(tr->err, LT_ERR_NOMEM, "out of memory");
    lt_status st = lt_session_run(tr->ts, 2, names, in, out, tr->err);
    if (st == LT_OK)
        st = lt_ir_store_running_stats(tr->tm, nout, out, tr->err);
    for (int g = 0; g < tr->ngrad && st == LT_OK; g++) {
        tr->grads[g] = lt_value_tensor(out[g + 1]);
        if (!tr->grads[g])
            st = lt_errf(tr->err, LT_ERR_INTERNAL, "%s: gradient %d is not a tensor", tr->path, g);
    }
    if (st == LT_OK) {
        const lt_tensor *L = lt_value_tensor(out[0]);
        *loss = L && L->numel == 1 ? lt_tensor_get_f64(L, 0) : NAN;
        if (!isfinite(*loss))
            st = lt_errf(tr->err, LT_ERR_RUNTIME, "%s: the loss is %g (diverged: try a lower --lr or --clip-norm)",
                         tr->path, *loss);
    }
    double scale = 1;
    if (st == LT_OK && tr->o->clip_norm > 0) {
        double norm = lt_grad_global_norm(tr->ngrad, tr->grads);
        if (norm > tr->o->clip_norm)
            scale = tr->o->clip_norm / norm;
    }
    if (st == LT_OK)
        st = lt_optim_step(tr->opt, lr, scale, tr->params, tr->grads, tr->err);
    for (int i = 0; i < nout; i++)
        lt_value_free(out[i]);
    free(out);
    return st;
}

/* The checkpoint's view of the run (position fields left for the caller):
 * every parameter's values, frozen ones and running statistics included,
 * and the optimizer of the trained ones. c->values (which holds c->names
 * too) is the caller's to free. */
static lt_status ckpt_state(trainer *tr, int64_t n, int64_t B, int64_t steps, lt_ckpt_state *c)
{
    lt_module *m = tr->tm;
    int nv = 0;
    size_t np = (size_t)m->nparams + 1;
    /* the values and their names share one block, so that freeing c->values frees both */
    lt_tensor **values = malloc((sizeof *values + sizeof(const char *)) * np);
    const char **vnames = values ? (const char **)(values + np) : NULL;
    const char **names = malloc(sizeof *names * (size_t)(tr->ngrad + 1));
    if (!values || !names) {
        free(values);
        free(names);
        return lt_errf(tr->err, LT_ERR_NOMEM, "out of memory");
    }
    for (int p = 0; p < m->nparams; p++)
        if (m->params[p].data.dtype != LT_STRING && m->params[p].data.numel > 0) {
            vnames[nv] = m->params[p].name;
            values[nv++] = &m->params[p].data;
        }
    uint64_t hash = lt_ckpt_model_hash(nv, vnames, (const lt_tensor *const *)values);
    for (int g = 0; g < tr->ngrad; g++)
        names[g] = m->params[tr->grad_param[g]].name;
    hash = hash * 31 ^ lt_ckpt_model_hash(tr->ngrad, names, (const lt_tensor *const *)tr->params);
    free(names);
    lt_ckpt_state z = {.model_hash = hash, .nvalues = nv, .values = values, .names = vnames, .n = tr->ngrad,
                       .params = tr->params, .opt = tr->opt, .nsamples = n, .batch = B, .steps = steps,
                       .order = tr->order};
    *c = z;
    return LT_OK;
}

static lt_status save_checkpoint(trainer *tr, lt_ckpt_state *c, int e, int64_t step, int64_t global,
                                 double loss_sum, int64_t seen)
{
    c->epoch = e;
    c->step = step;
    c->global = global;
    c->rng = tr->rng;
    c->loss_sum = loss_sum;
    c->seen = seen;
    return lt_ckpt_save(tr->o->checkpoint_dir, c, tr->err);
}

static int stop_requested(const lt_train_opts *o) { return o->stop && *o->stop; }

/* The batches of an epoch: two full-size buffers that the prefetch thread
 * and the training step take turns on, and one for a smaller last batch. */
typedef struct batches {
    lt_feed_batch full[2], last;
    lt_prefetch *pf;
    int64_t n, B, steps;
} batches;

static lt_feed_batch *batch_of(batches *bs, int64_t s)
{
    return s * bs->B + bs->B <= bs->n ? &bs->full[s % 2] : &bs->last;
}

/* starts gathering step s's samples (in the epoch's order) */
static lt_status submit(trainer *tr, batches *bs, int64_t s)
{
    lt_feed_batch *b = batch_of(bs, s);
    return lt_prefetch_submit(bs->pf, tr->order + s * bs->B, b->n, &b->x->t, &b->raw->t, tr->err);
}

static lt_status batches_new(trainer *tr, batches *bs, int64_t n, int64_t B)
{
    bs->n = n;
    bs->B = B;
    /* a model with a fixed batch size cannot take the last, smaller batch */
    bs->steps = tr->feed.fixed_batch ? n / B : (n + B - 1) / B;
    if (bs->steps < 1)
        return lt_errf(tr->err, LT_ERR_INVALID, "%s: %lld training samples do not fill one batch of %lld", tr->path,
                       (long long)n, (long long)B);
    lt_status st = lt_feed_batch_new(&tr->feed, tr->train, B, &bs->full[0], tr->err);
    if (st == LT_OK && bs->steps > 1)
        st = lt_feed_batch_new(&tr->feed, tr->train, B, &bs->full[1], tr->err);
    if (st == LT_OK && n % B && !tr->feed.fixed_batch)
        st = lt_feed_batch_new(&tr->feed, tr->train, n % B, &bs->last, tr->err);
    if (st == LT_OK)
        st = lt_prefetch_new(tr->train, &bs->pf, tr->err);
    return st;
}

static void batches_free(batches *bs)
{
    lt_prefetch_free(bs->pf);
    lt_feed_batch_free(&bs->full[0]);
    lt_feed_batch_free(&bs->full[1]);
    lt_feed_batch_free(&bs->last);
}

static lt_status run_epochs(trainer *tr)
{
    const lt_train_opts *o = tr->o;
    int64_t n = lt_dataset_size(tr->train);
    if (o->limit > 0 && o->limit < n)
        n = o->limit;
    int64_t B = o->batch < n ? o->batch : n;
    batches bs = {0};
    lt_status st = batches_new(tr, &bs, n, B);
    int64_t steps = bs.steps;
    tr->order = st == LT_OK ? malloc(sizeof *tr->order * (size_t)n) : NULL;
    if (st == LT_OK && !tr->order)
        st = lt_errf(tr->err, LT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; st == LT_OK && i < n; i++)
        tr->order[i] = i;
    tr->rng = o->seed ^ 0x73687566666c6521ull;
    lt_schedule sched = o->schedule;
    sched.total = steps * o->epochs;
    double t0 = now_s(), train_time = 0;
    int64_t global = 0;
    lt_ckpt_state ck = {0};
    if (st == LT_OK && o->checkpoint_dir)
        st = ckpt_state(tr, n, B, steps, &ck);
    /* the checkpoint records the run's options; --resume refuses others */
    char *run_text = NULL;
    if (st == LT_OK && o->checkpoint_dir && !(run_text = lt_ckpt_run_text(tr->path, o)))
        st = lt_errf(tr->err, LT_ERR_NOMEM, "out of memory");
    ck.run = run_text;
    int e0 = 1;
    if (st == LT_OK && o->resume && !o->checkpoint_dir)
        st = lt_errf(tr->err, LT_ERR_INVALID, "resuming needs the checkpoint folder (--checkpoint-dir)");
    else if (st == LT_OK && o->resume) {
        st = lt_ckpt_load(o->checkpoint_dir, &ck, tr->err);
        if (st == LT_OK) {
            /* an epoch that was over continues with the next one's shuffle */
            e0 = (int)ck.epoch + (ck.step == steps);
            if (ck.step == steps)
                ck.step = 0;
            global = ck.global;
            tr->rng = ck.rng;
            copy_params(tr); /* the evaluation copy, in case no epoch is left */
        }
    }
    int *stopped = o->stopped, stop_dummy = 0;
    if (!stopped)
        stopped = &stop_dummy;
    *stopped = 0;
    for (int e = e0; e <= o->epochs && st == LT_OK && !*stopped; e++) {
        int mid = o->resume && e == e0 && ck.step > 0; /* resumed inside this epoch: already shuffled */
        if (!mid)
            shuffle(tr, n);
        double te = now_s(), loss_sum = mid ? ck.loss_sum : 0, lr = 0;
        int64_t seen = mid ? ck.seen : 0, s0 = mid ? ck.step : 0;
        st = submit(tr, &bs, s0);
        for (int64_t s = s0; s < steps && st == LT_OK; s++) {
            lt_feed_batch *b = batch_of(&bs, s);
            double loss = 0;
            lr = lt_schedule_lr(&sched, global);
            st = lt_prefetch_wait(bs.pf, tr->err);
            if (st == LT_OK && s + 1 < steps)
                st = submit(tr, &bs, s + 1);
            if (st == LT_OK)
                st = lt_feed_targets(&tr->feed, b, tr->err);
            if (st == LT_OK)
                st = train_step(tr, b, lr, &loss);
            if (st != LT_OK)
                break;
            global++;
            loss_sum += loss * (double)b->n;
            seen += b->n;
            if (o->on_step) {
                double now = now_s(), ep = now - te, run = train_time + ep;
                lt_train_progress p = {e, o->epochs, s + 1, steps, global, sched.total, loss_sum / (double)seen, loss, lr,
                                       ep > 0 ? (double)seen / ep : 0, now - t0,
                                       run / (double)global * (double)(sched.total - global)};
                o->on_step(&p, o->user);
            }
            /* the epoch's last step is followed by the epoch-end checkpoint */
            int stop = stop_requested(o);
            if (s + 1 < steps && o->checkpoint_dir &&
                (stop || (o->checkpoint_every > 0 && global % o->checkpoint_every == 0)))
                st = save_checkpoint(tr, &ck, e, s + 1, global, loss_sum, seen);
            if (st == LT_OK && stop && s + 1 < steps) {
                *stopped = 1;
                break;
            }
        }
        /* nothing may still be filling a buffer (or reading the order) */
        lt_err ignored;
        lt_prefetch_wait(bs.pf, &ignored);
        if (st != LT_OK || *stopped)
            break;
        double secs = now_s() - te;
        train_time += secs;
        copy_params(tr);
        lt_epoch_result r = {e, o->epochs, loss_sum / (double)seen, {NAN, NAN, 0, 0}, lr, secs, global};
        if (tr->test)
            st = lt_feed_evaluate(&tr->feed, tr->es, tr->em, tr->test, o->test_limit, &r.test, tr->err);
        if (st == LT_OK && o->on_epoch)
            o->on_epoch(&r, o->user);
        if (st == LT_OK && o->checkpoint_dir)
            st = save_checkpoint(tr, &ck, e, steps, global, loss_sum, seen);
        if (st == LT_OK && stop_requested(o) && e < o->epochs)
            *stopped = 1;
    }
    free((void *)ck.values);
    free(run_text);
    batches_free(&bs);
    return st;
}

lt_status lt_train(const char *model_path, const lt_train_opts *o, lt_model **trained, lt_err *err)
{
    *trained = NULL;
    trainer tr = {.o = o, .path = model_path, .err = err};
    /* one run at a time per checkpoint folder, held for the whole run */
    int lock = -1;
    lt_status st = o->checkpoint_dir ? lt_ckpt_lock(o->checkpoint_dir, &lock, err) : LT_OK;
    if (st == LT_OK)
        st = setup(&tr, model_path);
    if (st == LT_OK)
        st = run_epochs(&tr);
    lt_ckpt_unlock(lock);
    lt_session_free(tr.ts);
    lt_session_free(tr.es);
    lt_optim_free(tr.opt);
    lt_dataset_free(tr.train);
    lt_dataset_free(tr.test);
    lt_model_free(tr.tm);
    free(tr.grad_param);
    free(tr.params);
    free(tr.grads);
    free(tr.order);
    if (st != LT_OK) {
        lt_model_free(tr.em);
        return st;
    }
    *trained = tr.em;
    return LT_OK;
}
