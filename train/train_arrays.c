/* Named npz arrays feeding a model: every model input without a default
 * takes the array of its name (x for a one-input model) in the element type
 * it declares; the loss compares its output with y (or --labels). An input
 * whose rank is the samples' rank + 1 has a batch axis: the one axis whose
 * removal leaves the sample's shape, or among several the symbolic one the
 * loss's output shares, or one named like a batch, or --batch-axis INPUT=K.
 * An input of the samples' own rank has none: it takes one sample per run,
 * as does any input fed from a ragged array. Class scores keep their
 * classes on the last axis; labels have the output's other axes. */
#include "train_arrays.h"
#include "train_feed.h"
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define LT_AFEED_EVAL_BATCH 64

static bool dim_known(const lt_type *t, int i) { return t->dims[i].sym < 0 && t->dims[i].v >= 0; }

/* "2x?x8" (? where the model leaves a dim open); "rows" for the ragged axis */
static void dims_text(int rank, const int64_t *dims, bool ragged, char *buf, size_t len)
{
    size_t at = 0;
    buf[0] = 0;
    if (rank == 0)
        snprintf(buf, len, "scalars");
    for (int i = 0; i < rank && at + 24 < len; i++) {
        if (i == 0 && ragged)
            at += (size_t)snprintf(buf + at, len - at, "(rows)");
        else
            at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? "x" : "", (long long)dims[i]);
    }
}

/* the array's sample dims, the ragged axis as -1 */
static int sample_dims(const lt_ds_array *a, int64_t *sd)
{
    int sr = lt_ds_array_sample_rank(a);
    if (a->splits) {
        sd[0] = -1;
        memcpy(sd + 1, a->t.dims + 1, sizeof *sd * (size_t)(sr - 1));
    } else {
        memcpy(sd, a->t.dims + 1, sizeof *sd * (size_t)sr);
    }
    return sr;
}

/* t's dims, skipping axis skip (and the last one when drop_last), match the
 * sample's where both are known */
static bool dims_match(const lt_type *t, int skip, bool drop_last, int sr, const int64_t *sd)
{
    int j = 0, end = t->rank - (drop_last ? 1 : 0);
    for (int i = 0; i < end; i++) {
        if (i == skip)
            continue;
        if (j >= sr)
            return false;
        if (dim_known(t, i) && sd[j] >= 0 && t->dims[i].v != sd[j])
            return false;
        j++;
    }
    return j == sr;
}

static bool batch_like(const char *s)
{
    if (!strcmp(s, "N") || !strcmp(s, "B") || !strcmp(s, "n") || !strcmp(s, "b"))
        return true;
    for (const char *p = s; *p; p++)
        if (tolower((unsigned char)p[0]) == 'b' && !strncasecmp(p, "batch", 5))
            return true;
    return false;
}

static bool type_has_sym(const lt_type *t, int sym)
{
    for (int i = 0; i < t->rank; i++)
        if (t->dims[i].sym == sym)
            return true;
    return false;
}

/* The batch axis of input type t for samples (sr, sd): -1 when no axis
 * fits, -2 when several do and nothing tells them apart. */
static int find_batch_axis(const lt_model *m, const lt_type *t, const lt_type *out, int sr, const int64_t *sd)
{
    /* a fixed size is the batch only in a model that fixes every size */
    bool all_known = true;
    for (int k = 0; k < t->rank; k++)
        all_known = all_known && dim_known(t, k);
    int cand[LT_MAX_RANK], n = 0;
    for (int k = 0; k < t->rank; k++)
        if ((all_known || !dim_known(t, k)) && dims_match(t, k, false, sr, sd))
            cand[n++] = k;
    if (n <= 1)
        return n ? cand[0] : -1;
    /* a batch is a symbolic dim... */
    int c2[LT_MAX_RANK], n2 = 0;
    for (int i = 0; i < n; i++)
        if (!dim_known(t, cand[i]))
            c2[n2++] = cand[i];
    if (n2 == 1)
        return c2[0];
    if (n2 == 0)
        return -2;
    /* ...that the loss's output shares... */
    int c3[LT_MAX_RANK], n3 = 0;
    for (int i = 0; i < n2; i++)
        if (t->dims[c2[i]].sym >= 0 && out && type_has_sym(out, t->dims[c2[i]].sym))
            c3[n3++] = c2[i];
    if (n3 == 1)
        return c3[0];
    if (n3 == 0) {
        memcpy(c3, c2, sizeof *c3 * (size_t)n2);
        n3 = n2;
    }
    /* ...and is named like one */
    int pick = -2, hits = 0;
    for (int i = 0; i < n3; i++) {
        int sym = t->dims[c3[i]].sym;
        if (sym >= 0 && batch_like(m->syms[sym])) {
            pick = c3[i];
            hits++;
        }
    }
    return hits == 1 ? pick : -2;
}

