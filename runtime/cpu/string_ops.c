/* CPU kernels: the string ops of opset 20 (StringConcat, StringSplit,
 * RegexFullMatch) and Equal on string tensors. Strings are interned
 * pointers (lt_str_intern), compared by content. RegexFullMatch takes the
 * spec's RE2 syntax as far as POSIX extended expressions (with glibc's \w,
 * \W, \b, \B) can say it: the Perl classes are rewritten, (?: groups become
 * plain ones, and other (? constructs are refused by name. */
#include "../runtime.h"
#include <regex.h>
#include <stdlib.h>
#include <string.h>

/* ---- broadcasting of two inputs (numpy rules) ---- */
typedef struct bc2 {
    int rank;
    int64_t dims[LT_MAX_RANK], sa[LT_MAX_RANK], sb[LT_MAX_RANK], n;
} bc2;

static bool bc2_setup(const lt_tensor *a, const lt_tensor *b, bc2 *o)
{
    o->rank = a->rank > b->rank ? a->rank : b->rank;
    int64_t st_a = 1, st_b = 1;
    o->n = 1;
    for (int d = o->rank - 1; d >= 0; d--) {
        int da = d - (o->rank - a->rank), db = d - (o->rank - b->rank);
        int64_t na = da >= 0 ? a->dims[da] : 1, nb = db >= 0 ? b->dims[db] : 1;
        if (na != nb && na != 1 && nb != 1)
            return false;
        o->dims[d] = na == 1 ? nb : na;
        o->sa[d] = na == 1 ? 0 : st_a;
        o->sb[d] = nb == 1 ? 0 : st_b;
        st_a *= na;
        st_b *= nb;
        o->n *= o->dims[d];
    }
    return true;
}

/* the two inputs' element indices of output element i */
static void bc2_at(const bc2 *o, int64_t i, int64_t *ia, int64_t *ib)
{
    int64_t a = 0, b = 0;
    for (int d = o->rank - 1; d >= 0; d--) {
        int64_t x = i % o->dims[d];
        i /= o->dims[d];
        a += x * o->sa[d];
        b += x * o->sb[d];
    }
    *ia = a;
    *ib = b;
}

static const char *str_at(const lt_tensor *t, int64_t i)
{
    const char *s = ((const char *const *)t->data)[i];
    return s ? s : "";
}

static lt_status two_strings(lt_kctx *k, const lt_tensor **a, const lt_tensor **b, bc2 *o)
{
    *a = lt_k_in(k, 0);
    *b = lt_k_in(k, 1);
    if (!*a || !*b || (*a)->dtype != LT_STRING || (*b)->dtype != LT_STRING)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs two string tensors");
    if (!bc2_setup(*a, *b, o))
        return lt_k_fail(k, LT_ERR_RUNTIME, "the inputs' shapes do not broadcast");
    return LT_OK;
}

static lt_status string_concat(lt_kctx *k)
{
    const lt_tensor *a, *b;
    bc2 o;
    lt_status st = two_strings(k, &a, &b, &o);
    lt_tensor *y;
    if (st == LT_OK)
        st = lt_k_out(k, 0, LT_STRING, o.rank, o.dims, &y);
    for (int64_t i = 0; st == LT_OK && i < o.n; i++) {
        int64_t ia, ib;
        bc2_at(&o, i, &ia, &ib);
        const char *x = str_at(a, ia), *z = str_at(b, ib);
        size_t lx = strlen(x), lz = strlen(z);
        char *buf = lt_k_scratch(k, lx + lz + 1);
        if (!buf)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory joining strings");
        memcpy(buf, x, lx);
        memcpy(buf + lx, z, lz + 1);
        const char *s = lt_str_intern(buf, lx + lz);
        if (!s)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory interning a string");
        ((const char **)y->data)[i] = s;
    }
    return st;
}

/* Equal on two string tensors; every other type goes to the elementwise
 * family's kernel, installed before this registrar runs */
static lt_kernel_fn equal_other;

