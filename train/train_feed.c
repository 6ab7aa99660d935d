/* How a dataset feeds a model: the input that takes the samples (flat or
 * shaped, by its declared type), what the loss compares the chosen output
 * with, and scoring of forward outputs with the same loss definitions the
 * training program uses (ad/ad.c appends them). */
#include "train_feed.h"
#include "dataset_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LT_EVAL_BATCH 500

void lt_feed_type_text(const lt_model *m, const lt_type *t, char *buf, size_t len)
{
    FILE *f = fmemopen(buf, len, "w");
    if (!f) {
        snprintf(buf, len, "?");
        return;
    }
    lt_type_print(m, t, f);
    fclose(f);
}

static void shape_text(int rank, const int64_t *dims, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < rank && at + 24 < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? "x" : "", (long long)dims[i]);
    if (rank == 0)
        snprintf(buf, len, "scalar");
}

static bool dim_known(const lt_type *t, int i) { return t->dims[i].sym < 0 && t->dims[i].v >= 0; }

/* The dims of d[0..r) other than 1, into out; their count. */
static int squeezed(int r, const int64_t *d, int64_t *out)
{
    int k = 0;
    for (int i = 0; i < r; i++)
        if (d[i] != 1)
            out[k++] = d[i];
    return k;
}

/* Whether samples of shape sd feed an input whose sample shape is
 * shape[1..r) as they lie in memory. Dims of 1 aside, both shapes are cut
 * into the shortest runs of equal products from the left: a run with one
 * dim on either side only merges or splits neighbouring dims ([2,3,4] as
 * [6,4], four RGB frames [4,3,H,W] as [12,H,W], or either side flat); a run
 * with several dims on both sides would read the values in another order
 * (an image stored HxWxC, [32,32,3], for an input [3,32,32]). */
static bool same_layout(int sr, const int64_t *sd, int r, const int64_t *shape)
{
    int64_t a[LT_MAX_RANK], b[LT_MAX_RANK];
    int na = squeezed(sr, sd, a), nb = squeezed(r - 1, shape + 1, b);
    int i = 0, j = 0;
    while (i < na && j < nb) {
        int64_t pa = a[i++], pb = b[j++];
        int ga = 1, gb = 1;
        while (pa != pb && (i < na || j < nb)) {
            if (pa < pb && i < na) {
                pa *= a[i++];
                ga++;
            } else if (j < nb) {
                pb *= b[j++];
                gb++;
            } else {
                return false;
            }
        }
        if (pa != pb || (ga > 1 && gb > 1))
            return false;
    }
    return i == na && j == nb;
}

/* Shape [N, ...] for input type t taking samples of shape sd (numel S): the
 * declared dims where known; one unknown dim takes what is left; all
 * unknown takes the sample's own shape (or [N, S] at rank 2). */
