/* The training loop as a library function: one model copy turned into its
 * forward/backward program, a second copy (forward only) that receives the
 * trained parameters for evaluation; seeded shuffling, batches gathered by a
 * prefetch thread, optimizer steps with a learning-rate schedule and
 * gradient clipping, per-epoch test loss and accuracy. Also evaluation on
 * its own (lantern eval). How data feeds the model: train_feed.c. */
#include "../runtime/runtime.h"
#include "checkpoint.h"
#include "norm_meta.h"
#include "prefetch.h"
#include "train_arrays.h"
#include "train_feed.h"
#include "dataset_impl.h"
#include "trainer.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* lantern eval on an npz whose arrays feed the model by name (train_arrays.c) */
static lt_status evaluate_arrays(lt_model *m, const lt_eval_opts *o, lt_loss_kind loss, lt_eval_result *r, bool *done,
                                 lt_err *err)
{
    lt_arrays *a = NULL;
    lt_afeed f;
    lt_session *s = NULL;
    lt_status st = lt_afeed_for_eval(m, o, loss, &a, &f, err);
    *done = a != NULL;
    if (st == LT_OK && a)
        st = lt_session_new(m, &s, err);
    if (st == LT_OK && a)
        st = lt_afeed_evaluate(&f, s, m, o->limit, r, err);
    lt_session_free(s);
    lt_arrays_free(a);
    return st;
}