static bool type_fits(lt_dtype input, lt_dtype array)
{
    if (input == LT_UNDEFINED || input == array)
        return true;
    if (lt_dtype_is_float(input))
        return lt_dtype_is_float(array);
    if (lt_dtype_is_int(input))
        return lt_dtype_is_int(array);
    return false;
}

/* --batch-axis INPUT=K for input name: *k set and 1 when given */
static lt_status given_axis(const lt_model *m, const lt_train_opts *o, const lt_ival *v, int *k, lt_err *err)
{
    *k = -3;
    for (int i = 0; i < o->nbatch_axes; i++) {
        const char *s = o->batch_axes[i], *eq = strrchr(s, '=');
        if (!eq || (size_t)(eq - s) != strlen(v->name) || strncmp(s, v->name, (size_t)(eq - s)) != 0)
            continue;
        char *end;
        long val = strtol(eq + 1, &end, 10);
        if (end == eq + 1 || *end || val < 0 || val >= v->type.rank)
            return lt_errf(err, LT_ERR_INVALID, "--batch-axis %s: input '%s' has rank %d; K must be 0..%d", s, v->name,
                           v->type.rank, v->type.rank - 1);
        *k = (int)val;
    }
    (void)m;
    return LT_OK;
}

static lt_status check_axis_names(const lt_model *m, const lt_train_opts *o, const int *free_in, int nfree,
                                  lt_err *err)
{
    for (int i = 0; i < o->nbatch_axes; i++) {
        const char *s = o->batch_axes[i], *eq = strrchr(s, '=');
        bool found = false;
        for (int k = 0; k < nfree && eq; k++) {
            const char *nm = m->main->params[free_in[k]]->name;
            found = found || ((size_t)(eq - s) == strlen(nm) && !strncmp(s, nm, (size_t)(eq - s)));
        }
        if (!found)
            return lt_errf(err, LT_ERR_INVALID, "--batch-axis %s: give INPUT=K with INPUT a model input without a "
                           "default", s);
    }
    return LT_OK;
}

static lt_status plan_input(const lt_model *m, const lt_afeed *f, const lt_train_opts *o, const lt_ival *v,
                            const lt_ds_array *a, const lt_type *out, lt_afeed_slot *slot, lt_err *err)
{
    const char *data = f->data->path;
    char have[256], samp[128];
    lt_feed_type_text(m, &v->type, have, sizeof have);
    slot->name = v->name;
    slot->src = a;
    slot->dtype = v->type.dtype == LT_UNDEFINED ? a->t.dtype : v->type.dtype;
    if (v->type.kind != LT_KIND_TENSOR)
        return lt_errf(err, LT_ERR_INVALID, "%s: input '%s' is %s; arrays feed tensors only", f->path, v->name, have);
    if (!type_fits(v->type.dtype, a->t.dtype))
        return lt_errf(err, LT_ERR_INVALID, "%s: array '%s' is %s, but the model's input '%s' takes %s (%s)", data,
                       a->member, lt_dtype_name(a->t.dtype), v->name, lt_dtype_name(v->type.dtype), have);
    if (a->shared) {
        /* one value every run: a rank-0 input (a Loop's trip count) */
        if (v->type.rank != 0)
            return lt_errf(err, LT_ERR_INVALID, "%s: array '%s' is a single value (0-d), which feeds a rank-0 input "
                           "whole every run; the model's input '%s' is %s", data, a->member, v->name, have);
        slot->rank = 0;
        slot->axis = LT_AFEED_WHOLE;
        return LT_OK;
    }
    if (v->type.rank < 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: input '%s' has no declared rank; lantern cannot tell how array '%s' "
                       "feeds it", f->path, v->name, a->member);
    int64_t sd[LT_MAX_RANK];
    int sr = sample_dims(a, sd);
    dims_text(sr, sd, a->splits != NULL, samp, sizeof samp);
    slot->rank = v->type.rank;
    int k;
    lt_status st = given_axis(m, o, v, &k, err);
    if (st != LT_OK)
        return st;
    if (k == -3 && v->type.rank == sr && dims_match(&v->type, -1, false, sr, sd)) {
        slot->axis = -1; /* no batch axis: one sample as it is */
        return LT_OK;
    }
    if (v->type.rank != sr + 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: array '%s' holds samples of %s, but the model's input '%s' is %s: it "
                       "takes rank %d or %d samples", data, a->member, samp, v->name, have, v->type.rank - 1, v->type.rank);
    if (k == -3)
        k = find_batch_axis(m, &v->type, out, sr, sd);
    if (k == -2)
        return lt_errf(err, LT_ERR_INVALID, "%s: input '%s' is %s; lantern cannot tell which axis is the batch for "
                       "array '%s' (samples of %s): give --batch-axis %s=K", f->path, v->name, have, a->member, samp,
                       v->name);
    if (k < 0 || !dims_match(&v->type, k, false, sr, sd))
        return lt_errf(err, LT_ERR_INVALID, "%s: array '%s' holds samples of %s, which the model's input '%s' (%s) "
                       "does not take%s", data, a->member, samp, v->name, have, k >= 0 ? " with that batch axis" : "");
    slot->axis = k;
    return LT_OK;
}