static lt_status input_shape(const lt_model *m, const lt_ival *v, int sr, const int64_t *sd, const char *what,
                             int rank_out[1], int64_t *shape, int64_t *fixed, lt_err *err)
{
    const lt_type *t = &v->type;
    char have[256], want[128];
    lt_feed_type_text(m, t, have, sizeof have);
    shape_text(sr, sd, want, sizeof want);
    int64_t S = 1;
    for (int i = 0; i < sr; i++)
        S *= sd[i];
    if (t->kind != LT_KIND_TENSOR || t->rank < 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: input '%s' is %s; it must be [N, ...] to take the %s (%s per sample)",
                       m->path, v->name, have, what, want);
    *rank_out = t->rank;
    *fixed = dim_known(t, 0) && t->dims[0].v > 0 ? t->dims[0].v : 0;
    int64_t known = 1;
    int unknown = 0, last_unknown = -1;
    for (int i = 1; i < t->rank; i++) {
        if (!dim_known(t, i)) {
            unknown++;
            last_unknown = i;
            shape[i] = -1;
        } else {
            shape[i] = t->dims[i].v;
            if (t->dims[i].v == 0 || known > S)
                known = S + 1;
            else
                known *= t->dims[i].v;
        }
    }
    if (unknown == 1 && known > 0 && known <= S && S % known == 0) {
        shape[last_unknown] = S / known;
        known = S;
    } else if (unknown > 0 && unknown == t->rank - 1 && t->rank - 1 == sr) {
        for (int i = 1; i < t->rank; i++)
            shape[i] = sd[i - 1];
        known = S;
    } else if (unknown > 0 && unknown == t->rank - 1 && t->rank == 2) {
        shape[1] = S;
        known = S;
    } else if (unknown > 0) {
        known = -1;
    }
    if (known != S)
        return lt_errf(err, LT_ERR_INVALID, "%s: input '%s' is %s, which does not take the %s: %s (%lld values) per "
                       "sample", m->path, v->name, have, what, want, (long long)S);
    if (!same_layout(sr, sd, t->rank, shape)) {
        char took[128];
        shape_text(t->rank - 1, shape + 1, took, sizeof took);
        return lt_errf(err, LT_ERR_INVALID, "%s: input '%s' is %s and takes %s per sample; the %s are %s: as many "
                       "values, laid out otherwise (height x width x channels for channels first, or the other way "
                       "round: image folders give channels first); transpose the data to %s", m->path, v->name, have,
                       took, what, want, took);
    }
    return LT_OK;
}

/* Whether input type t takes samples [C,H,W] channels last, [N,H,W,C]: its
 * known dims fit that layout and not channels first. */
static bool takes_channels_last(const lt_type *t, const int64_t *chw)
{
    if (t->kind != LT_KIND_TENSOR || t->rank != 4)
        return false;
    const int64_t first[3] = {chw[0], chw[1], chw[2]}, last[3] = {chw[1], chw[2], chw[0]};
    bool fits_first = true, fits_last = true;
    for (int i = 0; i < 3; i++) {
        if (!dim_known(t, i + 1))
            continue;
        fits_first = fits_first && t->dims[i + 1].v == first[i];
        fits_last = fits_last && t->dims[i + 1].v == last[i];
    }
    return fits_last && !fits_first;
}

static bool is_label_name(const char *s)
{
    static const char *const names[] = {"labels", "label", "y", "target", "targets"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(s, names[i]))
            return true;
    return false;
}

/* The loss's reference for class labels compared with a float tensor of type
 * t (the output, or the model's own target input): one-hot rows for [N, C],
 * the class value for [N] or [N, 1]. */
static lt_status class_targets(const lt_model *m, const lt_ival *v, const lt_dataset *d, lt_feed *f, lt_err *err)
{
    const lt_type *t = &v->type;
    char have[256];
    lt_feed_type_text(m, t, have, sizeof have);
    if (t->rank == 1 || (t->rank == 2 && dim_known(t, 1) && t->dims[1].v == 1)) {
        f->y_kind = LT_TARGET_CLASS;
        f->y_rank = t->rank;
        f->y_shape[1] = 1;
        if (lt_dataset_num_classes(d) > 2)
            return lt_errf(err, LT_ERR_INVALID, "%s: '%s' is %s, one value per sample, but the data has %lld classes",
                           m->path, v->name, have, (long long)lt_dataset_num_classes(d));
        return LT_OK;
    }
    if (t->rank == 2 && dim_known(t, 1)) {
        f->y_kind = LT_TARGET_ONEHOT;
        f->y_rank = 2;
        f->y_shape[1] = t->dims[1].v;
        if (lt_dataset_num_classes(d) > t->dims[1].v)
            return lt_errf(err, LT_ERR_INVALID, "%s: '%s' is %s, fewer columns than the data's %lld classes", m->path,
                           v->name, have, (long long)lt_dataset_num_classes(d));
        return LT_OK;
    }
    return lt_errf(err, LT_ERR_INVALID, "%s: '%s' is %s; class labels become one-hot rows of a [N, classes] tensor or "
                   "the value of a [N] or [N, 1] one", m->path, v->name, have);
}