lt_status lt_model_evaluate(lt_model *m, const lt_eval_opts *o, lt_eval_result *r, lt_err *err)
{
    if (!m || !o || !r)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_evaluate: %s is NULL", !m ? "the model" : !o ? "o" : "r");
    if (!o->data)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_evaluate: o->data is NULL (no dataset named)");
    lt_feed f;
    lt_dataset *d = NULL;
    lt_session *s = NULL;
    lt_loss_kind loss = o->loss == LT_LOSS_SUM ? LT_LOSS_SOFTMAX_CROSS_ENTROPY : o->loss;
    bool done = false;
    lt_status st = evaluate_arrays(m, o, loss, r, &done, err);
    if (st != LT_OK || done)
        return st;
    lt_dataset_opts dopt = o->norm;
    if (!o->no_model_norm)
        st = lt_norm_fill_from_model(m, &dopt, err);
    if (!dopt.channels)
        dopt.channels = lt_feed_image_channels(m);
    if (st == LT_OK)
        st = lt_dataset_open_opts(o->data, 1, &dopt, &d, err);
    if (st == LT_OK)
        st = lt_feed_plan(m, d, loss, o->output, o->set_ignore_index ? o->ignore_index : -100, &f, err);
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

/* ---- the loop ---- */

typedef struct trainer {
    const lt_train_opts *o;
    lt_train_opts *own_opts; /* o, the caller's copied (the normalisation filled in from the model) */
    const char *path;
    lt_trainer t; /* the model, its training program, the optimizer */
    const lt_dataset *train, *test; /* the caller's, or opened here (owned) */
    lt_dataset *own_train, *own_test;
    lt_feed feed;
    /* npz named inputs (train_arrays.c) instead of feed: use_arrays set */
    bool use_arrays;
    lt_arrays *atrain, *atest;
    lt_afeed afeed, atest_feed;
    int64_t *order;
    uint64_t rng;
    lt_ds_aug aug; /* --augment; aug.epoch is the epoch being gathered */
    bool augment;
    /* validation: nval samples held out of the training split (val, sorted),
     * the others (train_idx, sorted) are what an epoch shuffles */
    int64_t nval, *val, *train_idx;
    lt_tensor *best; /* --save-best: the best epoch's values of the forward copy */
    int nbest;
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
    if (o->val_split != 0 && !(o->val_split > 0 && o->val_split < 1))
        return lt_errf(err, LT_ERR_INVALID, "the validation split must be a fraction in (0, 1), got %g", o->val_split);
    if ((o->save_best || o->early_stop) && !(o->val_split > 0))
        return lt_errf(err, LT_ERR_INVALID, "saving the best epoch and stopping early need validation data (a "
                       "validation split)");
    if (o->early_stop < 0)
        return lt_errf(err, LT_ERR_INVALID, "early stop must be >= 0 epochs, got %d", o->early_stop);
    return LT_OK;
}

/* An npz whose arrays the x / y feed does not fit (named inputs, other
 * element types, ragged arrays, ...) feeds through train_arrays.c. */
static lt_status setup_arrays(trainer *tr, bool *taken)
{
    const lt_train_opts *o = tr->o;
    *taken = false;
    if (o->train_set)
        return LT_OK;
    const char *file = o->data + 4;
    lt_status st = tr->atrain ? LT_OK : lt_arrays_open_spec(o->data, 0, &tr->atrain, tr->err);
    if (st != LT_OK || !tr->atrain)
        return st;
    if (tr->atrain->samples < 1)
        return lt_errf(tr->err, LT_ERR_INVALID, "%s: the training arrays hold no samples", file);
    if (!lt_afeed_wanted(tr->t.em, tr->atrain, o)) {
        lt_arrays_free(tr->atrain);
        tr->atrain = NULL;
        return LT_OK;
    }
    *taken = true;
    tr->use_arrays = true;
    if (tr->augment)
        return lt_errf(tr->err, LT_ERR_INVALID, "%s: --augment moves the pixels of x / y image data; arrays fed to the "
                       "model's inputs by name are fed as they are", o->data);
    if (o->norm.nmean || o->norm.nstd)
        return lt_errf(tr->err, LT_ERR_INVALID, "%s: --mean / --std apply to x / y data; the named-input feed takes "
                       "the arrays as they are", file);
    st = lt_afeed_plan(tr->t.em, tr->atrain, o, &tr->afeed, tr->err);
    if (st == LT_OK)
        st = lt_afeed_check_samples(&tr->afeed, tr->err);
    if (st == LT_OK && lt_arrays_spec_has_split(o->data, 1)) {
        st = lt_arrays_open_spec(o->data, 1, &tr->atest, tr->err);
        if (st == LT_OK && tr->atest->samples < 1)
            st = lt_errf(tr->err, LT_ERR_INVALID, "%s: the test arrays hold no samples", file);
        if (st == LT_OK)
            st = lt_afeed_plan(tr->t.em, tr->atest, o, &tr->atest_feed, tr->err);
    }
    if (st == LT_OK && (!tr->afeed.batched || tr->afeed.ragged) && o->on_note) {
        char note[512];
        const char *rag = NULL;
        for (int i = 0; i < tr->afeed.nslot && !rag; i++)
            rag = tr->afeed.slot[i].src->splits ? tr->afeed.slot[i].src->member : NULL;
        snprintf(note, sizeof note, "%s: one sample per program run (%s%s%s); a step averages the gradients of "
                 "--batch %lld samples", tr->path, rag ? "array '" : "the inputs have no batch axis", rag ? rag : "",
                 rag ? "' is ragged" : "", (long long)o->batch);
        o->on_note(note, o->user);
    }
    if (st == LT_OK && tr->afeed.fixed_batch && tr->afeed.fixed_batch != o->batch) {
        int b = 0;
        while (b + 1 < tr->afeed.nslot && tr->afeed.slot[b].axis < 0)
            b++; /* the first input fed batches */
        st = lt_errf(tr->err, LT_ERR_INVALID, "%s: input '%s' has a fixed batch size of %lld; use --batch %lld",
                     tr->path, tr->afeed.slot[b].name, (long long)tr->afeed.fixed_batch,
                     (long long)tr->afeed.fixed_batch);
    }
    return st;
}

/* The test split must hold samples and labels of the training split's kind. */
static lt_status check_splits(const char *spec, const lt_dataset *a, const lt_dataset *b, lt_err *err)
{
    int ra, rb, ta, tb;
    int64_t da[LT_MAX_RANK], db[LT_MAX_RANK], ea[LT_MAX_RANK], eb[LT_MAX_RANK];
    lt_dataset_sample_shape(a, &ra, da);
    lt_dataset_sample_shape(b, &rb, db);
    lt_dataset_target_shape(a, &ta, ea);
    lt_dataset_target_shape(b, &tb, eb);
    char sa[128], sb[128];
    lt_ds_shape_str(ra, da, sa, sizeof sa);
    lt_ds_shape_str(rb, db, sb, sizeof sb);
    if (ra != rb || memcmp(da, db, sizeof *da * (size_t)ra) != 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: the test split's samples are %s, the training split's %s", spec, sb,
                       sa);
    if (lt_dataset_has_classes(a) != lt_dataset_has_classes(b) || ta != tb ||
        memcmp(ea, eb, sizeof *ea * (size_t)ta) != 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: the test split has %s, the training split %s", spec,
                       lt_dataset_has_classes(b) ? "class labels" : "float targets",
                       lt_dataset_has_classes(a) ? "class labels" : "float targets of another shape");
    return LT_OK;
}

/* npz or npy arrays: opened before the trainer, whose program reads class
 * scores on the axis the labels' shape fits (lt_train_opts.class_axis 0);
 * a file that does not open is reported where the arrays are set up */
static void labels_hint(trainer *tr)
{
    const lt_train_opts *o = tr->o;
    lt_err ignored;
    if (o->train_set || (o->loss != LT_LOSS_SOFTMAX_CROSS_ENTROPY && o->loss != LT_LOSS_NLL) ||
        lt_arrays_open_spec(o->data, 0, &tr->atrain, &ignored) != LT_OK || !tr->atrain)
        return;
    const lt_ds_array *y = lt_arrays_find(tr->atrain, o->labels ? o->labels : "y");
    if (!y || y->shared)
        return;
    int64_t sd[LT_MAX_RANK];
    lt_ds_array_sample(y, 0, sd);
    int sr = lt_ds_array_sample_rank(y);
    tr->t.hint_rank = sr + 1;
    tr->t.hint_dims[0] = -1;
    for (int d = 0; d < sr; d++)
        tr->t.hint_dims[d + 1] = y->splits && d == 0 ? -1 : sd[d];
}

static lt_status setup(trainer *tr, const char *path)
{
    const lt_train_opts *o = tr->o;
    lt_status st = check_opts(o, tr->err);
    bool arrays = false;
    if (st == LT_OK)
        labels_hint(tr);
    if (st == LT_OK)
        st = lt_trainer_init(&tr->t, path, o, tr->err);
    if (st == LT_OK)
        tr->own_opts->class_axis = tr->t.class_axis; /* the feed's and the test figures' too */
    if (st == LT_OK)
        st = lt_augment_parse(o->augment, &tr->aug.a, tr->err);
    tr->augment = lt_augment_on(&tr->aug.a);
    tr->aug.seed = o->seed;
    if (st == LT_OK)
        st = setup_arrays(tr, &arrays);
    if (st != LT_OK || arrays)
        return st;
    if (o->train_set) {
        tr->train = o->train_set;
        tr->test = o->test_set;
    } else if (st == LT_OK) {
        /* a model that carries the normalisation it was trained with keeps
         * it, where --mean / --std do not say otherwise */
        lt_train_opts *own = tr->own_opts;
        lt_dataset_opts given = own->norm;
        st = lt_norm_fill_from_model(tr->t.em, &own->norm, tr->err);
        if (st == LT_OK && o->on_note && (own->norm.nmean != given.nmean || own->norm.nstd != given.nstd)) {
            char note[512];
            snprintf(note, sizeof note, "%s: the samples are normalised with the %s%s%s stored in the model (%s%s%s); "
                     "--mean / --std replace them", path, own->norm.nmean != given.nmean ? "mean" : "",
                     own->norm.nmean != given.nmean && own->norm.nstd != given.nstd ? " and " : "",
                     own->norm.nstd != given.nstd ? "std" : "", own->norm.nmean != given.nmean ? LT_META_MEAN : "",
                     own->norm.nmean != given.nmean && own->norm.nstd != given.nstd ? ", " : "",
                     own->norm.nstd != given.nstd ? LT_META_STD : "");
            o->on_note(note, o->user);
        }
        /* image folders: the model's channel count, the test split the training split's */
        lt_dataset_opts dopt = o->norm;
        if (!dopt.channels)
            dopt.channels = lt_feed_image_channels(tr->t.em);
        if (st == LT_OK)
            st = lt_dataset_open_opts(o->data, 0, &dopt, &tr->own_train, tr->err);
        if (st == LT_OK && !dopt.channels && !strncmp(o->data, "images=", 7))
            dopt.channels = (int)tr->own_train->dims[0];
        if (st == LT_OK && lt_dataset_has_split(o->data, 1))
            st = lt_dataset_open_opts(o->data, 1, &dopt, &tr->own_test, tr->err);
        tr->train = tr->own_train;
        tr->test = tr->own_test;
        if (st == LT_OK && tr->test && lt_dataset_size(tr->test) < 1)
            st = lt_errf(tr->err, LT_ERR_INVALID, "%s: the test split holds no samples", o->data);
        if (st == LT_OK && tr->test)
            st = check_splits(o->data, tr->train, tr->test, tr->err);
    }
    if (st == LT_OK && tr->augment)
        st = lt_ds_aug_check(tr->train, &tr->aug.a, o->train_set ? "the training set" : o->data, tr->err);
    if (st == LT_OK)
        st = lt_feed_plan(tr->t.em, tr->train, o->loss, o->output, o->set_ignore_index ? o->ignore_index : -100,
                          &tr->feed, tr->err);
    if (st == LT_OK && tr->feed.fixed_batch && tr->feed.fixed_batch != o->batch)
        st = lt_errf(tr->err, LT_ERR_INVALID, "%s: input '%s' has a fixed batch size of %lld; use --batch %lld", path,
                     tr->feed.x_name, (long long)tr->feed.fixed_batch, (long long)tr->feed.fixed_batch);
    return st;
}

static void shuffle(trainer *tr, int64_t n)
{
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)(lt_train_rand(&tr->rng) % (uint64_t)(i + 1));
        int64_t t = tr->order[i];
        tr->order[i] = tr->order[j];
        tr->order[j] = t;
    }
}