/* The output's axis that holds the batch of input slot s (type it). */
static int output_axis(const lt_type *ot, const lt_type *it, int iaxis, int64_t fixed)
{
    int sym = it->dims[iaxis].sym;
    for (int i = 0; i < ot->rank && sym >= 0; i++)
        if (ot->dims[i].sym == sym)
            return i;
    for (int i = 0; i < ot->rank && fixed > 0; i++)
        if (dim_known(ot, i) && ot->dims[i].v == fixed)
            return i;
    return 0;
}

static lt_status plan_target(const lt_model *m, lt_afeed *f, const lt_train_opts *o, const lt_ival *out,
                             const lt_ival *first_in, int first_axis, lt_err *err)
{
    const char *data = f->data->path, *lname = o->labels ? o->labels : "y";
    const lt_ds_array *a = lt_arrays_find(f->data, lname);
    if (!a)
        return lt_errf(err, LT_ERR_INVALID, "%s: no array '%s%s' with the %s (it holds %s)%s", data, lname,
                       f->data->split ? "_test" : "", f->loss == LT_LOSS_MSE || f->loss == LT_LOSS_BCE_LOGITS ?
                       "targets" : "labels", f->data->listing, o->labels ? "" : "; --labels NAME picks another array");
    if (a->shared)
        return lt_errf(err, LT_ERR_INVALID, "%s: array '%s' is a single value (0-d); the %s hold one per sample", data,
                       a->member, f->loss == LT_LOSS_MSE || f->loss == LT_LOSS_BCE_LOGITS ? "targets" : "labels");
    const lt_type *ot = &out->type;
    char have[256], samp[128];
    lt_feed_type_text(m, ot, have, sizeof have);
    if (ot->rank < 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: output '%s' has no known rank; lantern cannot line the %s up with it",
                       f->path, out->name, a->member);
    bool classes = f->loss == LT_LOSS_SOFTMAX_CROSS_ENTROPY || f->loss == LT_LOSS_NLL;
    lt_afeed_slot *s = &f->slot[f->nslot];
    s->src = a;
    s->axis = f->batched ? output_axis(ot, &first_in->type, first_axis, f->fixed_batch) : -1;
    int64_t sd[LT_MAX_RANK];
    int sr = sample_dims(a, sd);
    dims_text(sr, sd, a->splits != NULL, samp, sizeof samp);
    int cax = ot->rank - 1; /* the class axis */
    if (classes) {
        if (!lt_dtype_is_int(a->t.dtype))
            return lt_errf(err, LT_ERR_INVALID, "%s: array '%s' is %s; --loss %s takes integer class labels", data,
                           a->member, lt_dtype_name(a->t.dtype), lt_loss_name(f->loss));
        f->class_axis = o->class_axis;
        if (!f->class_axis && ot->rank >= 3 && s->axis == 0 && sr == ot->rank - 2) {
            /* the axis the labels leave out (lt_model_class_axis) */
            int64_t ld[LT_MAX_RANK + 1] = {-1};
            memcpy(ld + 1, sd, sizeof *sd * (size_t)sr);
            lt_status cs = lt_model_class_axis(m, out->name, sr + 1, ld, &f->class_axis, err);
            if (cs != LT_OK)
                return cs;
        }
        if (f->class_axis != 1 || ot->rank < 3)
            f->class_axis = -1;
        if (f->class_axis == 1 && s->axis != 0)
            return lt_errf(err, LT_ERR_INVALID, "%s: output '%s' is %s; classes on axis 1 need the batch on axis 0",
                           f->path, out->name, have);
        cax = f->class_axis == 1 ? 1 : ot->rank - 1;
        if (ot->rank < 2 || s->axis == cax)
            return lt_errf(err, LT_ERR_INVALID, "%s: output '%s' is %s; --loss %s reads class scores on its %s axis "
                           "with a %s axis before it", f->path, out->name, have, lt_loss_name(f->loss),
                           cax == 1 ? "second" : "last", f->batched ? "batch" : "sample");
        s->name = "labels";
        s->dtype = LT_I64;
        s->rank = ot->rank - 1;
        f->classes = dim_known(ot, cax) ? ot->dims[cax].v : 0;
    } else {
        if (!lt_dtype_is_float(a->t.dtype) && !lt_dtype_is_int(a->t.dtype))
            return lt_errf(err, LT_ERR_INVALID, "%s: array '%s' is %s; --loss %s takes numeric targets", data,
                           a->member, lt_dtype_name(a->t.dtype), lt_loss_name(f->loss));
        s->name = "targets";
        s->dtype = lt_dtype_is_float(ot->dtype) ? ot->dtype : LT_F32; /* the targets input is typed like the output */
        s->rank = ot->rank;
    }
    int want = s->rank - (s->axis >= 0 ? 1 : 0);
    bool fits = sr == want;
    if (fits && classes && cax == 1) {
        /* the output's axes from 2 on */
        for (int d = 2, j = 0; d < ot->rank && fits; d++, j++)
            fits = !dim_known(ot, d) || sd[j] < 0 || ot->dims[d].v == sd[j];
    } else if (fits) {
        fits = dims_match(ot, s->axis, classes, sr, sd);
    }
    if (!fits) {
        /* what a sample should be: the output's axes but the batch (and the classes) */
        char need[128] = "";
        size_t at = 0;
        for (int d = 0; d < ot->rank && at + 24 < sizeof need; d++)
            if (d != s->axis && !(classes && d == cax))
                at += dim_known(ot, d) ? (size_t)snprintf(need + at, sizeof need - at, "%s%lld", at ? "x" : "",
                                                          (long long)ot->dims[d].v)
                                       : (size_t)snprintf(need + at, sizeof need - at, "%s?", at ? "x" : "");
        return lt_errf(err, LT_ERR_INVALID, "%s: array '%s' holds %s of %s per sample; output '%s' is %s, so each "
                       "sample needs %s of %s%s", data, a->member, classes ? "labels" : "targets", samp, out->name,
                       have, classes ? "labels" : "targets", at ? need : "scalars",
                       !classes     ? " (the output's axes but the batch)"
                       : cax == 1 ? " (the output's axes but the batch and the second, the classes)"
                                  : " (the output's axes but the batch and the last, the classes)");
    }
    f->target = f->nslot++;
    return LT_OK;
}

