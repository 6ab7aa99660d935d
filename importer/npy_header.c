/* The .npy header (of an npz member, or a .npy file lantern reads): magic,
 * version, and the Python dict literal
 * {'descr': '<f4', 'fortran_order': False, 'shape': (N, 28, 28), }
 * parsed strictly (the three known keys once each, in any order, with any
 * whitespace; nothing else, nothing after the '}'), with the data size
 * checked against the shape. */
#include "importer.h"
#include <string.h>

typedef struct cursor {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        c->p++;
}

static bool eat(cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted string ('...' or "...", no escapes) into out. */
static bool quoted(cursor *c, char *out, size_t cap)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return false;
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (n + 1 >= cap)
            return false;
        out[n++] = *c->p++;
    }
    out[n] = 0;
    return c->p++ < c->end;
}

static bool word(cursor *c, const char *w)
{
    skip_ws(c);
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n) != 0)
        return false;
    c->p += n;
    return true;
}

/* "(a, b, c)", "(a,)" or "()"; -1 when malformed or of rank > LT_MAX_RANK. */
static int shape_tuple(cursor *c, int64_t *dims)
{
    if (!eat(c, '('))
        return -1;
    int rank = 0;
    for (;;) {
        if (eat(c, ')'))
            return rank;
        skip_ws(c);
        if (rank == LT_MAX_RANK || c->p >= c->end || *c->p < '0' || *c->p > '9')
            return -1;
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (v > (INT64_MAX - 9) / 10)
                return -1;
            v = v * 10 + (*c->p++ - '0');
        }
        if (c->p < c->end && *c->p == 'L') /* Python 2's long literals */
            c->p++;
        dims[rank++] = v;
        if (!eat(c, ',') && !(c->p < c->end && *c->p == ')'))
            return -1;
    }
}

/* '<f4', '|u1', ... (little-endian or byte-sized; '<V2' is bfloat16);
 * UNDEFINED otherwise. */
static lt_dtype descr_type(const char *s, bool *big_endian)
{
    *big_endian = false;
    if (strlen(s) < 3 || !strchr("<>|=", s[0]))
        return LT_UNDEFINED;
    int size = 0;
    for (const char *p = s + 2; *p; p++) {
        if (*p < '0' || *p > '9' || size > 100)
            return LT_UNDEFINED;
        size = size * 10 + (*p - '0');
    }
    static const struct {
        char kind;
        int size;
        lt_dtype t;
    } tab[] = {
        {'u', 1, LT_U8},  {'u', 2, LT_U16}, {'u', 4, LT_U32}, {'u', 8, LT_U64}, {'i', 1, LT_I8},
        {'i', 2, LT_I16}, {'i', 4, LT_I32}, {'i', 8, LT_I64}, {'f', 2, LT_F16}, {'f', 4, LT_F32},
        {'f', 8, LT_F64}, {'b', 1, LT_BOOL}, {'c', 8, LT_C64}, {'c', 16, LT_C128},
        /* numpy has no bfloat16: ml_dtypes' arrays save as two-byte voids */
        {'V', 2, LT_BF16},
    };
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (tab[i].kind == s[1] && tab[i].size == size) {
            *big_endian = s[0] == '>' && size > 1;
            return tab[i].t;
        }
    return LT_UNDEFINED;
}

lt_status lt_npy_header(const char *what, const uint8_t *b, size_t n, lt_tensor *t, size_t *off, lt_err *err)
{
    memset(t, 0, sizeof *t);
    if (n < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: not a .npy file (bad magic)", what);
    if (b[6] < 1 || b[6] > 3)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: unknown .npy version %d.%d", what, b[6], b[7]);
    size_t hl = b[6] == 1 ? (size_t)b[8] | (size_t)b[9] << 8 : 0, at = b[6] == 1 ? 10 : 12;
    if (b[6] > 1) {
        if (n < 12)
            return lt_errf(err, LT_ERR_INVALID, "%s: truncated .npy header", what);
        hl = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
    }
    if (hl > n - at)
        return lt_errf(err, LT_ERR_INVALID, "%s: truncated .npy header (%zu bytes promised, %zu there)", what, hl,
                       n - at);
    cursor c = {(const char *)b + at, (const char *)b + at + hl};
    char key[32], descr[32] = "";
    int fortran = -1, rank = -1;
    const char *bad = NULL;
    bool seen[3] = {false, false, false};
    if (!eat(&c, '{'))
        bad = "no '{'";
    while (!bad && !eat(&c, '}')) {
        if (!quoted(&c, key, sizeof key) || !eat(&c, ':')) {
            bad = "expected a quoted key and ':'";
            break;
        }
        int ki = strcmp(key, "descr") == 0 ? 0 : strcmp(key, "fortran_order") == 0 ? 1 : strcmp(key, "shape") == 0 ? 2 : -1;
        if (ki >= 0 && seen[ki]) {
            bad = "a key appears twice";
            break;
        }
        if (ki >= 0)
            seen[ki] = true;
        if (ki < 0) {
            bad = "unknown key";
        } else if (ki == 0) {
            if (!quoted(&c, descr, sizeof descr))
                return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: structured .npy arrays are not supported", what);
        } else if (ki == 1) {
            fortran = word(&c, "True") ? 1 : word(&c, "False") ? 0 : -1;
            if (fortran < 0)
                bad = "fortran_order is neither True nor False";
        } else {
            if ((rank = shape_tuple(&c, t->dims)) < 0)
                return lt_errf(err, LT_ERR_INVALID, "%s: bad .npy shape (not a tuple of counts, or rank above %d)",
                               what, LT_MAX_RANK);
        }
        if (!bad && !eat(&c, ',') && !(skip_ws(&c), c.p < c.end && *c.p == '}'))
            bad = "expected ',' or '}'";
    }
    if (!bad && (skip_ws(&c), c.p < c.end))
        bad = "text after the '}'";
    if (!bad && (!descr[0] || fortran < 0 || rank < 0))
        bad = !descr[0] ? "no descr" : fortran < 0 ? "no fortran_order" : "no shape";
    if (bad)
        return lt_errf(err, LT_ERR_INVALID, "%s: bad .npy header (%s)", what, bad);
    bool big;
    t->dtype = descr_type(descr, &big);
    if (t->dtype == LT_UNDEFINED && descr[0] && descr[1] == 'O')
        return lt_errf(err, LT_ERR_UNSUPPORTED,
                       "%s: an object array ('%s', e.g. ragged rows saved as Python lists) cannot be read; store the "
                       "rows concatenated along axis 0 and their offsets as int64 NAME_splits (samples + 1 row splits)",
                       what, descr);
    if (t->dtype == LT_UNDEFINED)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: .npy element type '%s' is not supported", what, descr);
    if (big)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: big-endian .npy data ('%s') is not supported", what, descr);
    if (fortran && rank > 1)
        return lt_errf(err, LT_ERR_UNSUPPORTED,
                       "%s: Fortran-ordered .npy arrays are not supported (save np.ascontiguousarray(a))", what);
    t->rank = rank;
    t->numel = lt_shape_numel(rank, t->dims);
    size_t bytes;
    if (t->numel < 0 || __builtin_mul_overflow((size_t)t->numel, lt_dtype_size(t->dtype), &bytes))
        return lt_errf(err, LT_ERR_INVALID, "%s: .npy shape overflows", what);
    at += hl;
    if (n - at != bytes)
        return lt_errf(err, LT_ERR_INVALID, "%s: .npy data has %zu bytes, its shape needs %zu", what, n - at, bytes);
    *off = at;
    return LT_OK;
}
