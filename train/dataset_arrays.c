/* Named arrays of one split of an .npz: NAME.npy members form the training
 * split, NAME_test.npy the test split; an int64 NAME_splits (row splits:
 * samples + 1 offsets, 0 first, non-decreasing, the last the length of
 * NAME) makes sample i of NAME the rows NAME[splits[i]:splits[i+1]], so
 * trees and sequences of any size are samples. NAME_test_splits and
 * NAME_splits_test both name the test split's. Every rule is checked at
 * open, each failure one message naming the array. */
#include "dataset_arrays.h"
#include "dataset_impl.h"
#include <stdlib.h>
#include <string.h>

static bool ends_with(const char *s, size_t n, const char *suffix, size_t *stem)
{
    size_t k = strlen(suffix);
    if (n <= k || memcmp(s + n - k, suffix, k) != 0)
        return false;
    *stem = n - k;
    return true;
}

/* What member name says: its split, whether it holds row splits, and the
 * array's name (its first *len bytes). 0 for members that are no .npy. */
static int classify(const char *member, int *split, bool *is_splits, size_t *len)
{
    size_t n = strlen(member), k;
    if (!ends_with(member, n, ".npy", &n))
        return 0;
    *split = 0;
    *is_splits = false;
    if (ends_with(member, n, "_test", &k)) {
        *split = 1;
        n = k;
    }
    if (ends_with(member, n, "_splits", &k)) {
        *is_splits = true;
        n = k;
        if (!*split && ends_with(member, n, "_test", &k)) {
            *split = 1;
            n = k;
        }
    }
    *len = n;
    return 1;
}

void lt_arrays_free(lt_arrays *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->n; i++) {
        free(s->a[i].name);
        free(s->a[i].member);
        free(s->a[i].t.data);
        free(s->a[i].splits);
    }
    free(s->a);
    free(s->path);
    free(s);
}

int lt_arrays_has_split(const char *path, int split)
{
    lt_npz *z;
    lt_err err;
    if (lt_npz_open(path, &z, &err) != LT_OK)
        return 0;
    int has = 0;
    for (int i = 0; i < lt_npz_count(z) && !has; i++) {
        int sp;
        bool is_splits;
        size_t len;
        has = classify(lt_npz_name(z, i), &sp, &is_splits, &len) && sp == split && !is_splits;
    }
    lt_npz_close(z);
    return has;
}

const lt_ds_array *lt_arrays_find(const lt_arrays *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (!strcmp(s->a[i].name, name))
            return &s->a[i];
    return NULL;
}

int lt_ds_array_sample_rank(const lt_ds_array *a) { return a->splits ? a->t.rank : a->t.rank - 1; }

const void *lt_ds_array_sample(const lt_ds_array *a, int64_t i, int64_t *dims)
{
    size_t es = lt_dtype_size(a->t.dtype);
    int64_t row = a->t.dims[0] ? a->t.numel / a->t.dims[0] : 0;
    if (a->splits) {
        dims[0] = a->splits[i + 1] - a->splits[i];
        memcpy(dims + 1, a->t.dims + 1, sizeof *dims * (size_t)(a->t.rank - 1));
        return (const char *)a->t.data + (size_t)(a->splits[i] * row) * es;
    }
    memcpy(dims, a->t.dims + 1, sizeof *dims * (size_t)(a->t.rank - 1));
    return (const char *)a->t.data + (size_t)(i * row) * es;
}

/* Row splits st (member sname) for array a: integers, samples + 1 of them,
 * 0 first, non-decreasing, the last a's length. */
static lt_status take_splits(const char *path, lt_ds_array *a, const lt_tensor *st, const char *sname, lt_err *err)
{
    if (!lt_dtype_is_int(st->dtype))
        return lt_errf(err, LT_ERR_INVALID, "%s: %s is %s; row splits are int64", path, sname,
                       lt_dtype_name(st->dtype));
    if (st->rank != 1 || st->dims[0] < 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: %s must be one row of samples + 1 offsets (rank 1, at least one), "
                       "it has rank %d and %lld values", path, sname, st->rank, (long long)st->numel);
    if (a->t.rank < 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: %s splits %s, a scalar; a ragged array needs a first axis", path,
                       sname, a->member);
    int64_t n = st->dims[0];
    if (!(a->splits = malloc(sizeof *a->splits * (size_t)n)))
        return lt_errf(err, LT_ERR_NOMEM, "%s: %s: out of memory", path, sname);
    for (int64_t i = 0; i < n; i++) {
        int64_t v = lt_tensor_get_i64(st, i);
        /* an unsigned offset past INT64_MAX reads as negative */
        if (v < 0)
            return lt_errf(err, LT_ERR_INVALID, "%s: %s[%lld] is %lld; row splits cannot be negative", path, sname,
                           (long long)i, (long long)v);
        if (i == 0 && v != 0)
            return lt_errf(err, LT_ERR_INVALID, "%s: %s starts at %lld; row splits start at 0", path, sname,
                           (long long)v);
        if (i > 0 && v < a->splits[i - 1])
            return lt_errf(err, LT_ERR_INVALID, "%s: %s decreases at %lld (%lld after %lld); row splits never decrease",
                           path, sname, (long long)i, (long long)v, (long long)a->splits[i - 1]);
        a->splits[i] = v;
    }
    a->n = n - 1;
    if (a->splits[n - 1] != a->t.dims[0])
        return lt_errf(err, LT_ERR_INVALID, "%s: %s ends at %lld, but %s has %lld rows; the last split is its length",
                       path, sname, (long long)a->splits[n - 1], a->member, (long long)a->t.dims[0]);
    return LT_OK;
}