/* Inputs that share a symbolic dim (input_ids and attention_mask, both
 * [batch, seq]) must get arrays that agree on it; else the model fails in
 * its first run (on a test split: after a whole epoch of training), or,
 * where one of them is 1, broadcasts it and trains on something else (a
 * mask of one position for ids of 20). Ragged arrays vary per sample: every
 * sample is checked. */
static lt_status check_shared_dims(const lt_model *m, const lt_afeed *f, const int *free_in, lt_err *err)
{
    /* the first slot to give each symbolic dim, and its size there */
    struct {
        int sym, slot;
        int64_t v;
    } seen[(LT_AFEED_MAX + 1) * LT_MAX_RANK];
    int64_t samples = f->ragged ? f->data->samples : 1;
    for (int64_t k = 0; k < samples; k++) {
        int nseen = 0;
        for (int i = 0; i < f->nslot; i++) {
            const lt_afeed_slot *s = &f->slot[i];
            const lt_type *t = &m->main->params[free_in[i]]->type;
            int64_t sd[LT_MAX_RANK];
            if (s->axis == LT_AFEED_WHOLE)
                continue; /* rank 0: no dims */
            lt_ds_array_sample(s->src, k, sd);
            for (int d = 0; t->rank == s->rank && d < t->rank; d++) {
                int sym = t->dims[d].sym;
                if (sym < 0 || d == s->axis)
                    continue;
                int64_t v = sd[s->axis >= 0 && d > s->axis ? d - 1 : d];
                int q = 0;
                while (q < nseen && seen[q].sym != sym)
                    q++;
                if (q == nseen) {
                    seen[nseen].sym = sym;
                    seen[nseen].slot = i;
                    seen[nseen++].v = v;
                } else if (seen[q].v != v) {
                    const lt_afeed_slot *o = &f->slot[seen[q].slot];
                    char which[48] = "";
                    if (f->ragged)
                        snprintf(which, sizeof which, " for sample %lld", (long long)k);
                    return lt_errf(err, LT_ERR_INVALID, "%s: arrays '%s' (for input '%s') and '%s' (for input '%s') "
                                   "give the model's dim '%s' as %lld and %lld%s; inputs that share it must agree",
                                   f->data->path, o->src->member, o->name, s->src->member, s->name, m->syms[sym],
                                   (long long)seen[q].v, (long long)v, which);
                }
            }
        }
    }
    return LT_OK;
}

lt_status lt_afeed_check_samples(const lt_afeed *f, lt_err *err)
{
    if (f->target < 0 || (f->batched && !f->ragged))
        return LT_OK;
    const lt_afeed_slot *s = &f->slot[f->target];
    const lt_ds_array *a = s->src;
    bool classes = f->loss == LT_LOSS_SOFTMAX_CROSS_ENTROPY || f->loss == LT_LOSS_NLL;
    lt_tensor whole = a->t;
    for (int64_t i = 0; i < f->data->samples; i++) {
        int64_t sd[LT_MAX_RANK], n = 1, kept = 0;
        const char *p = lt_ds_array_sample(a, i, sd);
        for (int d = 0; d < lt_ds_array_sample_rank(a); d++)
            n *= sd[d];
        int64_t off = (int64_t)((p - (const char *)a->t.data) / (ptrdiff_t)lt_dtype_size(a->t.dtype));
        for (int64_t j = 0; j < n && !kept; j++)
            kept += !classes || lt_tensor_get_i64(&whole, off + j) != f->ignore_index;
        if (!kept)
            return lt_errf(err, LT_ERR_INVALID, "%s: sample %lld of '%s' holds no %s%s: its loss, a mean over them, "
                           "would be nan; leave the sample out", f->data->path, (long long)i, a->member,
                           classes ? "labels" : "targets", classes && n ? " but the ignore index" : "");
    }
    return LT_OK;
}