/* One optimizer step of the named-input feed on samples idx[0..k): one
 * program run for a batch, or one run per sample with the gradients
 * accumulated (no batch axis, ragged arrays); *loss gets the batch's loss,
 * the mean of the runs' losses. */
static lt_status array_step(trainer *tr, const int64_t *idx, int64_t k, double lr, double *loss)
{
    const lt_afeed *f = &tr->afeed;
    const char *names[LT_AFEED_MAX + 1];
    lt_value *in[LT_AFEED_MAX + 1];
    int64_t run = lt_afeed_run_size(f, k);
    lt_status st = LT_OK;
    if (run == k) {
        st = lt_afeed_make(f, idx, k, names, in, tr->err);
        if (st == LT_OK)
            st = lt_trainer_step_in(&tr->t, lr, f->nslot, names, in, loss, tr->err);
        lt_afeed_free_values(f, in);
        return st;
    }
    double sum = 0;
    for (int64_t i = 0; i < k && st == LT_OK; i++) {
        double l = 0;
        st = lt_afeed_make(f, idx + i, 1, names, in, tr->err);
        if (st == LT_OK)
            st = lt_trainer_accum_in(&tr->t, f->nslot, names, in, &l, tr->err);
        lt_afeed_free_values(f, in);
        sum += l;
    }
    if (st == LT_OK)
        st = lt_trainer_apply_in(&tr->t, lr, tr->err);
    *loss = sum / (double)k;
    return st;
}

