/* CSV datasets: csv=TRAIN.csv[,TEST.csv]. One sample per row, comma-separated
 * numbers; the label is the last column, or the column --label-column names
 * (a header name, or a column number: 1 the first, -1 the last). The first
 * row is a header when none of its fields is a number; a first row mixing
 * names and numbers is refused. Fields may be quoted ("..." with "" for a
 * quote) and are trimmed of spaces; blank lines are skipped; a UTF-8 BOM and
 * CRLF line ends are accepted. Every other field becomes a float32 feature.
 * A label column written as integers (no '.', no exponent, as pandas would
 * type it int64) holds class labels, 0 or more; any other holds float
 * targets. Every rule is checked as the file is read, a failure naming the
 * file, line and column. */
#include "dataset_impl.h"
#include "../importer/open_read.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CSV_MAX_BYTES ((size_t)4 << 30)
#define CSV_MAX_FIELD 256 /* a number's text; names are cut for messages */

typedef struct csv_reader {
    const char *path;
    const char *p, *end;
    int64_t line; /* of the row being read, 1-based */
} csv_reader;

/* One field into buf (unquoted, trimmed); *more says a ',' followed. The
 * row ends at '\n' (a '\r' before it is dropped) or at the end. */
static lt_status csv_field(csv_reader *r, int64_t col, char *buf, size_t len, bool *more, lt_err *err)
{
    size_t n = 0;
    bool quoted = false, too_long = false;
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t'))
        r->p++;
    if (r->p < r->end && *r->p == '"') {
        quoted = true;
        r->p++;
        for (;;) {
            if (r->p >= r->end)
                return lt_errf(err, LT_ERR_INVALID, "%s: line %lld, column %lld: a quoted field is not closed",
                               r->path, (long long)r->line, (long long)col);
            char c = *r->p++;
            if (c == '"') {
                if (r->p < r->end && *r->p == '"')
                    r->p++;
                else
                    break;
            } else if (c == '\n') {
                return lt_errf(err, LT_ERR_INVALID,
                               "%s: line %lld, column %lld: a quoted field runs past the end of its line", r->path,
                               (long long)r->line, (long long)col);
            }
            if (n + 1 < len)
                buf[n++] = c;
            else
                too_long = true;
        }
        while (r->p < r->end && (*r->p == ' ' || *r->p == '\t'))
            r->p++;
    }
    while (r->p < r->end && *r->p != ',' && *r->p != '\n') {
        if (quoted && *r->p != '\r')
            return lt_errf(err, LT_ERR_INVALID, "%s: line %lld, column %lld: text after a quoted field", r->path,
                           (long long)r->line, (long long)col);
        if (n + 1 < len)
            buf[n++] = *r->p;
        else
            too_long = true;
        r->p++;
    }
    while (!quoted && n && (buf[n - 1] == ' ' || buf[n - 1] == '\t' || buf[n - 1] == '\r'))
        n--;
    buf[n] = 0;
    (void)too_long; /* a field longer than any number is no number: the caller says so */
    *more = r->p < r->end && *r->p == ',';
    if (r->p < r->end)
        r->p++; /* the ',' or the '\n' */
    return LT_OK;
}

/* skips blank lines; false at the end of the data */
static bool csv_next_row(csv_reader *r)
{
    for (;;) {
        const char *q = r->p;
        while (q < r->end && (*q == ' ' || *q == '\t' || *q == '\r'))
            q++;
        if (q >= r->end)
            return false;
        if (*q != '\n')
            return true;
        r->p = q + 1;
        r->line++;
    }
}

/* a number written whole, finite or not */
static bool csv_any_number(const char *s)
{
    char *e;
    strtod(s, &e);
    return *s && e != s && !*e && !strpbrk(s, "xX"); /* strtod's hex floats are no CSV number */
}

/* a finite number written whole: *is_int when it is an integer's text */
static bool csv_number(const char *s, double *v, bool *is_int)
{
    if (!*s)
        return false;
    char *e;
    errno = 0;
    *v = strtod(s, &e);
    /* decimal only: strtod's hex floats (0x1p3) are no CSV number */
    if (*e || e == s || !isfinite(*v) || strspn(s, "0123456789+-.eE") != strlen(s))
        return false;
    const char *d = s + (*s == '-' || *s == '+');
    *is_int = *d != 0;
    for (; *d; d++)
        *is_int = *is_int && isdigit((unsigned char)*d);
    return true;
}