lt_status lt_afeed_plan(const lt_model *m, const lt_arrays *a, const lt_train_opts *o, lt_afeed *f, lt_err *err)
{
    memset(f, 0, sizeof *f);
    f->path = m->path;
    f->data = a;
    f->loss = o->loss;
    f->target = -1;
    f->ignore_index = o->set_ignore_index ? o->ignore_index : -100;
    const lt_block *b = m->main;
    if (o->output) {
        f->out_index = -1;
        for (int r = 0; r < b->nresults; r++)
            if (!strcmp(b->results[r]->name, o->output))
                f->out_index = r;
        if (f->out_index < 0)
            return lt_errf(err, LT_ERR_INVALID, "%s: the model has no output named '%s'", m->path, o->output);
    } else if (b->nresults < 1) {
        return lt_errf(err, LT_ERR_INVALID, "%s: the model has no output", m->path);
    }
    const lt_ival *out = b->results[f->out_index];
    int free_in[LT_AFEED_MAX], nfree = 0;
    for (int i = 0; i < b->nparams; i++)
        if (!m->input_default || m->input_default[i] < 0) {
            if (nfree == LT_AFEED_MAX)
                return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: more than %d inputs without a default", m->path,
                               LT_AFEED_MAX);
            free_in[nfree++] = i;
        }
    if (nfree == 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: the model has no input without a default to feed", m->path);
    lt_status st = check_axis_names(m, o, free_in, nfree, err);
    int first = -1, fslot = -1; /* the first input fed samples, and its slot */
    for (int i = 0; i < nfree && st == LT_OK; i++) {
        const lt_ival *v = b->params[free_in[i]];
        const lt_ds_array *arr = lt_arrays_find(a, v->name);
        if (!arr && nfree == 1)
            arr = lt_arrays_find(a, "x");
        if (!arr)
            return lt_errf(err, LT_ERR_INVALID, "%s: no array '%s%s' for the model's input '%s' (it holds %s)", a->path,
                           v->name, a->split ? "_test" : "", v->name, a->listing);
        lt_afeed_slot *s = &f->slot[f->nslot];
        st = plan_input(m, f, o, v, arr, &out->type, s, err);
        if (st != LT_OK)
            break;
        f->ragged = f->ragged || arr->splits;
        if (s->axis == LT_AFEED_WHOLE) {
            f->nslot++;
            continue;
        }
        if (first < 0) {
            f->batched = s->axis >= 0;
            first = free_in[i];
            fslot = f->nslot;
        } else if (f->batched != (s->axis >= 0)) {
            const lt_afeed_slot *s0 = &f->slot[fslot];
            return lt_errf(err, LT_ERR_INVALID, "%s: input '%s' %s a batch axis for array '%s' but input '%s' %s one "
                           "for array '%s'; all inputs take batches or all take single samples", m->path, s0->name,
                           f->batched ? "has" : "has no", s0->src->member, s->name, f->batched ? "has no" : "has",
                           arr->member);
        }
        f->nslot++;
    }
    if (st == LT_OK && first < 0)
        st = lt_errf(err, LT_ERR_INVALID, "%s: every input the model takes from %s is fed a single value (0-d); "
                     "samples come as arrays with one per row along axis 0", m->path, a->path);
    if (st == LT_OK)
        st = check_shared_dims(m, f, free_in, err);
    if (st != LT_OK)
        return st;
    if (f->batched) {
        const lt_ival *v0 = b->params[first];
        const lt_dim *bd = &v0->type.dims[f->slot[fslot].axis];
        f->fixed_batch = bd->sym < 0 && bd->v > 0 ? bd->v : 0;
    }
    if (f->loss == LT_LOSS_MODEL)
        return LT_OK;
    if (f->loss != LT_LOSS_SOFTMAX_CROSS_ENTROPY && f->loss != LT_LOSS_NLL && f->loss != LT_LOSS_MSE &&
        f->loss != LT_LOSS_BCE_LOGITS)
        return lt_errf(err, LT_ERR_INVALID, "%s: loss %s cannot train a model", m->path, lt_loss_name(f->loss));
    return plan_target(m, f, o, out, b->params[first], f->slot[fslot].axis, err);
}

int64_t lt_afeed_run_size(const lt_afeed *f, int64_t B) { return f->batched && !f->ragged ? B : 1; }

/* ---- program inputs ---- */

/* count elements of type sdt at src into dst from element off, converted
 * to dst's type; integers must keep their value */