static lt_status float_targets(const lt_model *m, const lt_ival *v, const lt_dataset *d, lt_feed *f, lt_err *err)
{
    int tr;
    int64_t td[LT_MAX_RANK];
    lt_dataset_target_shape(d, &tr, td);
    if (tr + 1 > LT_MAX_RANK)
        return lt_errf(err, LT_ERR_INVALID, "%s: the data's targets have too many dims", m->path);
    f->y_kind = LT_TARGET_VALUES;
    f->y_rank = tr + 1;
    memcpy(f->y_shape + 1, td, sizeof *td * (size_t)tr);
    const lt_type *t = &v->type;
    bool known = t->rank >= 1;
    int64_t numel = 1, want = 1;
    for (int i = 1; i < t->rank; i++) {
        known = known && dim_known(t, i);
        numel *= known ? t->dims[i].v : 1;
    }
    for (int i = 0; i < tr; i++)
        want *= td[i];
    if (known && numel == want && t->rank >= 1) {
        /* feed the targets in the shape of what they are compared with */
        f->y_rank = t->rank;
        for (int i = 1; i < t->rank; i++)
            f->y_shape[i] = t->dims[i].v;
        return LT_OK;
    }
    if (known) {
        char have[256], tt[128];
        lt_feed_type_text(m, t, have, sizeof have);
        shape_text(tr, td, tt, sizeof tt);
        return lt_errf(err, LT_ERR_INVALID, "%s: '%s' is %s but the data's targets are %s per sample", m->path, v->name,
                       have, tt);
    }
    return LT_OK; /* checked against the output when it is computed */
}

int lt_feed_image_channels(const lt_model *m)
{
    const lt_block *b = m->main;
    for (int i = 0; i < b->nparams; i++) {
        if (m->input_default && m->input_default[i] >= 0)
            continue;
        const lt_type *t = &b->params[i]->type;
        if (t->kind != LT_KIND_TENSOR)
            return 0;
        if (t->rank == 4 && dim_known(t, 1) && (t->dims[1].v == 1 || t->dims[1].v == 3))
            return (int)t->dims[1].v;
        if (t->rank == 4 && dim_known(t, 3) && (t->dims[3].v == 1 || t->dims[3].v == 3))
            return (int)t->dims[3].v; /* channels last */
        return t->rank == 3 ? 1 : 0;
    }
    return 0;
}

/* Negative class labels: the ignore index under the losses that skip it,
 * nothing else. */
static lt_status check_labels(const lt_feed *f, const lt_dataset *d, lt_err *err)
{
    bool skips = f->loss == LT_LOSS_SOFTMAX_CROSS_ENTROPY || f->loss == LT_LOSS_NLL;
    int64_t s, v;
    const char *src;
    if (skips && d->classes && d->cls && d->n > 0) {
        int64_t kept = 0;
        for (int64_t i = 0; i < d->n && !kept; i++)
            kept += d->cls[i] != f->ignore_index;
        if (!kept) /* the loss would be a mean over nothing */
            return lt_errf(err, LT_ERR_INVALID, "%s: every label is %lld, the ignore index (--ignore-index): no "
                           "sample counts", d->label_src ? d->label_src : "the labels", (long long)f->ignore_index);
    }
    if (!lt_ds_negative_label(d, skips ? f->ignore_index : INT64_MIN, &s, &v, &src))
        return LT_OK;
    if (skips)
        return lt_errf(err, LT_ERR_INVALID, "%s: sample %lld's label is %lld; classes are 0 and up, and %lld (the "
                       "ignore index, --ignore-index) counts for nothing", src, (long long)s, (long long)v,
                       (long long)f->ignore_index);
    return lt_errf(err, LT_ERR_INVALID, "%s: sample %lld's label is %lld; classes are 0 and up (an ignore index "
                   "counts for nothing only under softmax-cross-entropy and nll)", src, (long long)s, (long long)v);
}

