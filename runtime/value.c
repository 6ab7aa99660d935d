/* Runtime values: tensors, sequences of tensors, empty optionals; sharing,
 * printing and comparison with tolerances. */
#include "runtime.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Value records are kept for reuse (each still its own allocation, so a
 * record given to free() directly stays valid): a step makes and drops
 * thousands, and taking them from the system each time grows and shrinks
 * the heap. */
#define LT_VALUE_KEEP 8192
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static lt_value *kept[LT_VALUE_KEEP];
static int nkept;

static lt_value *value_record(void)
{
    lt_value *v = NULL;
    pthread_mutex_lock(&kept_mu);
    if (nkept > 0)
        v = kept[--nkept];
    pthread_mutex_unlock(&kept_mu);
    if (!v)
        return calloc(1, sizeof *v);
    memset(v, 0, sizeof *v);
    return v;
}

lt_value *lt_value_new_tensor(void)
{
    lt_value *v = value_record();
    if (v)
        v->kind = LT_VAL_TENSOR;
    return v;
}

lt_value *lt_value_new_seq(lt_dtype dtype)
{
    lt_value *v = value_record();
    if (v) {
        v->kind = LT_VAL_SEQUENCE;
        v->seq_dtype = dtype;
    }
    return v;
}

lt_value *lt_value_new_none(void)
{
    lt_value *v = value_record();
    if (v)
        v->kind = LT_VAL_NONE;
    return v;
}

void lt_value_free(lt_value *v)
{
    if (!v)
        return;
    lt_tensor_release(&v->t);
    for (int i = 0; i < v->nseq; i++)
        lt_tensor_release(&v->seq[i]);
    free(v->seq);
    pthread_mutex_lock(&kept_mu);
    if (nkept < LT_VALUE_KEEP) {
        kept[nkept++] = v;
        v = NULL;
    }
    pthread_mutex_unlock(&kept_mu);
    free(v);
}

lt_status lt_seq_append(lt_value *seq, const lt_tensor *t, lt_err *err)
{
    if (seq->nseq == seq->capseq) {
        int nc = seq->capseq ? seq->capseq * 2 : 8;
        lt_tensor *n = realloc(seq->seq, sizeof *n * nc);
        if (!n)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory growing a sequence");
        seq->seq = n;
        seq->capseq = nc;
    }
    lt_tensor_view(&seq->seq[seq->nseq++], t, t->rank, t->dims);
    if (seq->seq_dtype == LT_UNDEFINED)
        seq->seq_dtype = t->dtype;
    return LT_OK;
}

lt_value *lt_value_ref(const lt_value *src)
{
    lt_value *v = value_record();
    if (!v)
        return NULL;
    v->kind = src->kind;
    v->seq_dtype = src->seq_dtype;
    v->digest_set = src->digest_set;
    v->digest = src->digest;
    if (src->kind == LT_VAL_TENSOR) {
        lt_tensor_view(&v->t, &src->t, src->t.rank, src->t.dims);
    } else if (src->kind == LT_VAL_SEQUENCE) {
        for (int i = 0; i < src->nseq; i++)
            if (lt_seq_append(v, &src->seq[i], NULL) != LT_OK) {
                lt_value_free(v);
                return NULL;
            }
    }
    return v;
}

const lt_tensor *lt_value_tensor(const lt_value *v)
{
    return v && v->kind == LT_VAL_TENSOR ? &v->t : NULL;
}

/* dims as "2,3" into buf */
static void dims_str(int rank, const int64_t *dims, char *buf, size_t len)
{
    size_t a = 0;
    buf[0] = 0;
    for (int d = 0; d < rank && d < LT_MAX_RANK && a + 24 < len; d++)
        a += (size_t)snprintf(buf + a, len - a, "%s%lld", d ? "," : "", (long long)dims[d]);
}

lt_status lt_value_from_tensor(const lt_tensor *t, lt_value **out, lt_err *err)
{
    if (!t || !out)
        return lt_errf(err, LT_ERR_INVALID, "lt_value_from_tensor: %s is NULL", !t ? "t" : "out");
    *out = NULL;
    /* the copy is sized by dims and filled from numel elements: they must agree */
    int64_t n = t->rank >= 0 && t->rank <= LT_MAX_RANK ? lt_shape_numel(t->rank, t->dims) : -1;
    if (n >= 0 && n != t->numel) {
        char shape[200];
        dims_str(t->rank, t->dims, shape, sizeof shape);
        return lt_errf(err, LT_ERR_INVALID, "lt_value_from_tensor: the tensor's numel is %lld but its dims [%s] hold "
                       "%lld elements", (long long)t->numel, shape, (long long)n);
    }
    if (!t->data && n > 0)
        return lt_errf(err, LT_ERR_INVALID, "lt_value_from_tensor: the tensor's data is NULL (%lld elements)",
                       (long long)n);
    lt_value *v = lt_value_new_tensor();
    if (!v)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status s = lt_tensor_clone(&v->t, t, err);
    if (s != LT_OK) {
        free(v);
        return s;
    }
    *out = v;
    return LT_OK;
}