static const char *shown(const char *s, char *buf, size_t len)
{
    char cut[64];
    snprintf(cut, sizeof cut, strlen(s) > 40 ? "%.40s..." : "%s", s);
    return lt_str_printable(cut, buf, len);
}

/* What a file holds, as read. */
typedef struct csv_table {
    int64_t ncol, nrow;
    bool header;
    char **names; /* ncol, when header */
    double *v;    /* nrow * ncol */
    bool *col_int; /* ncol: every field of the column is written as an integer */
    int64_t *row_line; /* nrow: the line each row came from */
} csv_table;

static void table_free(csv_table *t)
{
    for (int64_t c = 0; t->names && c < t->ncol; c++)
        free(t->names[c]);
    free(t->names);
    free(t->v);
    free(t->col_int);
    free(t->row_line);
    memset(t, 0, sizeof *t);
}

static lt_status csv_read(const char *path, csv_table *t, lt_err *err)
{
    memset(t, 0, sizeof *t);
    uint8_t *data = NULL;
    size_t len = 0;
    lt_status s = lt_read_file(path, CSV_MAX_BYTES, &data, &len, err);
    if (s != LT_OK)
        return s;
    csv_reader r = {path, (const char *)data, (const char *)data + len, 1};
    if (len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3))
        r.p += 3;
    if (memchr(data, 0, len)) {
        free(data);
        return lt_errf(err, LT_ERR_INVALID, "%s: holds NUL bytes; not a text CSV file", path);
    }
    char field[CSV_MAX_FIELD];
    int64_t cap = 0;
    if (!csv_next_row(&r)) {
        free(data);
        return lt_errf(err, LT_ERR_INVALID, "%s: the file is empty (a CSV dataset needs rows of numbers)", path);
    }
    /* the first row: names or numbers */
    int64_t first_line = r.line;
    char **first = NULL;
    int64_t nf = 0, nnum = 0, first_text = -1, first_num = -1;
    bool more = true;
    while (more && s == LT_OK) {
        if (nf == cap) {
            cap = cap ? 2 * cap : 16;
            char **g = realloc(first, sizeof *g * (size_t)cap);
            if (!g) {
                s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
                break;
            }
            first = g;
        }
        s = csv_field(&r, nf + 1, field, sizeof field, &more, err);
        if (s != LT_OK)
            break;
        double v;
        bool isint;
        if (csv_number(field, &v, &isint)) {
            nnum++;
            if (first_num < 0)
                first_num = nf;
        } else if (first_text < 0) {
            first_text = nf;
        }
        if (!(first[nf] = strdup(field)))
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        nf++;
    }
    if (s == LT_OK && nf < 2)
        s = lt_errf(err, LT_ERR_INVALID, "%s: line %lld has one column; a CSV dataset needs features and a label, "
                    "separated by commas", path, (long long)first_line);
    if (s == LT_OK && nnum > 0 && nnum < nf) {
        char a[128], b[128];
        s = lt_errf(err, LT_ERR_INVALID,
                    "%s: line %lld, column %lld: '%s' is not a number (and column %lld holds the number %s, so the "
                    "line is no header of names either)", path, (long long)first_line, (long long)first_text + 1,
                    shown(first[first_text], a, sizeof a), (long long)first_num + 1, shown(first[first_num], b, sizeof b));
    }
    t->ncol = nf;
    t->header = s == LT_OK && nnum == 0;
    if (s == LT_OK && !(t->col_int = malloc(sizeof *t->col_int * (size_t)nf)))
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    for (int64_t c = 0; s == LT_OK && c < nf; c++)
        t->col_int[c] = true;
    if (t->header) {
        t->names = first;
        first = NULL;
        r.line++;
    } else {
        /* the first row is data: read it again below */
        r.p = (const char *)data;
        if (len >= 3 && !memcmp(data, "\xef\xbb\xbf", 3))
            r.p += 3;
        r.line = 1;
    }
    int64_t rcap = 0;
    while (s == LT_OK && csv_next_row(&r)) {
        if (t->nrow == rcap) {
            rcap = rcap ? 2 * rcap : 1024;
            double *nv = realloc(t->v, sizeof *nv * (size_t)(rcap * nf));
            int64_t *nl = nv ? realloc(t->row_line, sizeof *nl * (size_t)rcap) : NULL;
            if (nv)
                t->v = nv;
            if (nl)
                t->row_line = nl;
            if (!nv || !nl) {
                s = lt_errf(err, LT_ERR_NOMEM, "%s: out of memory at line %lld", path, (long long)r.line);
                break;
            }
        }
        double *row = t->v + t->nrow * nf;
        int64_t c = 0;
        more = true;
        while (more && s == LT_OK) {
            s = csv_field(&r, c + 1, field, sizeof field, &more, err);
            if (s != LT_OK)
                break;
            if (c >= nf) {
                s = lt_errf(err, LT_ERR_INVALID, "%s: line %lld has more than %lld fields; %s has %lld", path,
                            (long long)r.line, (long long)nf, t->header ? "the header" : "the first row",
                            (long long)nf);
                break;
            }
            double v;
            bool isint;
            char a[128];
            if (!*field)
                s = lt_errf(err, LT_ERR_INVALID, "%s: line %lld, column %lld is empty; every field must be a number",
                            path, (long long)r.line, (long long)c + 1);
            else if (!csv_number(field, &v, &isint))
                s = lt_errf(err, LT_ERR_INVALID, "%s: line %lld, column %lld: '%s' is not a%s number", path,
                            (long long)r.line, (long long)c + 1, shown(field, a, sizeof a),
                            csv_any_number(field) ? " finite" : "");
            else {
                row[c] = v;
                t->col_int[c] = t->col_int[c] && isint;
            }
            c++;
        }
        if (s == LT_OK && c < nf)
            s = lt_errf(err, LT_ERR_INVALID, "%s: line %lld has %lld fields; %s has %lld", path, (long long)r.line,
                        (long long)c, t->header ? "the header" : "the first row", (long long)nf);
        if (s == LT_OK)
            t->row_line[t->nrow++] = r.line;
        r.line++;
    }
    if (s == LT_OK && t->nrow == 0)
        s = lt_errf(err, LT_ERR_INVALID, "%s: a header and no rows of numbers", path);
    for (int64_t i = 0; first && i < nf; i++)
        free(first[i]);
    free(first);
    free(data);
    if (s != LT_OK)
        table_free(t);
    return s;
}