/* One optimizer step on the batch in x, y; *loss gets the batch's loss. */
static lt_status train_step(trainer *tr, lt_feed_batch *b, double lr, double *loss)
{
    const char *names[2] = {tr->feed.x_name, tr->feed.y_name};
    lt_value *in[2];
    lt_feed_inputs(&tr->feed, b, in);
    return lt_trainer_step_in(&tr->t, lr, 2, names, in, loss, tr->err);
}

/* Writes the checkpoint to dir: --checkpoint-dir (locked for the whole run)
 * or, for a stop without one, the stop folder, made here and locked for the
 * write. */
static lt_status save_checkpoint(trainer *tr, const char *dir, lt_ckpt_state *c, int e, int64_t step, int64_t global,
                                 double loss_sum, int64_t seen)
{
    c->epoch = e;
    c->step = step;
    c->global = global;
    c->rng = tr->rng;
    c->loss_sum = loss_sum;
    c->seen = seen;
    lt_status st = lt_trainer_pull(&tr->t, tr->err); /* parameters and state kept on a device */
    if (st != LT_OK)
        return st;
    if (dir == tr->o->checkpoint_dir)
        return lt_ckpt_save(dir, c, tr->err);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        return lt_errf(tr->err, LT_ERR_IO, "%s: cannot create the checkpoint folder: %s", dir, strerror(errno));
    int lock = -1;
    st = lt_ckpt_lock(dir, &lock, tr->err);
    if (st == LT_OK)
        st = lt_ckpt_save(dir, c, tr->err);
    lt_ckpt_unlock(lock);
    return st;
}