lt_status lt_arrays_open(const char *path, int split, lt_arrays **out, lt_err *err)
{
    *out = NULL;
    lt_npz *z = NULL;
    lt_status s = lt_npz_open(path, &z, err);
    if (s != LT_OK)
        return s;
    lt_arrays *set = calloc(1, sizeof *set);
    int nm = lt_npz_count(z);
    /* the split's row splits wait here until every array is read */
    lt_tensor *st = calloc((size_t)nm + 1, sizeof *st);
    int *st_member = calloc((size_t)nm + 1, sizeof *st_member);
    int nst = 0;
    if (!set || !st || !st_member || !(set->path = strdup(path)) ||
        !(set->a = calloc((size_t)nm + 1, sizeof *set->a))) {
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    set->split = split;
    for (int i = 0; i < nm && s == LT_OK; i++) {
        const char *mn = lt_npz_name(z, i);
        int sp;
        bool is_splits;
        size_t len;
        if (!classify(mn, &sp, &is_splits, &len) || sp != split)
            continue;
        void *block;
        lt_tensor t;
        s = lt_npz_read(z, i, &t, &block, err);
        if (s != LT_OK)
            break;
        if (is_splits) {
            st[nst] = t;
            st_member[nst++] = i;
            continue;
        }
        lt_ds_array *a = &set->a[set->n++];
        a->t = t;
        a->name = strndup(mn, len);
        a->member = strndup(mn, strlen(mn) - 4);
        if (!a->name || !a->member)
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        size_t ll = strlen(set->listing);
        if (s == LT_OK && ll + strlen(a->member) + 8 < sizeof set->listing)
            snprintf(set->listing + ll, sizeof set->listing - ll, "%s%s", ll ? ", " : "", a->member);
    }
    for (int k = 0; k < nst && s == LT_OK; k++) {
        const char *mn = lt_npz_name(z, st_member[k]);
        int sp;
        bool is_splits;
        size_t len;
        classify(mn, &sp, &is_splits, &len);
        char sname[300];
        snprintf(sname, sizeof sname, "%.*s", (int)(strlen(mn) - 4), mn);
        lt_ds_array *a = NULL;
        for (int i = 0; i < set->n && !a; i++)
            if (strlen(set->a[i].name) == len && !memcmp(set->a[i].name, mn, len))
                a = &set->a[i];
        if (!a)
            s = lt_errf(err, LT_ERR_INVALID, "%s: %s holds row splits, but there is no array '%.*s%s' for them", path,
                        sname, (int)len, mn, split ? "_test" : "");
        else
            s = take_splits(path, a, &st[k], sname, err);
    }
    if (s == LT_OK && set->n == 0)
        s = lt_errf(err, LT_ERR_INVALID, "%s: no %s arrays (the archive holds %s)", path,
                    split ? "test (NAME_test)" : "training", lt_npz_listing(z));
    /* one sample count for all */
    const lt_ds_array *first = NULL;
    for (int i = 0; i < set->n && s == LT_OK; i++) {
        lt_ds_array *a = &set->a[i];
        if (!a->splits && a->t.rank < 1) {
            a->shared = true; /* one value for every sample (train_arrays.c says what it may feed) */
            continue;
        }
        int64_t n = a->splits ? a->n : a->t.dims[0];
        a->n = n;
        if (!first) {
            first = a;
            set->samples = n;
        } else if (n != set->samples) {
            s = lt_errf(err, LT_ERR_INVALID, "%s: %s holds %lld samples but %s holds %lld", path, first->member,
                        (long long)set->samples, a->member, (long long)n);
        }
    }
    if (s == LT_OK && !first)
        s = lt_errf(err, LT_ERR_INVALID, "%s: every %s array is a single value (0-d); arrays hold one sample per row "
                    "along axis 0", path, split ? "test (NAME_test)" : "training");
done:
    for (int k = 0; k < nst; k++)
        free(st[k].data);
    free(st);
    free(st_member);
    lt_npz_close(z);
    if (s != LT_OK) {
        lt_arrays_free(set);
        return s;
    }
    *out = set;
    return LT_OK;
}

lt_status lt_arrays_open_spec(const char *spec, int split, lt_arrays **out, lt_err *err)
{
    *out = NULL;
    if (!spec) /* no spec names no arrays; opening the dataset says why */
        return LT_OK;
    if (!strncmp(spec, "npz=", 4) && spec[4])
        return lt_arrays_open(spec + 4, split, out, err);
    if (!strncmp(spec, "npy=", 4) && spec[4])
        return lt_arrays_open_npy(spec + 4, split, out, err);
    return LT_OK;
}

int lt_arrays_spec_has_split(const char *spec, int split)
{
    if (!spec)
        return 0;
    if (!strncmp(spec, "npz=", 4) && spec[4])
        return lt_arrays_has_split(spec + 4, split);
    if (!strncmp(spec, "npy=", 4) && spec[4])
        return lt_ds_has_npy(spec + 4, split);
    return 0;
}