static lt_status convert(lt_tensor *dst, int64_t off, const void *src, lt_dtype sdt, int64_t count,
                         const lt_afeed_slot *s, lt_err *err)
{
    size_t es = lt_dtype_size(sdt);
    lt_tensor view = {.dtype = sdt, .rank = 1, .dims = {count}, .numel = count, .data = (void *)src};
    if (lt_dtype_is_float(sdt))
        for (int64_t j = 0; j < count; j++) {
            /* a nan would only show as a diverged loss (an infinity may be
             * meant: an additive attention mask's -inf) */
            double v = lt_tensor_get_f64(&view, j);
            if (isnan(v))
                return lt_errf(err, LT_ERR_INVALID, "%s: holds nan where %s takes a value; the data must be numbers",
                               s->src->member, s->name);
        }
    if (sdt == dst->dtype) {
        memcpy((char *)dst->data + (size_t)off * es, src, (size_t)count * es);
        return LT_OK;
    }
    if (lt_dtype_is_float(dst->dtype)) {
        for (int64_t j = 0; j < count; j++)
            lt_tensor_set_f64(dst, off + j, lt_tensor_get_f64(&view, j));
        return LT_OK;
    }
    for (int64_t j = 0; j < count; j++) {
        int64_t v = lt_tensor_get_i64(&view, j);
        lt_tensor_set_i64(dst, off + j, v);
        if (lt_tensor_get_i64(dst, off + j) == v && !(sdt == LT_U64 && v < 0)) /* v < 0: past INT64_MAX */
            continue;
        char val[32];
        if (sdt == LT_U64)
            snprintf(val, sizeof val, "%llu", (unsigned long long)v);
        else
            snprintf(val, sizeof val, "%lld", (long long)v);
        return lt_errf(err, LT_ERR_INVALID, "array '%s' (%s) holds %s, which input '%s' (%s) cannot hold",
                       s->src->member, lt_dtype_name(sdt), val, s->name, lt_dtype_name(dst->dtype));
    }
    return LT_OK;
}

static lt_status make_slot(const lt_afeed *f, const lt_afeed_slot *s, const int64_t *idx, int64_t k, lt_value **out,
                           lt_err *err)
{
    const lt_ds_array *a = s->src;
    if (s->axis == LT_AFEED_WHOLE) {
        lt_value *v = lt_value_new_tensor();
        if (!v)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        *out = v;
        lt_status st = lt_tensor_alloc(&v->t, s->dtype, 0, NULL, err);
        return st == LT_OK ? convert(&v->t, 0, a->t.data, a->t.dtype, 1, s, err) : st;
    }
    int64_t sd[LT_MAX_RANK], dims[LT_MAX_RANK], sdj[LT_MAX_RANK];
    int sr = lt_ds_array_sample_rank(a);
    lt_ds_array_sample(a, idx[0], sd);
    int rank = s->axis >= 0 ? sr + 1 : sr;
    if (s->axis < 0 && k != 1)
        return lt_errf(err, LT_ERR_INTERNAL, "%s: %lld samples in one run without a batch axis", f->path, (long long)k);
    for (int i = 0, j = 0; i < rank; i++)
        dims[i] = i == s->axis ? k : sd[j++];
    lt_value *v = lt_value_new_tensor();
    if (!v)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    *out = v;
    lt_status st = lt_tensor_alloc(&v->t, s->dtype, rank, dims, err);
    int ax = s->axis < 0 ? 0 : s->axis;
    int64_t outer = 1, inner = 1;
    for (int i = 0; i < sr; i++)
        *(i < ax ? &outer : &inner) *= sd[i];
    size_t es = lt_dtype_size(a->t.dtype);
    for (int64_t j = 0; j < k && st == LT_OK; j++) {
        const char *p = lt_ds_array_sample(a, idx[j], sdj);
        if (memcmp(sdj, sd, sizeof *sd * (size_t)sr) != 0)
            return lt_errf(err, LT_ERR_INTERNAL, "%s: samples of different shapes in one batch", a->member);
        if (s->axis < 0)
            st = convert(&v->t, 0, p, a->t.dtype, inner, s, err);
        for (int64_t o = 0; o < outer && st == LT_OK && s->axis >= 0; o++)
            st = convert(&v->t, (o * k + j) * inner, p + (size_t)(o * inner) * es, a->t.dtype, inner, s, err);
    }
    if (st == LT_OK && s->dtype == LT_I64 && f->target >= 0 && s == &f->slot[f->target]) {
        const int64_t *lab = v->t.data;
        for (int64_t i = 0; i < v->t.numel; i++)
            if (lab[i] != f->ignore_index && (lab[i] < 0 || (f->classes > 0 && lab[i] >= f->classes)))
                return lt_errf(err, LT_ERR_INVALID, "%s: %s holds label %lld (sample %lld); the output scores classes "
                               "0..%lld, and %lld is the ignore index", f->data->path, a->member, (long long)lab[i],
                               (long long)idx[s->axis >= 0 ? i / inner % k : 0], (long long)(f->classes - 1), (long long)f->ignore_index);
    }
    return st;
}

