/* StringNormalizer (opset 10): drops stop words from a [C] or [1, C]
 * string tensor, then lower- or upper-cases what is left. Case mapping is
 * the C locale's (ASCII letters only; other UTF-8 bytes pass through), for
 * the stop-word comparison as well as for the output. */
#include "misc_kernels.h"
#include <stdlib.h>
#include <string.h>

enum { CASE_NONE, CASE_LOWER, CASE_UPPER };

static int cmp_sensitive(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* ASCII only, whatever locale the process runs in */
static int lower(int c) { return c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c; }
static int upper(int c) { return c >= 'a' && c <= 'z' ? c - ('a' - 'A') : c; }

static int cmp_insensitive(const void *a, const void *b)
{
    const unsigned char *x = *(const unsigned char *const *)a, *y = *(const unsigned char *const *)b;
    while (*x && lower(*x) == lower(*y)) {
        x++;
        y++;
    }
    return lower(*x) - lower(*y);
}

/* Interned copy of s with its ASCII letters case-mapped; tmp holds len+1
 * bytes. */
static const char *map_case(const char *s, int action, char *tmp)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        tmp[i] = (char)(action == CASE_LOWER ? lower(c) : upper(c));
    }
    return lt_str_intern(tmp, n);
}

lt_status lt_misc_string_normalizer(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 is missing");
    if (x->dtype != LT_STRING)
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must be a string tensor, got %s", lt_dtype_name(x->dtype));
    if (!(x->rank == 1 || (x->rank == 2 && x->dims[0] == 1)))
        return lt_k_fail(k, LT_ERR_RUNTIME, "input must have shape [C] or [1, C]");

    const char *act = lt_attr_str(k->node, "case_change_action", "NONE");
    int action;
    if (strcmp(act, "NONE") == 0)
        action = CASE_NONE;
    else if (strcmp(act, "LOWER") == 0)
        action = CASE_LOWER;
    else if (strcmp(act, "UPPER") == 0)
        action = CASE_UPPER;
    else
        return lt_k_fail(k, LT_ERR_INVALID, "case_change_action must be LOWER, UPPER or NONE, got \"%s\"", act);
    bool sensitive = lt_attr_int(k->node, "is_case_sensitive", 0) != 0;
    int (*cmp)(const void *, const void *) = sensitive ? cmp_sensitive : cmp_insensitive;

    /* stop words sorted once so each lookup is a binary search */
    const lt_attr *sw = lt_attr_find(k->node, "stopwords");
    int nstop = sw && sw->kind == LT_ATTR_STRINGS ? sw->n : 0;
    const char **stop = lt_k_scratch(k, sizeof(char *) * (size_t)(nstop ? nstop : 1));
    const char **kept = lt_k_scratch(k, sizeof(char *) * (size_t)(x->numel ? x->numel : 1));
    if (!stop || !kept)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nstop; i++)
        stop[i] = sw->strings[i] ? sw->strings[i] : "";
    qsort(stop, (size_t)nstop, sizeof *stop, cmp);

    const char *const *src = x->data;
    int64_t n = 0;
    size_t longest = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        const char *s = src[i] ? src[i] : "";
        if (nstop && bsearch(&s, stop, (size_t)nstop, sizeof *stop, cmp))
            continue;
        kept[n++] = s;
        size_t l = strlen(s);
        longest = l > longest ? l : longest;
    }

    /* nothing left: the spec's single empty string */
    int64_t dims[2] = {1, n ? n : 1};
    lt_tensor *y;
    lt_status st = x->rank == 1 ? lt_k_out(k, 0, LT_STRING, 1, dims + 1, &y) : lt_k_out(k, 0, LT_STRING, 2, dims, &y);
    if (st != LT_OK)
        return st;
    const char **dst = y->data; /* elements start as "" */
    if (action == CASE_NONE) {
        for (int64_t i = 0; i < n; i++)
            dst[i] = kept[i];
        return LT_OK;
    }
    char *tmp = lt_k_scratch(k, longest + 1);
    if (!tmp)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++) {
        dst[i] = map_case(kept[i], action, tmp);
        if (!dst[i])
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory interning a string");
    }
    return LT_OK;
}