static void describe_tensor(const lt_tensor *t, int max_elems, FILE *f)
{
    fprintf(f, "%s[", lt_dtype_name(t->dtype));
    for (int i = 0; i < t->rank; i++)
        fprintf(f, i ? ",%lld" : "%lld", (long long)t->dims[i]);
    fputc(']', f);
    int64_t n = t->numel < max_elems ? t->numel : max_elems;
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == LT_STRING) {
            fprintf(f, " \"");
            lt_fputs_printable(((char **)t->data)[i], f);
            fputc('"', f);
        } else if (lt_dtype_is_float(t->dtype)) {
            fprintf(f, " %.6g", lt_tensor_get_f64(t, i));
        } else {
            fprintf(f, " %lld", (long long)lt_tensor_get_i64(t, i));
        }
    }
    if (t->numel > n)
        fprintf(f, " ...");
}

void lt_value_describe(const lt_value *v, int max_elems, FILE *f)
{
    if (!f)
        return;
    if (!v) {
        fprintf(f, "null");
    } else if (v->kind == LT_VAL_NONE) {
        fprintf(f, "none");
    } else if (v->kind == LT_VAL_SEQUENCE) {
        fprintf(f, "seq(%d)", v->nseq);
        for (int i = 0; i < v->nseq && i < 3; i++) {
            fprintf(f, " [");
            describe_tensor(&v->seq[i], max_elems, f);
            fprintf(f, "]");
        }
    } else {
        describe_tensor(&v->t, max_elems, f);
    }
}

static int tensor_close(const lt_tensor *a, const lt_tensor *b, double rtol, double atol, char *why,
                        size_t len)
{
    /* ONNX test data stores bfloat16 tensors as uint16 bit patterns */
    lt_tensor bb;
    if (a->dtype == LT_BF16 && b->dtype == LT_U16) {
        bb = *b;
        bb.dtype = LT_BF16;
        b = &bb;
    }
    bool same_kind = a->dtype == b->dtype;
    if (!same_kind) {
        snprintf(why, len, "element type %s, expected %s", lt_dtype_name(a->dtype), lt_dtype_name(b->dtype));
        return 0;
    }
    bool shape_ok = a->rank == b->rank;
    for (int i = 0; shape_ok && i < a->rank; i++)
        shape_ok = a->dims[i] == b->dims[i];
    if (!shape_ok) {
        char sa[128] = "", sb[128] = "";
        for (int i = 0; i < a->rank; i++)
            snprintf(sa + strlen(sa), sizeof sa - strlen(sa), i ? ",%lld" : "%lld", (long long)a->dims[i]);
        for (int i = 0; i < b->rank; i++)
            snprintf(sb + strlen(sb), sizeof sb - strlen(sb), i ? ",%lld" : "%lld", (long long)b->dims[i]);
        snprintf(why, len, "shape [%s], expected [%s]", sa, sb);
        return 0;
    }
    if (a->dtype == LT_STRING) {
        for (int64_t i = 0; i < a->numel; i++) {
            const char *x = ((char **)a->data)[i], *y = ((char **)b->data)[i];
            if (strcmp(x ? x : "", y ? y : "") != 0) {
                snprintf(why, len, "element %lld is \"%s\", expected \"%s\"", (long long)i, x ? x : "",
                         y ? y : "");
                return 0;
            }
        }
        return 1;
    }
    /* the narrow floats (float8, float4) by their values: the default rtol
     * is far below their spacing, so they compare exactly unless a case's
     * tolerance says otherwise; +0 and -0 are equal, NaN matches NaN */
    bool as_float = lt_dtype_is_float(a->dtype) || lt_dtype_is_narrow_float(a->dtype);
    for (int64_t i = 0; i < a->numel; i++) {
        if (as_float) {
            double x = lt_tensor_get_f64(a, i), y = lt_tensor_get_f64(b, i);
            if (isnan(y) ? isnan(x) : (isinf(y) ? x == y : fabs(x - y) <= atol + rtol * fabs(y)))
                continue;
            snprintf(why, len, "element %lld is %.9g, expected %.9g", (long long)i, x, y);
            return 0;
        }
        int64_t x = lt_tensor_get_i64(a, i), y = lt_tensor_get_i64(b, i);
        if (x != y) {
            snprintf(why, len, "element %lld is %lld, expected %lld", (long long)i, (long long)x, (long long)y);
            return 0;
        }
    }
    return 1;
}

int lt_value_close(const lt_value *got, const lt_value *want, double rtol, double atol, char *why, size_t len)
{
    char spare[8];
    if (!why || !len) { /* the caller wants no reason */
        why = spare;
        len = sizeof spare;
    }
    if (!got || !want) {
        snprintf(why, len, "lt_value_close: %s is NULL", !got ? "got" : "want");
        return 0;
    }
    if (got->kind != want->kind) {
        static const char *k[] = {"tensor", "sequence", "none"};
        snprintf(why, len, "got a %s, expected a %s", k[got->kind], k[want->kind]);
        return 0;
    }
    if (got->kind == LT_VAL_NONE)
        return 1;
    if (got->kind == LT_VAL_TENSOR)
        return tensor_close(&got->t, &want->t, rtol, atol, why, len);
    if (got->nseq != want->nseq) {
        snprintf(why, len, "sequence of %d, expected %d", got->nseq, want->nseq);
        return 0;
    }
    for (int i = 0; i < got->nseq; i++) {
        char inner[256];
        if (!tensor_close(&got->seq[i], &want->seq[i], rtol, atol, inner, sizeof inner)) {
            snprintf(why, len, "sequence item %d: %s", i, inner);
            return 0;
        }
    }
    return 1;
}
