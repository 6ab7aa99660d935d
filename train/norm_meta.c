/* The normalisation of a training run as model metadata: --mean / --std
 * stored in metadata_props "lantern.mean" / "lantern.std" of the exported
 * model, read back by lantern eval, predict and train. */
#include "norm_meta.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "0.5,0.25": up to 16 finite numbers into v, *n of them. */
static lt_status parse_list(const lt_model *m, const char *key, const char *s, int *n, double *v, lt_err *err)
{
    char shown[128];
    *n = 0;
    const char *p = s;
    while (1) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || errno || !isfinite(x) || (*end && *end != ',') || *n == 16)
            return lt_errf(err, LT_ERR_INVALID, "%s: metadata %s is '%s'; lantern wants 1 to 16 comma-separated numbers",
                           m->path, key, lt_str_printable(s, shown, sizeof shown));
        v[(*n)++] = x;
        if (!*end)
            return LT_OK;
        p = end + 1;
    }
}

lt_status lt_model_norm(const lt_model *m, lt_dataset_opts *out, lt_err *err)
{
    memset(out, 0, sizeof *out);
    const char *mean = lt_model_metadata(m, LT_META_MEAN), *std = lt_model_metadata(m, LT_META_STD);
    lt_status st = mean ? parse_list(m, LT_META_MEAN, mean, &out->nmean, out->mean, err) : LT_OK;
    if (st == LT_OK && std)
        st = parse_list(m, LT_META_STD, std, &out->nstd, out->std, err);
    for (int i = 0; st == LT_OK && i < out->nstd; i++)
        if (out->std[i] == 0)
            st = lt_errf(err, LT_ERR_INVALID, "%s: metadata %s holds a zero", m->path, LT_META_STD);
    return st;
}

static lt_status set_list(lt_model *m, const char *key, int n, const double *v, lt_err *err)
{
    char buf[16 * 26 + 1];
    size_t at = 0;
    for (int i = 0; i < n && i < 16; i++) {
        /* the shortest text that reads back as the same double */
        char one[32];
        for (int digits = 15; digits <= 17; digits++) {
            snprintf(one, sizeof one, "%.*g", digits, v[i]);
            if (strtod(one, NULL) == v[i])
                break;
        }
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%s", i ? "," : "", one);
    }
    return lt_model_set_metadata(m, key, buf, err);
}

lt_status lt_model_set_norm(lt_model *m, const lt_dataset_opts *n, lt_err *err)
{
    lt_status st = n->nmean ? set_list(m, LT_META_MEAN, n->nmean, n->mean, err) : LT_OK;
    if (st == LT_OK && n->nstd)
        st = set_list(m, LT_META_STD, n->nstd, n->std, err);
    return st;
}

lt_status lt_norm_fill_from_model(const lt_model *m, lt_dataset_opts *norm, lt_err *err)
{
    lt_dataset_opts stored;
    lt_status st = lt_model_norm(m, &stored, err);
    if (st != LT_OK)
        return st;
    if (!norm->nmean && stored.nmean) {
        norm->nmean = stored.nmean;
        memcpy(norm->mean, stored.mean, sizeof norm->mean);
    }
    if (!norm->nstd && stored.nstd) {
        norm->nstd = stored.nstd;
        memcpy(norm->std, stored.std, sizeof norm->std);
    }
    return LT_OK;
}