lt_status lt_feed_plan(const lt_model *m, const lt_dataset *d, lt_loss_kind loss, const char *output,
                       int64_t ignore_index, lt_feed *f, lt_err *err)
{
    memset(f, 0, sizeof *f);
    f->path = m->path;
    f->loss = loss;
    f->ignore_index = ignore_index;
    f->classes = lt_dataset_has_classes(d);
    lt_status cs = check_labels(f, d, err);
    if (cs != LT_OK)
        return cs;
    const lt_block *b = m->main;
    if (output) {
        f->out_index = -1;
        for (int r = 0; r < b->nresults; r++)
            if (!strcmp(b->results[r]->name, output))
                f->out_index = r;
        if (f->out_index < 0)
            return lt_errf(err, LT_ERR_INVALID, "%s: the model has no output named '%s'", m->path, output);
    } else if (b->nresults < 1) {
        return lt_errf(err, LT_ERR_INVALID, "%s: the model has no output", m->path);
    }
    const lt_ival *out = b->results[f->out_index];
    int free_in[2], nfree = 0, total_free = 0;
    for (int i = 0; i < b->nparams; i++)
        if (!m->input_default || m->input_default[i] < 0) {
            if (nfree < 2)
                free_in[nfree++] = i;
            total_free++;
        }
    int want_free = loss == LT_LOSS_MODEL ? 2 : 1;
    if (total_free != want_free)
        return lt_errf(err, LT_ERR_INVALID, "%s: the model has %d inputs without a default; %s feeds %s", m->path,
                       total_free, loss == LT_LOSS_MODEL ? "--loss model" : "training",
                       loss == LT_LOSS_MODEL ? "two (the samples, then the labels or targets)" : "exactly one (the samples)");
    const lt_ival *xv = b->params[free_in[0]], *yv = NULL;
    if (loss == LT_LOSS_MODEL) {
        yv = b->params[free_in[1]];
        if (is_label_name(xv->name) && !is_label_name(yv->name)) {
            const lt_ival *t = xv;
            xv = yv;
            yv = t;
        }
    }
    /* the samples are read as float32 and widened for a float64 model */
    if (xv->type.kind == LT_KIND_TENSOR && xv->type.dtype != LT_F32 && xv->type.dtype != LT_F64 &&
        xv->type.dtype != LT_UNDEFINED) {
        char have[256];
        lt_feed_type_text(m, &xv->type, have, sizeof have);
        return lt_errf(err, LT_ERR_INVALID, "%s: input '%s' is %s; the samples are float32 (or float64 for a float64 "
                       "model)", m->path, xv->name, have);
    }
    f->x_dtype = xv->type.kind == LT_KIND_TENSOR && xv->type.dtype == LT_F64 ? LT_F64 : LT_F32;
    f->y_dtype = LT_F32;
    int sr;
    int64_t sd[LT_MAX_RANK];
    lt_dataset_sample_shape(d, &sr, sd);
    f->x_channels_last = d->channels_first && sr == 3 && takes_channels_last(&xv->type, sd);
    if (f->x_channels_last) {
        int64_t c = sd[0];
        sd[0] = sd[1];
        sd[1] = sd[2];
        sd[2] = c;
    }
    f->x_name = xv->name;
    lt_status st = input_shape(m, xv, sr, sd, "samples", &f->x_rank, f->x_shape, &f->fixed_batch, err);
    if (st != LT_OK)
        return st;
    switch (loss) {
    case LT_LOSS_SOFTMAX_CROSS_ENTROPY:
    case LT_LOSS_NLL:
        if (!f->classes)
            return lt_errf(err, LT_ERR_INVALID, "%s: --loss %s needs class labels; the data has float targets (use mse "
                           "or bce-logits)", m->path, lt_loss_name(loss));
        f->y_name = "labels";
        f->y_kind = LT_TARGET_LABELS;
        f->y_rank = 1;
        if (out->type.rank >= 0 && out->type.rank != 2)
            return lt_errf(err, LT_ERR_INVALID, "%s: --loss %s reads class scores [N, classes]; output '%s' has rank %d",
                           m->path, lt_loss_name(loss), out->name, out->type.rank);
        if (out->type.rank == 2 && dim_known(&out->type, 1) && lt_dataset_num_classes(d) > out->type.dims[1].v) {
            /* the first sample whose label the output has no score for */
            int64_t at = -1, C = out->type.dims[1].v;
            for (int64_t i = 0; d->cls && i < d->n && at < 0; i++)
                if (d->cls[i] >= C)
                    at = i;
            return lt_errf(err, LT_ERR_INVALID, "%s: output '%s' scores %lld classes; the data has %lld (%s%ssample %lld "
                           "has label %lld)", m->path, out->name, (long long)C, (long long)lt_dataset_num_classes(d),
                           d->label_src ? d->label_src : "", d->label_src ? ": " : "", (long long)at,
                           at >= 0 ? (long long)d->cls[at] : -1LL);
        }
        return LT_OK;
    case LT_LOSS_MSE:
    case LT_LOSS_BCE_LOGITS:
        f->y_name = "targets";
        if (out->type.kind == LT_KIND_TENSOR && lt_dtype_is_float(out->type.dtype))
            f->y_dtype = out->type.dtype; /* the targets input is typed like the output */
        return f->classes ? class_targets(m, out, d, f, err) : float_targets(m, out, d, f, err);
    case LT_LOSS_MODEL:
        f->y_name = yv->name;
        if (yv->type.kind == LT_KIND_TENSOR && lt_dtype_is_float(yv->type.dtype) && yv->type.dtype != LT_F32) {
            f->y_dtype = yv->type.dtype;
            return f->classes ? class_targets(m, yv, d, f, err) : float_targets(m, yv, d, f, err);
        }
        if (yv->type.kind == LT_KIND_TENSOR && yv->type.dtype != LT_F32 && yv->type.dtype != LT_UNDEFINED) {
            if (yv->type.dtype != LT_I64 || !f->classes) {
                char have[256];
                lt_feed_type_text(m, &yv->type, have, sizeof have);
                return lt_errf(err, LT_ERR_INVALID, "%s: input '%s' is %s; it takes the data's %s", m->path, yv->name,
                               have, f->classes ? "labels (int64 or float)" : "float targets");
            }
            f->y_kind = LT_TARGET_LABELS;
            f->y_rank = 1;
            return LT_OK;
        }
        return f->classes ? class_targets(m, yv, d, f, err) : float_targets(m, yv, d, f, err);
    default:
        return lt_errf(err, LT_ERR_INVALID, "%s: loss %d cannot train a model", m->path, (int)loss);
    }
}

