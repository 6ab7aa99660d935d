/* Classification of a dataset's first test samples (lantern predict): the
 * class each gets from the model and the class its label says, fed as
 * training and lantern eval feed the model (train_feed.c, train_arrays.c),
 * so that the same checks hold: which input takes the samples, their
 * layout, labels the output has a score for. */
#include "../runtime/runtime.h"
#include "norm_meta.h"
#include "train_arrays.h"
#include "train_feed.h"
#include "dataset_impl.h"
#include <stdlib.h>
#include <string.h>

#define PREDICT_BATCH 256

static const char *const fashion_names[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                              "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
static const char *const cifar_names[10] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                            "dog",      "frog",       "horse", "ship", "truck"};

/* class c's name, where the data (d, or the spec for the image sets lantern
 * knows) names its classes; "" otherwise */
static void class_name(const char *spec, const lt_dataset *d, int64_t c, char *buf, size_t len)
{
    const char *s = d ? lt_dataset_class_name(d, c) : NULL;
    if (!s && c >= 0 && c < 10 && !strncmp(spec, "fashion-mnist", 13))
        s = fashion_names[c];
    if (!s && c >= 0 && c < 10 && !strncmp(spec, "cifar10", 7))
        s = cifar_names[c];
    snprintf(buf, len, "%s", s ? s : "");
}

/* Fills p for sample `sample` from row i of class scores o ([.., C]). */
static lt_status predict_row(const char *path, const lt_tensor *o, int64_t i, int64_t C, int64_t label,
                             int64_t ignore_index, int64_t sample, lt_prediction *p, lt_err *err)
{
    if (label != ignore_index && (label < 0 || label >= C))
        return lt_errf(err, LT_ERR_INVALID, "%s: sample %lld's label is %lld; the output scores %lld classes", path,
                       (long long)sample, (long long)label, (long long)C);
    int64_t best = 0;
    double top = lt_tensor_get_f64(o, i * C);
    for (int64_t c = 1; c < C; c++) {
        double z = lt_tensor_get_f64(o, i * C + c);
        if (z > top) {
            top = z;
            best = c;
        }
    }
    memset(p, 0, sizeof *p);
    p->sample = sample;
    p->predicted = best;
    p->truth = label;
    p->ignored = label == ignore_index;
    return LT_OK;
}

static lt_status class_scores(const char *path, const lt_tensor *o, int64_t k, int64_t *C, lt_err *err)
{
    if (!o || !lt_dtype_is_float(o->dtype) || o->rank < 1 || o->numel < 1 || o->numel % k ||
        (o->rank >= 2 && o->dims[0] != k))
        return lt_errf(err, LT_ERR_INVALID, "%s: predict reads class scores [N, classes] from the output; it gives "
                       "%s", path, o && o->rank >= 1 ? "another shape" : "no such tensor");
    *C = o->numel / k;
    if (o->rank > 2 || (o->rank == 1 && k > 1))
        return lt_errf(err, LT_ERR_INVALID, "%s: predict reads class scores [N, classes]; the output has rank %d",
                       path, o->rank);
    return LT_OK;
}

/* npz arrays fed by name (train_arrays.c): *done when they are the feed */
static lt_status predict_arrays(lt_model *m, const lt_eval_opts *o, int64_t count, lt_prediction *pred, int64_t *n,
                                bool *done, lt_err *err)
{
    lt_arrays *a = NULL;
    lt_afeed f;
    lt_session *s = NULL;
    lt_status st = lt_afeed_for_eval(m, o, LT_LOSS_SOFTMAX_CROSS_ENTROPY, &a, &f, err);
    *done = a != NULL;
    if (st != LT_OK || !a) {
        lt_arrays_free(a);
        return st;
    }
    if (st == LT_OK)
        st = lt_session_new(m, &s, err);
    int64_t total = a->samples;
    if (count > total)
        count = total;
    int64_t run = st == LT_OK ? lt_afeed_run_size(&f, f.fixed_batch ? f.fixed_batch : PREDICT_BATCH) : 1;
    if (st == LT_OK && f.fixed_batch && total < run)
        st = lt_errf(err, LT_ERR_INVALID, "%s: the model takes batches of %lld; the test split has %lld samples",
                     m->path, (long long)run, (long long)total);
    int nout = lt_model_num_outputs(m);
    lt_value **out = calloc((size_t)nout, sizeof *out);
    int64_t *idx = malloc(sizeof *idx * (size_t)run);
    if (st == LT_OK && (!out || !idx))
        st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    const char *names[LT_AFEED_MAX + 1];
    lt_value *in[LT_AFEED_MAX + 1];
    *n = 0;
    for (int64_t at = 0; at < count && st == LT_OK; at += run) {
        /* a model's fixed batch is filled from the samples after the last
         * ones asked for, or before them */
        int64_t k = f.fixed_batch || run <= count - at ? run : count - at, first = at + k <= total ? at : total - k;
        for (int64_t i = 0; i < k; i++)
            idx[i] = first + i;
        st = lt_afeed_make(&f, idx, k, names, in, err);
        if (st != LT_OK)
            break;
        st = lt_session_run(s, f.nslot - 1, names, in, out, err);
        const lt_tensor *lab = &in[f.target]->t;
        int64_t C = 0;
        if (st == LT_OK && lab->numel != k)
            st = lt_errf(err, LT_ERR_INVALID, "%s: predict gives one class per sample; these labels have %lld "
                         "values for %lld samples (lantern eval scores them)", m->path, (long long)lab->numel,
                         (long long)k);
        if (st == LT_OK)
            st = class_scores(m->path, lt_value_tensor(out[f.out_index]), k, &C, err);
        for (int64_t i = at - first; i < k && first + i < count && st == LT_OK; i++) {
            st = predict_row(m->path, lt_value_tensor(out[f.out_index]), i, C, (int64_t)lt_tensor_get_f64(lab, i),
                             f.ignore_index, first + i, &pred[*n], err);
            ++*n;
        }
        lt_afeed_free_values(&f, in);
        for (int i = 0; i < nout; i++) {
            lt_value_free(out[i]);
            out[i] = NULL;
        }
    }
    free(out);
    free(idx);
    lt_session_free(s);
    lt_arrays_free(a);
    return st;
}

