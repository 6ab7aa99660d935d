/* .npy pairs: npy=X.npy,Y.npy[,X_TEST.npy,Y_TEST.npy], the samples and their
 * labels or targets as two NumPy files (and the test split's two). Read whole,
 * header parsed by lt_npy_header, data moved to the block's front so it is
 * aligned and adoptable. The x / y feed takes them as an npz's x and y; the
 * named-input feed (dataset_arrays.c) as arrays x and y. */
#include "dataset_arrays.h"
#include "dataset_impl.h"
#include <stdlib.h>
#include <string.h>

lt_status lt_npy_pair_paths(const char *arg, char paths[4][4096], int *n, lt_err *err)
{
    *n = 0;
    const char *p = arg;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (*n == 4 || len == 0 || len >= 4096)
            break;
        memcpy(paths[*n], p, len);
        paths[(*n)++][len] = 0;
        if (!comma)
            break;
        p = comma + 1;
    }
    const char *comma = strchr(arg, ',');
    int commas = 0;
    for (const char *q = arg; *q; q++)
        commas += *q == ',';
    if ((*n != 2 && *n != 4) || commas + 1 != *n || !comma)
        return lt_errf(err, LT_ERR_INVALID, "npy=%s: give npy=X.npy,Y.npy (samples, then labels or targets), "
                       "optionally followed by ,X_TEST.npy,Y_TEST.npy", arg);
    return LT_OK;
}

lt_status lt_npy_load(const char *path, lt_tensor *t, void **block, lt_err *err)
{
    uint8_t *buf = NULL;
    size_t len = 0, off = 0;
    *block = NULL;
    lt_status s = lt_read_file(path, LT_MAX_TENSOR_BYTES, &buf, &len, err);
    if (s == LT_OK)
        s = lt_npy_header(path, buf, len, t, &off, err);
    if (s != LT_OK) {
        free(buf);
        return s;
    }
    memmove(buf, buf + off, len - off);
    t->data = buf;
    *block = buf;
    return LT_OK;
}

int lt_ds_has_npy(const char *arg, int split)
{
    char paths[4][4096];
    int n;
    lt_err err;
    if (lt_npy_pair_paths(arg, paths, &n, &err) != LT_OK || (split && n < 4))
        return 0;
    /* test files the spec names count even when missing: opening them says why */
    return split || (lt_ds_file_exists(paths[0]) && lt_ds_file_exists(paths[1]));
}

lt_status lt_ds_open_npy(lt_dataset *d, const char *arg, int split, lt_err *err)
{
    char paths[4][4096];
    int n;
    lt_status s = lt_npy_pair_paths(arg, paths, &n, err);
    if (s != LT_OK)
        return s;
    if (split && n < 4)
        return lt_errf(err, LT_ERR_INVALID, "npy=%s: no test split (give npy=X.npy,Y.npy,X_TEST.npy,Y_TEST.npy)", arg);
    lt_tensor t[2];
    void *block[2] = {NULL, NULL};
    for (int i = 0; i < 2 && s == LT_OK; i++)
        s = lt_npy_load(paths[2 * split + i], &t[i], &block[i], err);
    if (s == LT_OK)
        s = lt_ds_from_arrays(d, &t[0], &t[1], &block[0], paths[2 * split], paths[2 * split + 1], err);
    free(block[0]);
    free(block[1]);
    return s;
}

lt_status lt_arrays_open_npy(const char *arg, int split, lt_arrays **out, lt_err *err)
{
    *out = NULL;
    char paths[4][4096];
    int n;
    lt_status s = lt_npy_pair_paths(arg, paths, &n, err);
    if (s != LT_OK)
        return s;
    if (split && n < 4)
        return lt_errf(err, LT_ERR_INVALID, "npy=%s: no test split (give npy=X.npy,Y.npy,X_TEST.npy,Y_TEST.npy)", arg);
    lt_arrays *set = calloc(1, sizeof *set);
    if (!set || !(set->a = calloc(2, sizeof *set->a)) || !(set->path = strdup(paths[2 * split]))) {
        lt_arrays_free(set);
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    set->split = split;
    static const char *const names[2] = {"x", "y"};
    for (int i = 0; i < 2 && s == LT_OK; i++) {
        lt_ds_array *a = &set->a[set->n++];
        void *block;
        const char *file = paths[2 * split + i];
        s = lt_npy_load(file, &a->t, &block, err);
        if (s == LT_OK && (!(a->name = strdup(names[i])) || !(a->member = strdup(file))))
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        if (s == LT_OK && a->t.rank < 1)
            s = lt_errf(err, LT_ERR_INVALID, "%s is a scalar; arrays hold one sample per row along axis 0", file);
        if (s == LT_OK)
            a->n = a->t.dims[0];
    }
    if (s == LT_OK) {
        snprintf(set->listing, sizeof set->listing, "x (%s), y (%s)", paths[2 * split], paths[2 * split + 1]);
        set->samples = set->a[0].n;
        if (set->a[1].n != set->a[0].n)
            s = lt_errf(err, LT_ERR_INVALID, "%s holds %lld samples but %s holds %lld", paths[2 * split],
                        (long long)set->a[0].n, paths[2 * split + 1], (long long)set->a[1].n);
    }
    if (s != LT_OK) {
        lt_arrays_free(set);
        return s;
    }
    *out = set;
    return LT_OK;
}