lt_status lt_afeed_make(const lt_afeed *f, const int64_t *idx, int64_t k, const char **names, lt_value **values,
                        lt_err *err)
{
    lt_status st = LT_OK;
    for (int i = 0; i < f->nslot; i++)
        values[i] = NULL;
    for (int i = 0; i < f->nslot && st == LT_OK; i++) {
        names[i] = f->slot[i].name;
        st = make_slot(f, &f->slot[i], idx, k, &values[i], err);
    }
    if (st != LT_OK)
        lt_afeed_free_values(f, values);
    return st;
}

void lt_afeed_free_values(const lt_afeed *f, lt_value **values)
{
    for (int i = 0; i < f->nslot; i++) {
        lt_value_free(values[i]);
        values[i] = NULL;
    }
}

/* ---- evaluation ---- */

typedef struct score {
    double loss;
    int64_t correct, count;
} score;

static lt_status score_run(const lt_afeed *f, const lt_tensor *o, const lt_tensor *t, int64_t k, score *sc,
                           lt_err *err)
{
    if (!o || !lt_dtype_is_float(o->dtype) /* read through lt_tensor_get_f64: float16 too */)
        return lt_errf(err, LT_ERR_INVALID, "%s: the output the loss reads is not a float tensor", f->path);
    if (f->loss == LT_LOSS_MODEL) {
        if (o->numel != 1)
            return lt_errf(err, LT_ERR_INVALID, "%s: --loss model needs a scalar loss output; it has %lld values",
                           f->path, (long long)o->numel);
        sc->loss += lt_tensor_get_f64(o, 0) * (double)k;
        sc->count += k;
        return LT_OK;
    }
    if (f->loss == LT_LOSS_MSE || f->loss == LT_LOSS_BCE_LOGITS) {
        if (o->numel != t->numel)
            return lt_errf(err, LT_ERR_INVALID, "%s: the output has %lld values; the targets have %lld", f->path,
                           (long long)o->numel, (long long)t->numel);
        for (int64_t i = 0; i < o->numel; i++) {
            double z = lt_tensor_get_f64(o, i), y = lt_tensor_get_f64(t, i);
            sc->loss += f->loss == LT_LOSS_MSE ? (z - y) * (z - y) : (z > 0 ? z : 0) - z * y + log1p(exp(-fabs(z)));
        }
        sc->count += o->numel;
        return LT_OK;
    }
    /* class c of label r (outer o, position p) at (o * C + c) * inner + p:
     * classes last, inner is 1; on axis 1 ([N, C, d1, ...]), outer the batch */
    int cax = f->class_axis == 1 && o->rank >= 3 ? 1 : o->rank - 1;
    int64_t C = o->rank >= 1 ? o->dims[cax] : 0, rows = C > 0 ? o->numel / C : 0;
    int64_t inner = 1;
    for (int d = cax + 1; d < o->rank; d++)
        inner *= o->dims[d];
    if (C < 1 || rows != t->numel)
        return lt_errf(err, LT_ERR_INVALID, "%s: the output has %lld rows of class scores for %lld labels", f->path,
                       (long long)rows, (long long)t->numel);
    const int64_t *lab = t->data;
    for (int64_t r = 0; r < rows; r++) {
        if (lab[r] == f->ignore_index)
            continue;
        if (lab[r] < 0 || lab[r] >= C)
            return lt_errf(err, LT_ERR_INVALID, "%s: label %lld does not fit the model's %lld classes", f->path,
                           (long long)lab[r], (long long)C);
        int64_t best = 0, base = r / inner * C * inner + r % inner;
        double mx = -INFINITY, sum = 0;
        for (int64_t c = 0; c < C; c++) {
            double z = lt_tensor_get_f64(o, base + c * inner);
            if (z > mx) {
                mx = z;
                best = c;
            }
        }
        double zl = lt_tensor_get_f64(o, base + lab[r] * inner);
        if (f->loss == LT_LOSS_NLL) {
            sc->loss -= zl;
        } else {
            for (int64_t c = 0; c < C; c++)
                sum += exp(lt_tensor_get_f64(o, base + c * inner) - mx);
            sc->loss += log(sum) + mx - zl;
        }
        sc->correct += best == lab[r];
        sc->count++;
    }
    return LT_OK;
}

lt_status lt_afeed_evaluate(const lt_afeed *f, lt_session *s, lt_model *m, int64_t limit, lt_eval_result *r,
                            lt_err *err)
{
    int64_t n = f->data->samples;
    return lt_afeed_evaluate_sel(f, s, m, NULL, limit > 0 && limit < n ? limit : n, r, err);
}