static lt_status equal_any(lt_kctx *k)
{
    const lt_tensor *a0 = lt_k_in(k, 0);
    if (!a0 || a0->dtype != LT_STRING)
        return equal_other ? equal_other(k) : lt_k_fail(k, LT_ERR_INTERNAL, "no Equal kernel");
    const lt_tensor *a, *b;
    bc2 o;
    lt_status st = two_strings(k, &a, &b, &o);
    lt_tensor *y;
    if (st == LT_OK)
        st = lt_k_out(k, 0, LT_BOOL, o.rank, o.dims, &y);
    for (int64_t i = 0; st == LT_OK && i < o.n; i++) {
        int64_t ia, ib;
        bc2_at(&o, i, &ia, &ib);
        ((uint8_t *)y->data)[i] = strcmp(str_at(a, ia), str_at(b, ib)) == 0;
    }
    return st;
}

/* ---- StringSplit ---- */
static bool ws(char c) { return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f); }

/* the pieces of s (Python's str.split(delim or None, maxsplit)): their
 * starts and lengths into st/ln when given; returns their count */
static int64_t split(const char *s, const char *delim, int64_t maxsplit, int64_t *st, int64_t *ln)
{
    int64_t n = 0, len = (int64_t)strlen(s);
    if (!*delim) {
        int64_t i = 0;
        while (i < len) {
            while (i < len && ws(s[i]))
                i++;
            if (i == len)
                break;
            int64_t j = i;
            if (maxsplit >= 0 && n == maxsplit) {
                j = len;
                while (j > i && ws(s[j - 1]))
                    j--;
            } else {
                while (j < len && !ws(s[j]))
                    j++;
            }
            if (st) {
                st[n] = i;
                ln[n] = j - i;
            }
            n++;
            i = j;
        }
        return n;
    }
    int64_t dl = (int64_t)strlen(delim), i = 0;
    for (;;) {
        const char *hit = maxsplit >= 0 && n == maxsplit ? NULL : strstr(s + i, delim);
        int64_t j = hit ? (int64_t)(hit - s) : len;
        if (st) {
            st[n] = i;
            ln[n] = j - i;
        }
        n++;
        if (!hit)
            return n;
        i = j + dl;
    }
}

static lt_status string_split(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x || x->dtype != LT_STRING)
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be a string tensor");
    if (x->rank >= LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_RUNTIME, "X of rank %d leaves no room for the split axis", x->rank);
    const char *delim = lt_attr_str(k->node, "delimiter", "");
    int64_t maxsplit = lt_attr_find(k->node, "maxsplit") ? lt_attr_int(k->node, "maxsplit", -1) : -1;
    int64_t most = 0;
    for (int64_t i = 0; i < x->numel; i++) {
        int64_t c = split(str_at(x, i), delim, maxsplit, NULL, NULL);
        most = c > most ? c : most;
    }
    int64_t yd[LT_MAX_RANK];
    memcpy(yd, x->dims, sizeof(int64_t) * (size_t)x->rank);
    yd[x->rank] = most;
    lt_tensor *y, *z;
    lt_status st = lt_k_out(k, 0, LT_STRING, x->rank + 1, yd, &y);
    if (st == LT_OK)
        st = lt_k_out(k, 1, LT_I64, x->rank, x->dims, &z);
    int64_t *pst = st == LT_OK ? lt_k_scratch(k, sizeof(int64_t) * 2 * (size_t)(most ? most : 1)) : NULL;
    if (st == LT_OK && !pst)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of scratch memory");
    for (int64_t i = 0; st == LT_OK && i < x->numel; i++) {
        const char *s = str_at(x, i);
        int64_t c = split(s, delim, maxsplit, pst, pst + most);
        ((int64_t *)z->data)[i] = c;
        for (int64_t p = 0; p < c; p++) {
            const char *v = lt_str_intern(s + pst[p], (size_t)pst[most + p]);
            if (!v)
                return lt_k_fail(k, LT_ERR_NOMEM, "out of memory interning a string");
            ((const char **)y->data)[i * most + p] = v;
        }
    }
    return st;
}

/* ---- RegexFullMatch ---- */
/* appends n bytes of s to the growing pattern; false when it is full */
static bool put(char *o, size_t cap, size_t *len, const char *s, size_t n)
{
    if (*len + n + 1 > cap)
        return false;
    memcpy(o + *len, s, n);
    *len += n;
    o[*len] = 0;
    return true;
}