/* Holds out the validation samples among the first n: a seeded partial
 * shuffle picks round(val_split * n) of them; tr->val gets those and
 * tr->train_idx the others, each in ascending order. */
static lt_status split_validation(trainer *tr, int64_t n, int64_t *ntrain)
{
    const lt_train_opts *o = tr->o;
    *ntrain = n;
    if (!(o->val_split > 0))
        return LT_OK;
    int64_t nval = (int64_t)llround(o->val_split * (double)n);
    if (nval < 1 || nval >= n)
        return lt_errf(tr->err, LT_ERR_INVALID, "%s: a validation split of %g of %lld training samples holds out %lld; "
                       "it must leave at least one sample on each side", tr->path, o->val_split, (long long)n,
                       (long long)nval);
    int64_t *perm = malloc(sizeof *perm * (size_t)n);
    unsigned char *held = calloc((size_t)n, 1);
    tr->val = malloc(sizeof *tr->val * (size_t)nval);
    tr->train_idx = malloc(sizeof *tr->train_idx * (size_t)(n - nval));
    if (!perm || !held || !tr->val || !tr->train_idx) {
        free(perm);
        free(held);
        return lt_errf(tr->err, LT_ERR_NOMEM, "out of memory");
    }
    for (int64_t i = 0; i < n; i++)
        perm[i] = i;
    /* its own generator: the shuffling and --init random stay as without a split */
    uint64_t rng = o->seed ^ 0x76616c6964617465ull;
    for (int64_t i = 0; i < nval; i++) {
        int64_t j = i + (int64_t)(lt_train_rand(&rng) % (uint64_t)(n - i));
        int64_t t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
        held[perm[i]] = 1;
    }
    int64_t a = 0, b = 0;
    for (int64_t i = 0; i < n; i++) {
        if (held[i])
            tr->val[a++] = i;
        else
            tr->train_idx[b++] = i;
    }
    free(perm);
    free(held);
    tr->nval = nval;
    *ntrain = n - nval;
    return LT_OK;
}

/* The epoch's validation figures into r->val; keeps the best epoch (its
 * values too for save_best) and counts the epochs since. */
static lt_status validate(trainer *tr, lt_ckpt_state *ck, lt_epoch_result *r)
{
    const lt_train_opts *o = tr->o;
    lt_status st = tr->use_arrays
                       ? lt_afeed_evaluate_sel(&tr->afeed, tr->t.es, tr->t.em, tr->val, tr->nval, &r->val, tr->err)
                       : lt_feed_evaluate_sel(&tr->feed, tr->t.es, tr->t.em, tr->train, tr->val, tr->nval, &r->val,
                                              tr->err);
    if (st != LT_OK)
        return st;
    double v = r->val.has_accuracy ? r->val.accuracy : r->val.loss;
    int better = ck->best_epoch == 0 || (r->val.has_accuracy ? v > ck->best_value : v < ck->best_value);
    if (better && isfinite(v)) {
        ck->best_epoch = r->epoch;
        ck->best_value = v;
        ck->since_best = 0;
        for (int i = 0; tr->best && i < ck->nvalues; i++)
            memcpy(tr->best[i].data, ck->values[i]->data, lt_tensor_nbytes(ck->values[i]));
    } else {
        ck->since_best++;
    }
    r->best_epoch = (int)ck->best_epoch;
    r->best_value = ck->best_value;
    r->stop_early = o->early_stop > 0 && ck->since_best >= o->early_stop;
    return LT_OK;
}