static lt_status new_tensor_value(lt_dtype dt, int rank, const int64_t *shape, int64_t n, lt_value **out, lt_err *err)
{
    int64_t dims[LT_MAX_RANK];
    memcpy(dims, shape, sizeof *dims * (size_t)rank);
    dims[0] = n;
    *out = lt_value_new_tensor();
    if (!*out)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    return lt_tensor_alloc(&(*out)->t, dt, rank, dims, err);
}

lt_status lt_feed_batch_new(const lt_feed *f, const lt_dataset *d, int64_t n, lt_feed_batch *b, lt_err *err)
{
    memset(b, 0, sizeof *b);
    b->n = n;
    lt_status st = new_tensor_value(LT_F32, f->x_rank, f->x_shape, n, &b->x, err);
    if (st != LT_OK)
        return st;
    if (f->classes) {
        int64_t one = 1;
        st = new_tensor_value(LT_I64, 1, &one, n, &b->raw, err);
    } else {
        int tr;
        int64_t td[LT_MAX_RANK + 1];
        lt_dataset_target_shape(d, &tr, td + 1);
        st = new_tensor_value(LT_F32, tr + 1, td, n, &b->raw, err);
    }
    if (st != LT_OK)
        return st;
    if (f->x_dtype == LT_F64 || f->x_channels_last)
        st = new_tensor_value(f->x_dtype, f->x_rank, f->x_shape, n, &b->xin, err);
    if (st != LT_OK || f->y_kind == LT_TARGET_NONE || f->y_kind == LT_TARGET_LABELS)
        return st;
    if (f->y_dtype != LT_F32 && (st = new_tensor_value(f->y_dtype, f->y_rank, f->y_shape, n, &b->yin, err)) != LT_OK)
        return st;
    if (f->y_kind == LT_TARGET_VALUES) {
        /* the data's own targets, seen in the shape the model compares them
         * in: the same storage, nothing copied per batch */
        int64_t dims[LT_MAX_RANK];
        memcpy(dims, f->y_shape, sizeof *dims * (size_t)f->y_rank);
        dims[0] = n;
        if (lt_shape_numel(f->y_rank, dims) != b->raw->t.numel)
            return lt_errf(err, LT_ERR_INTERNAL, "%s: target sizes disagree", f->path);
        if (!(b->y = lt_value_new_tensor()))
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        lt_tensor_view(&b->y->t, &b->raw->t, f->y_rank, dims);
        return LT_OK;
    }
    /* one-hot rows or class values, made from the labels each batch */
    return new_tensor_value(LT_F32, f->y_rank, f->y_shape, n, &b->y, err);
}