/* The label's column for spec col (NULL: the last). */
static lt_status label_column(const char *path, const csv_table *t, const char *col, int64_t *out, lt_err *err)
{
    if (!col) {
        *out = t->ncol - 1;
        return LT_OK;
    }
    for (int64_t c = 0; t->header && c < t->ncol; c++)
        if (!strcmp(t->names[c], col)) {
            *out = c;
            return LT_OK;
        }
    char *e;
    errno = 0;
    long long k = strtoll(col, &e, 10);
    char a[128];
    if (*col && !*e && !errno && k != 0 && k >= -t->ncol && k <= t->ncol) {
        *out = k > 0 ? k - 1 : t->ncol + k;
        return LT_OK;
    }
    if (*col && !*e)
        return lt_errf(err, LT_ERR_INVALID, "%s: --label-column %s: the file has columns 1..%lld (or -1 for the last)",
                       path, shown(col, a, sizeof a), (long long)t->ncol);
    if (!t->header)
        return lt_errf(err, LT_ERR_INVALID, "%s: --label-column %s: the file has no header row of names; give a column "
                       "number (1..%lld, -1 for the last)", path, shown(col, a, sizeof a), (long long)t->ncol);
    char list[512];
    size_t at = 0;
    list[0] = 0;
    for (int64_t c = 0; c < t->ncol && at + 8 < sizeof list; c++) {
        char b[128];
        at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", c ? ", " : "", shown(t->names[c], b, sizeof b));
    }
    return lt_errf(err, LT_ERR_INVALID, "%s: --label-column %s: no column of that name (the header has %s)", path,
                   shown(col, a, sizeof a), list);
}

/* "TRAIN.csv[,TEST.csv]": split's file into buf */
static lt_status csv_path(const char *arg, int split, char *buf, size_t len, lt_err *err)
{
    const char *comma = strchr(arg, ',');
    if (comma && strchr(comma + 1, ','))
        return lt_errf(err, LT_ERR_INVALID, "csv=%s: give csv=TRAIN.csv or csv=TRAIN.csv,TEST.csv", arg);
    const char *s = split ? (comma ? comma + 1 : NULL) : arg;
    size_t n = split ? (s ? strlen(s) : 0) : (comma ? (size_t)(comma - arg) : strlen(arg));
    if (!s || n == 0)
        return lt_errf(err, LT_ERR_INVALID, "csv=%s: no %s file", arg, split ? "test (csv=TRAIN.csv,TEST.csv)" : "training");
    if (n >= len)
        return lt_errf(err, LT_ERR_INVALID, "csv=%s: path too long", arg);
    memcpy(buf, s, n);
    buf[n] = 0;
    return LT_OK;
}