/* save_best: room for the best epoch's values, shaped like ck's. */
static lt_status best_alloc(trainer *tr, lt_ckpt_state *ck, lt_tensor ***views)
{
    *views = NULL;
    if (!tr->o->save_best)
        return LT_OK;
    tr->best = calloc((size_t)ck->nvalues + 1, sizeof *tr->best);
    *views = calloc((size_t)ck->nvalues + 1, sizeof **views);
    if (!tr->best || !*views)
        return lt_errf(tr->err, LT_ERR_NOMEM, "out of memory");
    lt_status st = LT_OK;
    for (int i = 0; i < ck->nvalues && st == LT_OK; i++) {
        const lt_tensor *v = ck->values[i];
        st = lt_tensor_alloc(&tr->best[i], v->dtype, v->rank, v->dims, tr->err);
        if (st == LT_OK)
            tr->nbest = i + 1;
        (*views)[i] = &tr->best[i];
    }
    ck->best = *views;
    return st;
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
    return lt_prefetch_submit_aug(bs->pf, tr->order + s * bs->B, b->n, &b->x->t, &b->raw->t,
                                  tr->augment ? &tr->aug : NULL, tr->err);
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
    int64_t n = tr->use_arrays ? tr->atrain->samples : lt_dataset_size(tr->train);
    if (o->limit > 0 && o->limit < n)
        n = o->limit;
    int64_t total = n; /* samples the order's entries index: training and validation */
    lt_status st = n < 1 ? lt_errf(tr->err, LT_ERR_INVALID, "%s: no training samples", o->train_set ? "the training "
                                    "set" : o->data)
                         : split_validation(tr, total, &n);
    int64_t B = o->batch < n ? o->batch : n;
    batches bs = {0};
    if (st == LT_OK && tr->use_arrays) {
        bs.n = n;
        bs.B = B;
        bs.steps = tr->afeed.fixed_batch ? n / B : (n + B - 1) / B;
        if (bs.steps < 1)
            st = lt_errf(tr->err, LT_ERR_INVALID, "%s: %lld training samples do not fill one batch of %lld", tr->path,
                         (long long)n, (long long)B);
    } else if (st == LT_OK) {
        st = batches_new(tr, &bs, n, B);
    }
    int64_t steps = bs.steps;
    int64_t fixed = tr->use_arrays ? tr->afeed.fixed_batch : tr->feed.fixed_batch;
    if (st == LT_OK && fixed && n % B && o->on_note) {
        /* a static batch size (an export without dynamic axes) runs whole
         * batches only */
        char note[400];
        snprintf(note, sizeof note, "%s: the model fixes its batch size at %lld, so each epoch trains on %lld of the "
                 "%lld samples (the last %lld do not fill a batch), and test figures score whole batches only; "
                 "export with a dynamic batch axis to use every sample", tr->path, (long long)B,
                 (long long)(n - n % B), (long long)n, (long long)(n % B));
        o->on_note(note, o->user);
    }
    tr->order = st == LT_OK ? malloc(sizeof *tr->order * (size_t)n) : NULL;
    if (st == LT_OK && !tr->order)
        st = lt_errf(tr->err, LT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; st == LT_OK && i < n; i++)
        tr->order[i] = tr->train_idx ? tr->train_idx[i] : i;
    tr->rng = o->seed ^ 0x73687566666c6521ull;
    lt_schedule sched = o->schedule;
    sched.total = steps * o->epochs;
    double t0 = now_s(), train_time = 0;
    int64_t global = 0;
    /* where checkpoints go: every epoch to --checkpoint-dir; on a stop to it
     * or, without one, to the stop folder */
    const char *ckdir = o->checkpoint_dir ? o->checkpoint_dir : o->stop_checkpoint_dir;
    lt_ckpt_state ck = {0};
    lt_tensor **best_views = NULL;
    if (st == LT_OK)
        st = lt_trainer_ckpt_state(&tr->t, n, B, steps, &ck, tr->err);
    ck.order = tr->order;
    ck.order_max = total;
    if (st == LT_OK)
        st = best_alloc(tr, &ck, &best_views);
    /* the checkpoint records the run's options; --resume refuses others */
    char *run_text = NULL;
    if (st == LT_OK && ckdir && !(run_text = lt_ckpt_run_text(tr->path, o)))
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
            st = lt_trainer_push(&tr->t, tr->err); /* to a device, where the run keeps them */
            if (st == LT_OK)
                st = lt_trainer_sync(&tr->t, tr->err); /* the evaluation copy, in case no epoch is left */
            if (o->early_stop > 0 && ck.since_best >= o->early_stop)
                e0 = o->epochs + 1; /* the run had stopped early */
        }
    }
    /* the rate and the ETA count the steps this call runs */
    const int64_t global0 = global;
    int *stopped = o->stopped, stop_dummy = 0;
    if (!stopped)
        stopped = &stop_dummy;
    *stopped = 0;
    for (int e = e0; e <= o->epochs && st == LT_OK && !*stopped; e++) {
        int mid = o->resume && e == e0 && ck.step > 0; /* resumed inside this epoch: already shuffled */
        if (!mid && !o->no_shuffle)
            shuffle(tr, n);
        tr->aug.epoch = e;
        double te = now_s(), loss_sum = mid ? ck.loss_sum : 0, lr = 0;
        int64_t seen = mid ? ck.seen : 0, s0 = mid ? ck.step : 0, seen0 = seen;
        if (!tr->use_arrays)
            st = submit(tr, &bs, s0);
        for (int64_t s = s0; s < steps && st == LT_OK; s++) {
            double loss = 0;
            int64_t bn = s * B + B <= n ? B : n - s * B;
            lr = lt_schedule_lr(&sched, global);
            if (tr->use_arrays) {
                st = array_step(tr, tr->order + s * B, bn, lr, &loss);
            } else {
                lt_feed_batch *b = batch_of(&bs, s);
                st = lt_prefetch_wait(bs.pf, tr->err);
                if (st == LT_OK && s + 1 < steps)
                    st = submit(tr, &bs, s + 1);
                if (st == LT_OK)
                    st = lt_feed_targets(&tr->feed, b, tr->err);
                if (st == LT_OK)
                    st = train_step(tr, b, lr, &loss);
            }
            if (st != LT_OK)
                break;
            global++;
            loss_sum += loss * (double)bn;
            seen += bn;
            if (o->on_step) {
                double now = now_s(), ep = now - te, run = train_time + ep;
                lt_train_progress p = {e, o->epochs, s + 1, steps, global, sched.total, loss_sum / (double)seen, loss, lr,
                                       ep > 0 ? (double)(seen - seen0) / ep : 0, now - t0,
                                       run / (double)(global - global0) * (double)(sched.total - global),
                                       o->resume ? global0 : 0};
                o->on_step(&p, o->user);
            }
            /* the epoch's last step is followed by the epoch-end checkpoint */
            int stop = stop_requested(o);
            if (s + 1 < steps && ckdir &&
                (stop || (o->checkpoint_dir && o->checkpoint_every > 0 && global % o->checkpoint_every == 0)))
                st = save_checkpoint(tr, stop ? ckdir : o->checkpoint_dir, &ck, e, s + 1, global, loss_sum, seen);
            if (st == LT_OK && stop && s + 1 < steps) {
                *stopped = 1;
                break;
            }
        }
        /* nothing may still be filling a buffer (or reading the order) */
        lt_err ignored;
        if (bs.pf)
            lt_prefetch_wait(bs.pf, &ignored);
        if (st != LT_OK || *stopped)
            break;
        double secs = now_s() - te;
        train_time += secs;
        st = lt_trainer_sync(&tr->t, tr->err);
        if (st != LT_OK)
            break;
        lt_epoch_result r = {e, o->epochs, loss_sum / (double)seen, {NAN, NAN, 0, 0}, lr, secs, global};
        r.val = (lt_eval_result){NAN, NAN, 0, 0};
        lt_trainer_stats(&tr->t, &r.stats);
        if (tr->nval > 0)
            st = validate(tr, &ck, &r);
        if (st == LT_OK && tr->atest)
            st = lt_afeed_evaluate(&tr->atest_feed, tr->t.es, tr->t.em, o->test_limit, &r.test, tr->err);
        else if (st == LT_OK && tr->test)
            st = lt_feed_evaluate(&tr->feed, tr->t.es, tr->t.em, tr->test, o->test_limit, &r.test, tr->err);
        if (st == LT_OK && o->on_epoch)
            o->on_epoch(&r, o->user);
        if (st == LT_OK && o->checkpoint_dir)
            st = save_checkpoint(tr, o->checkpoint_dir, &ck, e, steps, global, loss_sum, seen);
        if (st == LT_OK && r.stop_early)
            break;
        if (st == LT_OK && stop_requested(o) && e < o->epochs) {
            if (!o->checkpoint_dir && ckdir)
                st = save_checkpoint(tr, ckdir, &ck, e, steps, global, loss_sum, seen);
            *stopped = 1;
        }
    }
    /* save_best: the forward copy takes the best epoch's values */
    if (st == LT_OK && !*stopped && tr->best && ck.best_epoch > 0)
        st = lt_trainer_pull(&tr->t, tr->err); /* the host copy is current: nothing to overwrite it */
    if (st == LT_OK && !*stopped && tr->best && ck.best_epoch > 0) {
        for (int i = 0; i < ck.nvalues; i++)
            memcpy(ck.values[i]->data, tr->best[i].data, lt_tensor_nbytes(&tr->best[i]));
        st = lt_trainer_sync(&tr->t, tr->err);
    }
    free((void *)ck.values);
    free(best_views);
    free(run_text);
    batches_free(&bs);
    return st;
}

