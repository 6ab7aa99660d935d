/* The training loop as a library function: one model copy turned into its
 * forward/backward program, a second copy (forward only) that receives the
 * trained parameters for evaluation; seeded shuffling, batches gathered by a
 * prefetch thread, optimizer steps with a learning-rate schedule and
 * gradient clipping, per-epoch test loss and accuracy. Also evaluation on
 * its own (lantern eval). How data feeds the model: train_feed.c. */
#include "../runtime/runtime.h"
#include "checkpoint.h"
#include "prefetch.h"
#include "train_arrays.h"
#include "train_feed.h"
#include "dataset_impl.h"
#include "trainer.h"
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

/* lantern eval on an npz whose arrays feed the model by name (train_arrays.c) */
static lt_status evaluate_arrays(lt_model *m, const lt_eval_opts *o, lt_loss_kind loss, lt_eval_result *r, bool *done,
                                 lt_err *err)
{
    *done = false;
    if (!lt_arrays_spec_has_split(o->data, 1))
        return LT_OK;
    lt_arrays *a = NULL;
    lt_status st = lt_arrays_open_spec(o->data, 1, &a, err);
    if (st != LT_OK || !a)
        return st;
    lt_train_opts to;
    lt_train_defaults(&to);
    to.loss = loss;
    to.output = o->output;
    if (lt_afeed_wanted(m, a, &to)) {
        lt_afeed f;
        lt_session *s = NULL;
        *done = true;
        st = lt_afeed_plan(m, a, &to, &f, err);
        if (st == LT_OK)
            st = lt_session_new(m, &s, err);
        if (st == LT_OK)
            st = lt_afeed_evaluate(&f, s, m, o->limit, r, err);
        lt_session_free(s);
    }
    lt_arrays_free(a);
    return st;
}

lt_status lt_model_evaluate(lt_model *m, const lt_eval_opts *o, lt_eval_result *r, lt_err *err)
{
    lt_feed f;
    lt_dataset *d = NULL;
    lt_session *s = NULL;
    lt_loss_kind loss = o->loss == LT_LOSS_SUM ? LT_LOSS_SOFTMAX_CROSS_ENTROPY : o->loss;
    bool done = false;
    lt_status st = evaluate_arrays(m, o, loss, r, &done, err);
    if (st != LT_OK || done)
        return st;
    lt_dataset_opts dopt = o->norm;
    if (!dopt.channels)
        dopt.channels = lt_feed_image_channels(m);
    st = lt_dataset_open_opts(o->data, 1, &dopt, &d, err);
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

/* ---- the loop ---- */

typedef struct trainer {
    const lt_train_opts *o;
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
    lt_status st = lt_arrays_open_spec(o->data, 0, &tr->atrain, tr->err);
    if (st != LT_OK || !tr->atrain)
        return st;
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
    if (st == LT_OK && lt_arrays_spec_has_split(o->data, 1)) {
        st = lt_arrays_open_spec(o->data, 1, &tr->atest, tr->err);
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
    if (st == LT_OK && tr->afeed.fixed_batch && tr->afeed.fixed_batch != o->batch)
        st = lt_errf(tr->err, LT_ERR_INVALID, "%s: input '%s' has a fixed batch size of %lld; use --batch %lld",
                     tr->path, tr->afeed.slot[0].name, (long long)tr->afeed.fixed_batch,
                     (long long)tr->afeed.fixed_batch);
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

static lt_status setup(trainer *tr, const char *path)
{
    const lt_train_opts *o = tr->o;
    lt_status st = check_opts(o, tr->err);
    bool arrays = false;
    if (st == LT_OK)
        st = lt_trainer_init(&tr->t, path, o, tr->err);
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
        /* image folders: the model's channel count, the test split the training split's */
        lt_dataset_opts dopt = o->norm;
        if (!dopt.channels)
            dopt.channels = lt_feed_image_channels(tr->t.em);
        st = lt_dataset_open_opts(o->data, 0, &dopt, &tr->own_train, tr->err);
        if (st == LT_OK && !dopt.channels && !strncmp(o->data, "images=", 7))
            dopt.channels = (int)tr->own_train->dims[0];
        if (st == LT_OK && lt_dataset_has_split(o->data, 1))
            st = lt_dataset_open_opts(o->data, 1, &dopt, &tr->own_test, tr->err);
        tr->train = tr->own_train;
        tr->test = tr->own_test;
        if (st == LT_OK && tr->test)
            st = check_splits(o->data, tr->train, tr->test, tr->err);
    }
    if (st == LT_OK && tr->augment)
        st = lt_ds_aug_check(tr->train, &tr->aug.a, o->train_set ? "the training set" : o->data, tr->err);
    if (st == LT_OK)
        st = lt_feed_plan(tr->t.em, tr->train, o->loss, o->output, &tr->feed, tr->err);
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
    lt_value *in[2] = {b->x, b->y ? b->y : b->raw};
    return lt_trainer_step_in(&tr->t, lr, 2, names, in, loss, tr->err);
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
    lt_status st = lt_trainer_pull(&tr->t, tr->err); /* parameters and state kept on a device */
    return st == LT_OK ? lt_ckpt_save(tr->o->checkpoint_dir, c, tr->err) : st;
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
    int64_t B = o->batch < n ? o->batch : n;
    batches bs = {0};
    lt_status st = LT_OK;
    if (tr->use_arrays) {
        bs.n = n;
        bs.B = B;
        bs.steps = tr->afeed.fixed_batch ? n / B : (n + B - 1) / B;
        if (bs.steps < 1)
            st = lt_errf(tr->err, LT_ERR_INVALID, "%s: %lld training samples do not fill one batch of %lld", tr->path,
                         (long long)n, (long long)B);
    } else {
        st = batches_new(tr, &bs, n, B);
    }
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
        st = lt_trainer_ckpt_state(&tr->t, n, B, steps, &ck, tr->err);
    ck.order = tr->order;
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
            st = lt_trainer_push(&tr->t, tr->err); /* to a device, where the run keeps them */
            if (st == LT_OK)
                st = lt_trainer_sync(&tr->t, tr->err); /* the evaluation copy, in case no epoch is left */
        }
    }
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
        int64_t seen = mid ? ck.seen : 0, s0 = mid ? ck.step : 0;
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
        lt_trainer_stats(&tr->t, &r.stats);
        if (tr->atest)
            st = lt_afeed_evaluate(&tr->atest_feed, tr->t.es, tr->t.em, o->test_limit, &r.test, tr->err);
        else if (tr->test)
            st = lt_feed_evaluate(&tr->feed, tr->t.es, tr->t.em, tr->test, o->test_limit, &r.test, tr->err);
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
    lt_dataset_free(tr.own_train);
    lt_dataset_free(tr.own_test);
    lt_arrays_free(tr.atrain);
    lt_arrays_free(tr.atest);
    free(tr.order);
    if (st == LT_OK) {
        /* the forward copy holds the parameters of the last finished epoch */
        *trained = tr.t.em;
        tr.t.em = NULL; /* the caller's now */
    }
    lt_trainer_fini(&tr.t);
    return st;
}