int lt_ds_has_csv(const char *arg, int split)
{
    char p[4096];
    lt_err err;
    /* a test file the spec names counts even when missing: opening it says why */
    return csv_path(arg, split, p, sizeof p, &err) == LT_OK && (split || lt_ds_file_exists(p));
}

/* whether s[0..len) holds a line end after something other than blanks */
static bool first_row_in(const char *s, size_t len)
{
    size_t i = 0;
    while (i < len && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
        i++;
    return s && i < len && memchr(s + i, '\n', len - i);
}

/* The names in the first row of path when that row is a header (no field a
 * number); *n is 0 when it is not or the file cannot be read (a regular
 * file only: a FIFO is not waited on). Reads up to the first line's end. */
static void header_names(const char *path, char ***names, int64_t *n)
{
    *names = NULL;
    *n = 0;
    lt_err ignored;
    FILE *f = lt_fopen_read(path, NULL, &ignored);
    if (!f)
        return;
    size_t cap = 0, len = 0;
    char *buf = NULL;
    /* blocks of 1 MiB until the first line that is not blank is in (a
     * field does not hold a newline: quoted fields end at their line) */
    while (!first_row_in(buf, len)) {
        if (len == cap) {
            if (cap >= CSV_MAX_BYTES)
                break;
            char *g = realloc(buf, cap + ((size_t)1 << 20));
            if (!g)
                break;
            buf = g;
            cap += (size_t)1 << 20;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        if (!got)
            break;
        len += got;
    }
    fclose(f);
    csv_reader r = {path, buf, buf + len, 1};
    if (len >= 3 && !memcmp(buf, "\xef\xbb\xbf", 3))
        r.p += 3;
    char field[CSV_MAX_FIELD];
    bool more = buf && csv_next_row(&r), header = more;
    int64_t k = 0, ncap = 0;
    char **v = NULL;
    while (more && header) {
        if (k == ncap) {
            ncap = ncap ? 2 * ncap : 16;
            char **g = realloc(v, sizeof *g * (size_t)ncap);
            if (!g)
                break;
            v = g;
        }
        double x;
        bool isint;
        if (csv_field(&r, k + 1, field, sizeof field, &more, &ignored) != LT_OK || csv_number(field, &x, &isint) ||
            !(v[k] = strdup(field)))
            header = false;
        else
            k++;
    }
    if (header && !more) {
        *names = v;
        *n = k;
    } else {
        for (int64_t i = 0; i < k; i++)
            free(v[i]);
        free(v);
    }
    free(buf);
}

static void names_list(char **names, int64_t n, char *list, size_t len)
{
    size_t at = 0;
    list[0] = 0;
    for (int64_t c = 0; c < n && at + 8 < len; c++) {
        char b[128];
        at += (size_t)snprintf(list + at, len - at, "%s%s", c ? ", " : "", shown(names[c], b, sizeof b));
    }
}

/* Whether a name of a (case aside) stands at another place in b. */
static bool moved_names(char **a, char **b, int64_t n)
{
    for (int64_t c = 0; c < n; c++)
        for (int64_t k = 0; k < n; k++)
            if (k != c && !strcasecmp(a[c], b[k]))
                return true;
    return false;
}

/* A test file whose header names the training file's columns (case aside)
 * in another order is read in the training file's order. One whose names
 * differ is read by position, unless some name it shares with the training
 * file stands at another place: that file is refused. Files without a
 * header are read by position. */
static lt_status match_train_columns(const char *arg, const char *path, csv_table *t, lt_err *err)
{
    char train[4096];
    char **want = NULL;
    int64_t nw = 0;
    if (!t->header || csv_path(arg, 0, train, sizeof train, err) != LT_OK)
        return LT_OK;
    header_names(train, &want, &nw);
    int64_t nnames = nw;
    if (nw != t->ncol)
        nw = 0; /* another column count: the samples' shapes say so */
    bool equal = nw == t->ncol;
    for (int64_t c = 0; equal && c < nw; c++)
        equal = !strcasecmp(want[c], t->names[c]);
    if (equal)
        nw = 0; /* as written (repeated names included) */
    lt_status s = LT_OK;
    int64_t *perm = nw ? malloc(sizeof *perm * (size_t)nw) : NULL;
    bool *used = nw ? calloc((size_t)nw, sizeof *used) : NULL;
    bool same = nw == t->ncol, ordered = true;
    for (int64_t c = 0; same && perm && used && c < nw; c++) {
        perm[c] = -1;
        for (int64_t k = 0; k < t->ncol; k++)
            if (!strcasecmp(want[c], t->names[k])) {
                /* a name twice in either header cannot say where a column goes */
                same = perm[c] < 0 && !used[k];
                perm[c] = k;
                used[k] = true;
            }
        same = same && perm[c] >= 0;
        ordered = ordered && perm[c] == c;
    }
    bool oom = nw && (!perm || !used);
    free(used);
    if (oom) {
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    } else if (nw && !same && moved_names(want, t->names, nw)) {
        char a[512], b[512];
        names_list(t->names, t->ncol, a, sizeof a);
        names_list(want, nw, b, sizeof b);
        s = lt_errf(err, LT_ERR_INVALID, "%s: the header names the columns %s; the training file %s names %s: give "
                    "the test file the training file's columns", path, a, train, b);
    } else if (nw && same && !ordered) {
        double *v = malloc(sizeof *v * (size_t)(t->nrow * nw));
        bool *ci = malloc(sizeof *ci * (size_t)nw);
        char **nm = malloc(sizeof *nm * (size_t)nw);
        if (!v || !ci || !nm) {
            free(v);
            free(ci);
            free(nm);
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        } else {
            for (int64_t i = 0; i < t->nrow; i++)
                for (int64_t c = 0; c < nw; c++)
                    v[i * nw + c] = t->v[i * nw + perm[c]];
            for (int64_t c = 0; c < nw; c++) {
                ci[c] = t->col_int[perm[c]];
                nm[c] = t->names[perm[c]];
            }
            free(t->v);
            free(t->col_int);
            free(t->names);
            t->v = v;
            t->col_int = ci;
            t->names = nm;
        }
    }
    free(perm);
    for (int64_t i = 0; i < nnames; i++)
        free(want[i]);
    free(want);
    return s;
}

lt_status lt_ds_open_csv(lt_dataset *d, const char *arg, int split, const lt_dataset_opts *o, lt_err *err)
{
    char path[4096];
    lt_status s = csv_path(arg, split, path, sizeof path, err);
    if (s != LT_OK)
        return s;
    csv_table t;
    s = csv_read(path, &t, err);
    if (s != LT_OK)
        return s;
    if (split)
        s = match_train_columns(arg, path, &t, err);
    int64_t lc = 0;
    if (s == LT_OK)
        s = label_column(path, &t, o ? o->label_column : NULL, &lc, err);
    int64_t n = t.nrow, F = t.ncol - 1;
    d->n = n;
    d->rank = 1;
    d->dims[0] = F;
    d->numel = F;
    d->classes = t.col_int[lc];
    d->trank = 0;
    d->tnumel = 1;
    if (s == LT_OK && !(d->xf = malloc(sizeof *d->xf * (size_t)(n * F))))
        s = lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", path);
    if (s == LT_OK && d->classes && !(d->cls = malloc(sizeof *d->cls * (size_t)n)))
        s = lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", path);
    if (s == LT_OK && !d->classes && !(d->tgt = malloc(sizeof *d->tgt * (size_t)n)))
        s = lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", path);
    for (int64_t i = 0; s == LT_OK && i < n; i++) {
        const double *row = t.v + i * t.ncol;
        float *x = d->xf + i * F;
        for (int64_t c = 0, j = 0; c < t.ncol; c++)
            if (c != lc)
                x[j++] = (float)row[c];
        double y = row[lc];
        if (!d->classes) {
            d->tgt[i] = (float)y;
            continue;
        }
        if (y < 0 || y > INT32_MAX) {
            char a[128];
            s = lt_errf(err, LT_ERR_INVALID, "%s: line %lld, column %lld%s%s%s: class label %.0f; class labels are 0..%d "
                        "(write float targets with a decimal point: %.0f.0)", path, (long long)t.row_line[i],
                        (long long)lc + 1, t.header ? " ('" : "", t.header ? shown(t.names[lc], a, sizeof a) : "",
                        t.header ? "')" : "", y, INT32_MAX, y);
            break;
        }
        d->cls[i] = (int64_t)y;
        if (d->cls[i] + 1 > d->num_classes)
            d->num_classes = d->cls[i] + 1;
    }
    table_free(&t);
    return s;
}