void lt_feed_batch_free(lt_feed_batch *b)
{
    lt_value_free(b->x);
    lt_value_free(b->raw);
    lt_value_free(b->y);
    lt_value_free(b->xin);
    lt_value_free(b->yin);
    memset(b, 0, sizeof *b);
}

lt_status lt_feed_targets(const lt_feed *f, lt_feed_batch *b, lt_err *err)
{
    const lt_tensor *raw = &b->raw->t;
    if (f->y_kind != LT_TARGET_ONEHOT && f->y_kind != LT_TARGET_CLASS)
        return LT_OK;
    const int64_t *lab = raw->data;
    float *y = b->y->t.data;
    int64_t C = f->y_kind == LT_TARGET_ONEHOT ? f->y_shape[1] : 1;
    if (C > 1)
        memset(y, 0, sizeof *y * (size_t)(b->n * C));
    for (int64_t i = 0; i < b->n; i++) {
        if (lab[i] < 0 || (C > 1 && lab[i] >= C) || (C == 1 && lab[i] > 1))
            return lt_errf(err, LT_ERR_INVALID, "%s: label %lld does not fit the output's %lld classes", f->path,
                           (long long)lab[i], (long long)(C > 1 ? C : 2));
        if (C > 1)
            y[i * C + lab[i]] = 1;
        else
            y[i] = (float)lab[i];
    }
    return LT_OK;
}

/* to[i] = from[i] for float32 from, float32 or float64 to */
static lt_value *widened(const lt_value *from, lt_value *to)
{
    const float *src = from->t.data;
    for (int64_t i = 0; i < to->t.numel; i++)
        lt_tensor_set_f64(&to->t, i, src[i]);
    return to;
}

/* to [N,H,W,C] from the same samples [C,H,W] in from */
static lt_value *channels_last(const lt_value *from, lt_value *to)
{
    const float *src = from->t.data;
    const int64_t N = to->t.dims[0], H = to->t.dims[1], W = to->t.dims[2], C = to->t.dims[3];
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t p = 0; p < H * W; p++)
                lt_tensor_set_f64(&to->t, (n * H * W + p) * C + c, src[(n * C + c) * H * W + p]);
    return to;
}

void lt_feed_inputs(const lt_feed *f, lt_feed_batch *b, lt_value *in[2])
{
    in[0] = !b->xin ? b->x : f->x_channels_last ? channels_last(b->x, b->xin) : widened(b->x, b->xin);
    in[1] = b->y ? (b->yin ? widened(b->y, b->yin) : b->y) : b->raw;
}