/* RE2 -> POSIX ERE anchored at both ends; NULL (with why) when it cannot */
static char *translate(const char *re, const char **why)
{
    size_t cap = 16 * strlen(re) + 16, len = 0;
    char *o = malloc(cap);
    if (!o) {
        *why = "out of memory";
        return NULL;
    }
    o[0] = 0;
    bool ok = put(o, cap, &len, "^(", 2);
    for (const char *p = re; ok && *p; p++) {
        if (*p == '(' && p[1] == '?') {
            if (p[2] != ':') {
                *why = "(? groups other than (?: are not supported";
                free(o);
                return NULL;
            }
            ok = put(o, cap, &len, "(", 1);
            p += 2;
        } else if (*p == '\\' && p[1]) {
            p++;
            const char *r = *p == 'd' ? "[0-9]" : *p == 'D' ? "[^0-9]" : *p == 's' ? "[[:space:]]"
                            : *p == 'S' ? "[^[:space:]]" : NULL;
            char esc[3] = {'\\', *p, 0};
            ok = r ? put(o, cap, &len, r, strlen(r)) : put(o, cap, &len, esc, 2);
        } else if (*p == '[') {
            /* a bracket expression: escapes rewritten, a literal - last, ] first */
            bool dash = false, rb = false;
            char body[1024];
            size_t bl = 0;
            p++;
            bool neg = *p == '^';
            if (neg)
                p++;
            body[0] = 0;
            for (; ok && *p && *p != ']'; p++) {
                const char *r = NULL;
                char one[2] = {*p, 0};
                if (*p == '\\' && p[1]) {
                    p++;
                    switch (*p) {
                    case 'w': r = "[:alnum:]_"; break;
                    case 'd': r = "0-9"; break;
                    case 's': r = "[:space:]"; break;
                    case '-': dash = true; r = ""; break;
                    case ']': rb = true; r = ""; break;
                    case 'W': case 'D': case 'S':
                        *why = "negated classes inside [] are not supported";
                        free(o);
                        return NULL;
                    default: one[0] = *p; r = one; break;
                    }
                } else {
                    r = one;
                }
                ok = put(body, sizeof body, &bl, r, strlen(r));
            }
            if (*p != ']') {
                *why = "an unterminated [";
                free(o);
                return NULL;
            }
            ok = ok && put(o, cap, &len, neg ? "[^" : "[", neg ? 2 : 1) && (!rb || put(o, cap, &len, "]", 1)) &&
                 put(o, cap, &len, body, bl) && (!dash || put(o, cap, &len, "-", 1)) && put(o, cap, &len, "]", 1);
        } else {
            ok = put(o, cap, &len, p, 1);
        }
    }
    if (!ok || !put(o, cap, &len, ")$", 2)) {
        *why = "the pattern is too long";
        free(o);
        return NULL;
    }
    return o;
}

static lt_status regex_full_match(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x || x->dtype != LT_STRING)
        return lt_k_fail(k, LT_ERR_RUNTIME, "X must be a string tensor");
    const lt_attr *pa = lt_attr_find(k->node, "pattern");
    if (!pa || !pa->s)
        return lt_k_fail(k, LT_ERR_RUNTIME, "needs the attribute 'pattern'");
    const char *why = NULL;
    char *pat = translate(pa->s, &why);
    if (!pat)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "pattern '%s': %s", pa->s, why);
    regex_t re;
    int rc = regcomp(&re, pat, REG_EXTENDED | REG_NOSUB);
    free(pat);
    if (rc != 0) {
        char msg[128];
        regerror(rc, &re, msg, sizeof msg);
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "pattern '%s': %s", pa->s, msg);
    }
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, LT_BOOL, x->rank, x->dims, &y);
    for (int64_t i = 0; st == LT_OK && i < x->numel; i++)
        ((uint8_t *)y->data)[i] = regexec(&re, str_at(x, i), 0, NULL, 0) == 0;
    regfree(&re);
    return st;
}

void lt_cpu_register_string_ops(lt_kernel_fn *tab)
{
    tab[LT_OP_STRING_CONCAT] = string_concat;
    tab[LT_OP_STRING_SPLIT] = string_split;
    tab[LT_OP_REGEX_FULL_MATCH] = regex_full_match;
    if (tab[LT_OP_EQUAL] != equal_any) {
        equal_other = tab[LT_OP_EQUAL];
        tab[LT_OP_EQUAL] = equal_any;
    }
}