lt_status lt_train(const char *model_path, const lt_train_opts *o, lt_model **trained, lt_err *err)
{
    if (!model_path || !o || !trained)
        return lt_errf(err, LT_ERR_INVALID, "lt_train: %s is NULL", !model_path ? "model_path" : !o ? "o" : "trained");
    if (!o->data && !o->train_set)
        return lt_errf(err, LT_ERR_INVALID, "lt_train: no training data: o->data and o->train_set are both NULL");
    *trained = NULL;
    lt_train_opts own = *o;
    o = &own;
    trainer tr = {.o = o, .own_opts = &own, .path = model_path, .err = err};
    /* one run at a time per checkpoint folder, held for the whole run */
    int lock = -1;
    lt_status st = o->checkpoint_dir ? lt_ckpt_lock(o->checkpoint_dir, &lock, err) : LT_OK;
    if (st == LT_OK)
        st = setup(&tr, model_path);
    if (st == LT_OK)
        st = run_epochs(&tr);
    lt_ckpt_unlock(lock);
    lt_dataset_free(tr.own_train);
    lt_dataset_free(tr.own_test);
    lt_arrays_free(tr.atrain);
    lt_arrays_free(tr.atest);
    free(tr.order);
    free(tr.val);
    free(tr.train_idx);
    for (int i = 0; i < tr.nbest; i++)
        lt_tensor_release(&tr.best[i]);
    free(tr.best);
    /* the normalisation the samples had travels with the model */
    if (st == LT_OK && !o->train_set && !tr.use_arrays)
        st = lt_model_set_norm(tr.t.em, &o->norm, err);
    if (st == LT_OK) {
        /* the forward copy holds the parameters of the last finished epoch */
        *trained = tr.t.em;
        tr.t.em = NULL; /* the caller's now */
    }
    lt_trainer_fini(&tr.t);
    return st;
}