/* index of the largest of row[0..C) */
static int64_t argmax_row(const lt_tensor *t, int64_t off, int64_t C)
{
    int64_t best = 0;
    double mx = -INFINITY;
    for (int64_t c = 0; c < C; c++) {
        double z = lt_tensor_get_f64(t, off + c);
        if (z > mx) {
            mx = z;
            best = c;
        }
    }
    return best;
}

static lt_status score_classes(const lt_feed *f, const lt_tensor *o, const int64_t *lab, int64_t n, double *loss_sum,
                               int64_t *correct, int64_t *counted, lt_err *err)
{
    if (o->rank != 2 || o->dims[0] != n || o->dims[1] < 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: the output must be class scores [N, classes], got rank %d", f->path,
                       o->rank);
    int64_t C = o->dims[1];
    for (int64_t i = 0; i < n; i++) {
        if (lab[i] == f->ignore_index)
            continue;
        ++*counted;
        if (lab[i] < 0 || lab[i] >= C)
            return lt_errf(err, LT_ERR_INVALID, "%s: label %lld does not fit the model's %lld classes", f->path,
                           (long long)lab[i], (long long)C);
        int64_t best = argmax_row(o, i * C, C);
        double zl = lt_tensor_get_f64(o, i * C + lab[i]);
        if (f->loss == LT_LOSS_NLL) {
            *loss_sum -= zl;
        } else {
            double mx = lt_tensor_get_f64(o, i * C + best), sum = 0;
            for (int64_t c = 0; c < C; c++)
                sum += exp(lt_tensor_get_f64(o, i * C + c) - mx);
            *loss_sum += log(sum) + mx - zl;
        }
        *correct += best == lab[i];
    }
    return LT_OK;
}

/* mse / bce-logits against float targets t (numel n K), and accuracy when
 * the targets came from class labels */
static lt_status score_targets(const lt_feed *f, const lt_tensor *o, const lt_feed_batch *b, double *loss_sum,
                               int64_t *correct, lt_err *err)
{
    const lt_tensor *t = &b->y->t;
    int64_t n = b->n;
    if (o->numel != t->numel || o->rank < 1 || o->dims[0] != n)
        return lt_errf(err, LT_ERR_INVALID, "%s: the output has %lld values for %lld samples; the targets have %lld",
                       f->path, (long long)o->numel, (long long)n, (long long)t->numel);
    int64_t K = n ? o->numel / n : 0;
    const float *tv = t->data;
    for (int64_t i = 0; i < n; i++) {
        double s = 0;
        for (int64_t k = 0; k < K; k++) {
            double z = lt_tensor_get_f64(o, i * K + k), y = tv[i * K + k];
            if (f->loss == LT_LOSS_MSE)
                s += (z - y) * (z - y);
            else
                s += (z > 0 ? z : 0) - z * y + log1p(exp(-fabs(z)));
        }
        *loss_sum += K ? s / (double)K : 0;
        if (f->y_kind == LT_TARGET_ONEHOT) {
            *correct += tv[i * K + argmax_row(o, i * K, K)] == 1.0f;
        } else if (f->y_kind == LT_TARGET_CLASS) {
            double z = lt_tensor_get_f64(o, i);
            int64_t pred = f->loss == LT_LOSS_BCE_LOGITS ? z > 0 : (int64_t)llround(z);
            *correct += pred == (int64_t)tv[i];
        }
    }
    return LT_OK;
}