lt_status lt_model_predict(lt_model *m, const lt_eval_opts *o, int64_t count, lt_prediction *pred, int64_t *n,
                           lt_err *err)
{
    if (n)
        *n = 0;
    if (!m || !o || !o->data || !pred || !n)
        return lt_errf(err, LT_ERR_INVALID, "lt_model_predict: %s is NULL",
                       !m ? "the model" : !o ? "o" : !o->data ? "o->data" : !pred ? "pred" : "n");
    *n = 0;
    if (count < 1)
        return lt_errf(err, LT_ERR_INVALID, "predict: the count of samples must be 1 or more, got %lld",
                       (long long)count);
    bool done = false;
    lt_status st = predict_arrays(m, o, count, pred, n, &done, err);
    if (st != LT_OK || done)
        return st;
    lt_dataset_opts dopt = o->norm;
    lt_dataset *d = NULL;
    lt_session *s = NULL;
    lt_feed f = {0};
    if (!o->no_model_norm)
        st = lt_norm_fill_from_model(m, &dopt, err);
    if (!dopt.channels)
        dopt.channels = lt_feed_image_channels(m);
    if (st == LT_OK)
        st = lt_dataset_open_opts(o->data, 1, &dopt, &d, err);
    if (st == LT_OK && !lt_dataset_has_classes(d))
        st = lt_errf(err, LT_ERR_INVALID, "%s: predict needs class labels; the data has float targets", o->data);
    if (st == LT_OK)
        st = lt_feed_plan(m, d, LT_LOSS_SOFTMAX_CROSS_ENTROPY, o->output,
                          o->set_ignore_index ? o->ignore_index : -100, &f, err);
    if (st == LT_OK)
        st = lt_session_new(m, &s, err);
    int64_t total = st == LT_OK ? lt_dataset_size(d) : 0;
    if (count > total)
        count = total;
    int64_t B = f.fixed_batch ? f.fixed_batch : count < PREDICT_BATCH ? count : PREDICT_BATCH;
    if (st == LT_OK && f.fixed_batch && total < B)
        st = lt_errf(err, LT_ERR_INVALID, "%s: the model takes batches of %lld; the test split has %lld samples",
                     m->path, (long long)B, (long long)total);
    lt_feed_batch b = {0};
    int nout = st == LT_OK ? lt_model_num_outputs(m) : 0;
    lt_value **out = calloc((size_t)nout + 1, sizeof *out);
    int64_t *idx = malloc(sizeof *idx * (size_t)(B > 0 ? B : 1));
    if (st == LT_OK && (!out || !idx))
        st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (st == LT_OK)
        st = lt_feed_batch_new(&f, d, B, &b, err);
    for (int64_t at = 0; at < count && st == LT_OK; at += B) {
        /* a model's fixed batch is filled from the samples after the last
         * ones asked for, or before them */
        int64_t first = at + B <= total ? at : total - B;
        for (int64_t i = 0; i < B; i++)
            idx[i] = first + i;
        st = lt_dataset_gather(d, idx, B, &b.x->t, &b.raw->t, err);
        const char *name = f.x_name;
        lt_value *in[2];
        lt_feed_inputs(&f, &b, in);
        if (st == LT_OK)
            st = lt_session_run(s, 1, &name, in, out, err);
        const lt_tensor *scores = st == LT_OK ? lt_value_tensor(out[f.out_index]) : NULL;
        int64_t C = 0;
        if (st == LT_OK)
            st = class_scores(m->path, scores, B, &C, err);
        const int64_t *lab = b.raw->t.data;
        for (int64_t i = at - first; i < B && first + i < count && st == LT_OK; i++) {
            st = predict_row(m->path, scores, i, C, lab[i], f.ignore_index, first + i, &pred[*n], err);
            ++*n;
        }
        for (int i = 0; i < nout; i++) {
            lt_value_free(out[i]);
            out[i] = NULL;
        }
    }
    for (int64_t i = 0; i < *n && st == LT_OK; i++) {
        class_name(o->data, d, pred[i].predicted, pred[i].predicted_name, sizeof pred[i].predicted_name);
        class_name(o->data, d, pred[i].truth, pred[i].truth_name, sizeof pred[i].truth_name);
    }
    lt_feed_batch_free(&b);
    free(out);
    free(idx);
    lt_session_free(s);
    lt_dataset_free(d);
    return st;
}