lt_status lt_afeed_evaluate_sel(const lt_afeed *f, lt_session *s, lt_model *m, const int64_t *sel, int64_t n,
                                lt_eval_result *r, lt_err *err)
{
    int64_t run = lt_afeed_run_size(f, f->fixed_batch ? f->fixed_batch : LT_AFEED_EVAL_BATCH);
    if (f->fixed_batch)
        n -= n % run;
    if (n <= 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: no samples to evaluate", f->path);
    int nout = lt_model_num_outputs(m);
    lt_value **out = calloc((size_t)nout, sizeof *out);
    int64_t *idx = malloc(sizeof *idx * (size_t)run);
    const char *names[LT_AFEED_MAX + 1];
    lt_value *in[LT_AFEED_MAX + 1];
    int nin = f->target >= 0 ? f->nslot - 1 : f->nslot;
    score sc = {0, 0, 0};
    lt_status st = out && idx ? LT_OK : lt_errf(err, LT_ERR_NOMEM, "out of memory");
    for (int64_t at = 0; at < n && st == LT_OK; at += run) {
        int64_t k = n - at < run ? n - at : run;
        for (int64_t i = 0; i < k; i++)
            idx[i] = sel ? sel[at + i] : at + i;
        st = lt_afeed_make(f, idx, k, names, in, err);
        if (st != LT_OK)
            break;
        st = lt_session_run(s, nin, names, in, out, err);
        if (st == LT_OK)
            st = score_run(f, lt_value_tensor(out[f->out_index]), f->target >= 0 ? &in[f->target]->t : NULL, k, &sc,
                           err);
        lt_afeed_free_values(f, in);
        for (int i = 0; i < nout; i++) {
            lt_value_free(out[i]);
            out[i] = NULL;
        }
    }
    if (st == LT_OK) {
        r->loss = sc.count ? sc.loss / (double)sc.count : NAN;
        r->has_accuracy = f->loss == LT_LOSS_SOFTMAX_CROSS_ENTROPY || f->loss == LT_LOSS_NLL;
        r->accuracy = r->has_accuracy && sc.count ? (double)sc.correct / (double)sc.count : NAN;
        r->count = n;
    }
    free(out);
    free(idx);
    return st;
}

lt_status lt_afeed_for_eval(const lt_model *m, const lt_eval_opts *o, lt_loss_kind loss, lt_arrays **a, lt_afeed *f,
                            lt_err *err)
{
    *a = NULL;
    if (!lt_arrays_spec_has_split(o->data, 1))
        return LT_OK;
    lt_arrays *arr = NULL;
    lt_status st = lt_arrays_open_spec(o->data, 1, &arr, err);
    if (st != LT_OK || !arr)
        return st;
    lt_train_opts to;
    lt_train_defaults(&to);
    to.loss = loss;
    to.output = o->output;
    to.set_ignore_index = o->set_ignore_index;
    to.ignore_index = o->ignore_index;
    to.class_axis = o->class_axis;
    if (!lt_afeed_wanted(m, arr, &to)) {
        lt_arrays_free(arr);
        return LT_OK;
    }
    *a = arr;
    return lt_afeed_plan(m, arr, &to, f, err);
}

/* ---- which feed ---- */

int lt_afeed_wanted(const lt_model *m, const lt_arrays *a, const lt_train_opts *o)
{
    if (o->labels || o->nbatch_axes > 0)
        return 1;
    for (int i = 0; i < a->n; i++)
        if (a->a[i].splits)
            return 1;
    const lt_ds_array *x = lt_arrays_find(a, "x"), *y = lt_arrays_find(a, "y");
    if (!x || !y || x->shared || y->shared)
        return 1;
    if (x->t.dtype != LT_U8 && !lt_dtype_is_float(x->t.dtype))
        return 1;
    if (lt_dtype_is_int(y->t.dtype) ? y->t.rank != 1 : !lt_dtype_is_float(y->t.dtype))
        return 1;
    const lt_block *b = m->main;
    int nfree = 0;
    const lt_ival *xin = NULL;
    for (int i = 0; i < b->nparams; i++) {
        if (m->input_default && m->input_default[i] >= 0)
            continue;
        const lt_ival *v = b->params[i];
        nfree++;
        if (strcmp(v->name, "x") && strcmp(v->name, "y") && lt_arrays_find(a, v->name))
            return 1; /* an array named for this input */
        if (!xin && strcmp(v->name, "labels") && strcmp(v->name, "label") && strcmp(v->name, "y") &&
            strcmp(v->name, "target") && strcmp(v->name, "targets"))
            xin = v;
    }
    if (nfree != (o->loss == LT_LOSS_MODEL ? 2 : 1) || !xin)
        return 1;
    if (xin->type.kind == LT_KIND_TENSOR && xin->type.dtype != LT_F32 && xin->type.dtype != LT_UNDEFINED)
        return 1;
    int out_index = 0;
    for (int r = 0; o->output && r < b->nresults; r++)
        if (!strcmp(b->results[r]->name, o->output))
            out_index = r;
    const lt_type *ot = b->nresults > out_index ? &b->results[out_index]->type : NULL;
    if ((o->loss == LT_LOSS_SOFTMAX_CROSS_ENTROPY || o->loss == LT_LOSS_NLL) && ot && ot->rank >= 0 && ot->rank != 2)
        return 1;
    /* samples fed in their own shape whose batch axis is not the first */
    int64_t sd[LT_MAX_RANK];
    int sr = sample_dims(x, sd);
    if (xin->type.rank == sr + 1 && find_batch_axis(m, &xin->type, ot, sr, sd) > 0)
        return 1;
    return 0;
}