lt_status lt_feed_score(const lt_feed *f, const lt_value *out, const lt_feed_batch *b, double *loss_sum,
                        int64_t *correct, int64_t *counted, lt_err *err)
{
    const lt_tensor *o = lt_value_tensor(out);
    if (!o || !lt_dtype_is_float(o->dtype) /* read through lt_tensor_get_f64: float16 too */)
        return lt_errf(err, LT_ERR_INVALID, "%s: the output the loss reads is not a float tensor", f->path);
    if (f->loss != LT_LOSS_SOFTMAX_CROSS_ENTROPY && f->loss != LT_LOSS_NLL)
        *counted += b->n;
    switch (f->loss) {
    case LT_LOSS_SOFTMAX_CROSS_ENTROPY:
    case LT_LOSS_NLL:
        return score_classes(f, o, b->raw->t.data, b->n, loss_sum, correct, counted, err);
    case LT_LOSS_MSE:
    case LT_LOSS_BCE_LOGITS:
        return score_targets(f, o, b, loss_sum, correct, err);
    case LT_LOSS_MODEL:
        if (o->numel != 1)
            return lt_errf(err, LT_ERR_INVALID, "%s: --loss model needs a scalar loss output; it has %lld values",
                           f->path, (long long)o->numel);
        *loss_sum += lt_tensor_get_f64(o, 0) * (double)b->n;
        return LT_OK;
    default:
        return lt_errf(err, LT_ERR_INVALID, "%s: loss %d cannot be scored", f->path, (int)f->loss);
    }
}

lt_status lt_feed_evaluate(const lt_feed *f, lt_session *s, lt_model *m, const lt_dataset *d, int64_t limit,
                           lt_eval_result *r, lt_err *err)
{
    int64_t n = lt_dataset_size(d);
    return lt_feed_evaluate_sel(f, s, m, d, NULL, limit > 0 && limit < n ? limit : n, r, err);
}

lt_status lt_feed_evaluate_sel(const lt_feed *f, lt_session *s, lt_model *m, const lt_dataset *d, const int64_t *sel,
                               int64_t n, lt_eval_result *r, lt_err *err)
{
    int64_t batch = f->fixed_batch ? f->fixed_batch : LT_EVAL_BATCH;
    if (f->fixed_batch)
        n -= n % batch; /* the rest does not fill the model's batch */
    if (n <= 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: no samples to evaluate (the model's batch is %lld)", f->path,
                       (long long)batch);
    lt_status ls = check_labels(f, d, err);
    if (ls != LT_OK)
        return ls;
    int nout = lt_model_num_outputs(m);
    lt_value **out = calloc((size_t)nout, sizeof *out);
    int64_t *idx = malloc(sizeof *idx * (size_t)batch);
    lt_feed_batch full = {0}, last = {0};
    lt_status st = out && idx ? lt_feed_batch_new(f, d, batch < n ? batch : n, &full, err)
                              : lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (st == LT_OK && n > batch && n % batch)
        st = lt_feed_batch_new(f, d, n % batch, &last, err);
    double loss = 0;
    int64_t correct = 0, counted = 0;
    for (int64_t at = 0; at < n && st == LT_OK; at += batch) {
        lt_feed_batch *b = n - at >= full.n ? &full : &last;
        for (int64_t i = 0; i < b->n; i++)
            idx[i] = sel ? sel[at + i] : at + i;
        st = lt_dataset_gather(d, idx, b->n, &b->x->t, &b->raw->t, err);
        if (st == LT_OK)
            st = lt_feed_targets(f, b, err);
        const char *names[2] = {f->x_name, f->y_name};
        lt_value *in[2];
        lt_feed_inputs(f, b, in);
        if (st == LT_OK)
            st = lt_session_run(s, f->loss == LT_LOSS_MODEL ? 2 : 1, names, in, out, err);
        if (st == LT_OK)
            st = lt_feed_score(f, out[f->out_index], b, &loss, &correct, &counted, err);
        for (int i = 0; i < nout; i++) {
            lt_value_free(out[i]);
            out[i] = NULL;
        }
    }
    if (st == LT_OK) {
        /* means over the samples counted (none counted: nan, as PyTorch's
         * mean over no labels) */
        r->loss = counted ? loss / (double)counted : NAN;
        r->has_accuracy = f->classes && f->loss != LT_LOSS_MODEL;
        r->accuracy = r->has_accuracy && counted ? (double)correct / (double)counted : NAN;
        r->count = n;
    }
    lt_feed_batch_free(&full);
    lt_feed_batch_free(&last);
    free(out);
    free(idx);
    return st;
}
