/* Gradient rules: Einsum and Det.
 *
 * Einsum: the gradient of operand k is another Einsum of the other operands
 * and dy, producing k's labels. The ellipsis is first spelled out with
 * fresh letters (right-aligned, as the kernel broadcasts it), so every case
 * is one of plain labels. A label that only k has (summed away from k
 * alone) comes back as a broadcast axis; a label k repeats (a diagonal)
 * gets a fresh letter per repeat and an identity matrix tying the two;
 * labels where k has size 1 and the others more are summed back by
 * ReduceSumLike.
 *
 * Det: d det(A) / dA is the cofactor matrix. With no inverse op it is built
 * from the minors themselves: every (n-1)x(n-1) minor gathered at once and
 * passed to a batched Det, which also holds for singular A. */
#include "rules_util.h"
#include <string.h>

#define NLAB 52      /* a-z then A-Z */
#define MAX_TERMS 32 /* operands of an Einsum this rule takes */

typedef struct ein_term {
    int n;
    int l[2 * LT_MAX_RANK];
    bool ell;
    int pos; /* where the ellipsis stands among the letters */
} ein_term;

static int label(char ch)
{
    if (ch >= 'a' && ch <= 'z')
        return ch - 'a';
    if (ch >= 'A' && ch <= 'Z')
        return 26 + ch - 'A';
    return -1;
}

static char letter(int l) { return (char)(l < 26 ? 'a' + l : 'A' + l - 26); }

static bool parse_term(const char *s, size_t len, ein_term *t)
{
    memset(t, 0, sizeof *t);
    for (size_t i = 0; i < len;) {
        if (s[i] == '.') {
            if (t->ell || i + 3 > len || s[i + 1] != '.' || s[i + 2] != '.')
                return false;
            t->ell = true;
            t->pos = t->n;
            i += 3;
            continue;
        }
        int l = label(s[i++]);
        if (l < 0 || t->n >= LT_MAX_RANK)
            return false;
        t->l[t->n++] = l;
    }
    return true;
}

/* t with its ellipsis (ell dims of E, right-aligned) as the fresh letters */
static bool spell_out(const ein_term *t, int ell, int E, const int *fresh, ein_term *o)
{
    memset(o, 0, sizeof *o);
    for (int j = 0; j <= t->n; j++) {
        if (t->ell && t->pos == j)
            for (int e = 0; e < ell; e++) {
                if (o->n >= 2 * LT_MAX_RANK)
                    return false;
                o->l[o->n++] = fresh[E - ell + e];
            }
        if (j < t->n) {
            if (o->n >= 2 * LT_MAX_RANK)
                return false;
            o->l[o->n++] = t->l[j];
        }
    }
    return o->n <= LT_MAX_RANK;
}

static bool append(char *buf, size_t cap, size_t *len, const char *s)
{
    size_t k = strlen(s);
    if (*len + k + 1 > cap)
        return false;
    memcpy(buf + *len, s, k + 1);
    *len += k;
    return true;
}

static bool append_term(char *buf, size_t cap, size_t *len, const ein_term *t)
{
    char s[2 * LT_MAX_RANK + 1];
    for (int i = 0; i < t->n; i++)
        s[i] = letter(t->l[i]);
    s[t->n] = 0;
    return append(buf, cap, len, s);
}

/* an identity matrix as large as axis ax of x, in x's float type */
static lt_ival *identity_like_axis(lt_ad *c, lt_ival *x, int64_t ax)
{
    int64_t two[2] = {ax, ax};
    lt_ival *shape = OP2(GATHER, OP1(SHAPE, x), lt_ad_ints(c, 2, two));
    lt_ival *zeros = OP2(EXPAND, lt_ad_scalar(c, lt_ad_float_dtype(x), 0), shape);
    return OP1(EYE_LIKE, zeros);
}

typedef struct ein_eq {
    int nin;
    ein_term t[MAX_TERMS];
    ein_term out;
    bool taken[NLAB]; /* letters the spelled-out equation uses */
} ein_eq;

static bool dim_is(const lt_ival *v, int i, int64_t *d)
{
    if (i >= v->type.rank)
        return false;
    *d = v->type.dims[i].v;
    return v->type.dims[i].sym < 0 && *d >= 0;
}

/* Whether the gradient einsum surely gives label l (axis i of operand k)
 * k's size there: k's size is 1, or l is in dy (the broadcast size), or
 * another operand has l at that size, or l is a diagonal of k (its
 * identities have k's size). Otherwise (a label only others with size 1
 * share, or unknown sizes) the result is expanded. */
static bool full_size(const ein_eq *q, lt_ival *const *in, int k, int i, int l)
{
    int64_t dk, dt;
    if (l != q->t[k].l[i] || (dim_is(in[k], i, &dk) && dk == 1))
        return true;
    for (int j = 0; j < q->t[k].n; j++)
        if (j != i && q->t[k].l[j] == l)
            return true;
    for (int j = 0; j < q->out.n; j++)
        if (q->out.l[j] == l)
            return true;
    for (int t = 0; t < q->nin; t++)
        for (int j = 0; t != k && j < q->t[t].n; j++)
            if (q->t[t].l[j] == l && dim_is(in[k], i, &dk) && dim_is(in[t], j, &dt) && dk == dt)
                return true;
    return false;
}

static lt_status einsum_grad(lt_ad *c, const lt_node *n, lt_ival *const *in, lt_ival *g, ein_eq *q, int k)
{
    /* k's labels, each repeat renamed to a fresh letter paired with the first */
    ein_term gk = q->t[k];
    int pair_x[LT_MAX_RANK], pair_y[LT_MAX_RANK], pair_pos[LT_MAX_RANK], np = 0;
    bool taken[NLAB];
    memcpy(taken, q->taken, sizeof taken);
    for (int i = 0; i < gk.n; i++)
        for (int j = 0; j < i; j++) {
            if (q->t[k].l[j] != q->t[k].l[i])
                continue;
            int y = 0;
            while (y < NLAB && taken[y])
                y++;
            if (y == NLAB)
                return lt_ad_fail(c, n, "too many labels to differentiate the diagonal of operand %d", k);
            taken[y] = true;
            pair_x[np] = q->t[k].l[i];
            pair_y[np] = y;
            pair_pos[np++] = j;
            gk.l[i] = y;
            break;
        }
    /* labels the gradient einsum can produce: those of the other operands,
     * dy and the identities */
    bool avail[NLAB] = {false};
    for (int t = 0; t < q->nin; t++)
        for (int i = 0; t != k && i < q->t[t].n; i++)
            avail[q->t[t].l[i]] = true;
    for (int i = 0; i < q->out.n; i++)
        avail[q->out.l[i]] = true;
    for (int p = 0; p < np; p++)
        avail[pair_x[p]] = avail[pair_y[p]] = true;
    ein_term res = {0};
    int64_t drop[LT_MAX_RANK];
    int nd = 0;
    bool expand = false;
    for (int i = 0; i < gk.n; i++) {
        if (avail[gk.l[i]])
            res.l[res.n++] = gk.l[i];
        else
            drop[nd++] = i;
        expand = expand || (avail[gk.l[i]] && !full_size(q, in, k, i, gk.l[i]));
    }
    char eq[1024];
    size_t len = 0;
    lt_ival *ins[MAX_TERMS + LT_MAX_RANK + 1];
    int ni = 0;
    bool ok = true;
    for (int t = 0; t < q->nin; t++) {
        if (t == k)
            continue;
        ok = ok && (!ni || append(eq, sizeof eq, &len, ",")) && append_term(eq, sizeof eq, &len, &q->t[t]);
        ins[ni++] = in[t];
    }
    ok = ok && (!ni || append(eq, sizeof eq, &len, ",")) && append_term(eq, sizeof eq, &len, &q->out);
    ins[ni++] = g;
    for (int p = 0; p < np; p++) {
        ein_term pt = {.n = 2, .l = {pair_x[p], pair_y[p]}};
        ok = ok && append(eq, sizeof eq, &len, ",") && append_term(eq, sizeof eq, &len, &pt);
        ins[ni++] = identity_like_axis(c, in[k], pair_pos[p]);
    }
    ok = ok && append(eq, sizeof eq, &len, "->") && append_term(eq, sizeof eq, &len, &res);
    if (!ok)
        return lt_ad_fail(c, n, "equation too long to differentiate");
    lt_node *e = lt_ad_node_of(c, LT_OP_EINSUM, ni, ins);
    if (!e)
        return LT_ERR_NOMEM;
    lt_ad_attr_str(c, e, "equation", eq);
    lt_ad_infer(c, e);
    lt_ival *r = e->out[0];
    /* labels summed by k alone: every element got the same dy, as did
     * those where the others have size 1 */
    if (nd || expand)
        r = OP2(EXPAND, lt_ad_unsqueeze(c, r, nd, drop), OP1(SHAPE, in[k]));
    return ACC(k, lt_ad_unbroadcast(c, r, in[k])); /* and where k has size 1, summed */
}

RULE(r_einsum)
{
    const char *src = lt_attr_str(n, "equation", "");
    char eq[1024];
    size_t m = 0;
    for (const char *p = src; *p; p++) {
        if (*p == ' ')
            continue;
        if (m + 1 >= sizeof eq)
            return lt_ad_fail(c, n, "equation too long to differentiate");
        eq[m++] = *p;
    }
    eq[m] = 0;
    if (n->nin > MAX_TERMS)
        return lt_ad_fail(c, n, "Einsum with %d operands (the gradient rule takes %d)", n->nin, MAX_TERMS);
    ein_eq *q = lt_ir_alloc(c->m, sizeof *q);
    if (!q)
        return LT_ERR_NOMEM;
    q->nin = n->nin;
    const char *arrow = strstr(eq, "->");
    size_t lhs = arrow ? (size_t)(arrow - eq) : m, start = 0;
    ein_term raw[MAX_TERMS], rout = {0};
    int nt = 0, count[NLAB] = {0};
    for (size_t i = 0; i <= lhs; i++) {
        if (i < lhs && eq[i] != ',')
            continue;
        if (nt >= q->nin || !parse_term(eq + start, i - start, &raw[nt]))
            return lt_ad_fail(c, n, "cannot parse equation '%s' for %d operands", src, q->nin);
        nt++;
        start = i + 1;
    }
    if (nt != q->nin || (arrow && !parse_term(arrow + 2, strlen(arrow + 2), &rout)))
        return lt_ad_fail(c, n, "cannot parse equation '%s' for %d operands", src, q->nin);
    /* the ellipsis: its size per operand needs known ranks */
    int E = 0, ell[MAX_TERMS] = {0}, fresh[LT_MAX_RANK];
    for (int t = 0; t < nt; t++) {
        for (int i = 0; i < raw[t].n; i++) {
            q->taken[raw[t].l[i]] = true;
            count[raw[t].l[i]]++;
        }
        if (!raw[t].ell)
            continue;
        int r = in[t]->type.rank;
        if (r < 0)
            return lt_ad_fail(c, n, "'...' needs known input ranks to be differentiated");
        ell[t] = r - raw[t].n;
        if (ell[t] < 0)
            return lt_ad_fail(c, n, "operand %d has rank %d, fewer than its %d labels", t, r, raw[t].n);
        if (ell[t] > E)
            E = ell[t];
    }
    for (int i = 0; i < rout.n; i++)
        q->taken[rout.l[i]] = true;
    for (int l = 0, f = 0; f < E; l++) {
        if (l == NLAB)
            return lt_ad_fail(c, n, "too many labels to spell out '...'");
        if (!q->taken[l]) {
            q->taken[l] = true;
            fresh[f++] = l;
        }
    }
    for (int t = 0; t < nt; t++)
        if (!spell_out(&raw[t], ell[t], E, fresh, &q->t[t]))
            return lt_ad_fail(c, n, "operand %d has too many dims", t);
    if (arrow) {
        if (!spell_out(&rout, E, E, fresh, &q->out))
            return lt_ad_fail(c, n, "output has too many dims");
    } else {
        /* implicit output: the ellipsis, then the letters seen once, in
         * character order (upper case first) */
        for (int e = 0; e < E; e++)
            q->out.l[q->out.n++] = fresh[e];
        for (int l = 26; l < 52 && q->out.n < LT_MAX_RANK; l++)
            if (count[l] == 1)
                q->out.l[q->out.n++] = l;
        for (int l = 0; l < 26 && q->out.n < LT_MAX_RANK; l++)
            if (count[l] == 1)
                q->out.l[q->out.n++] = l;
    }
    lt_status s = LT_OK;
    for (int k = 0; k < q->nin && s == LT_OK; k++)
        if (lt_ad_wants(c, n, k))
            s = einsum_grad(c, n, in, G, q, k);
    return s;
}

/* ---- Det ---- */
#define DET_MAX 32 /* the minors take n^2 (n-1)^2 elements per matrix */

/* x with op Gather along axis by idx */
static lt_ival *gather_axis(lt_ad *c, lt_ival *x, lt_ival *idx, int64_t axis)
{
    lt_ival *ins[2] = {x, idx};
    lt_node *k = lt_ad_node_of(c, LT_OP_GATHER, 2, ins);
    if (!k)
        return NULL;
    lt_ad_attr_int(c, k, "axis", axis);
    lt_ad_infer(c, k);
    return k->out[0];
}

RULE(r_det)
{
    lt_ival *a = in[0];
    int r = a->type.rank;
    if (r < 2 || a->type.dims[r - 1].sym >= 0 || a->type.dims[r - 1].v < 0)
        return lt_ad_fail(c, n, "Det needs a known rank and matrix size to be differentiated (there is no inverse op)");
    int64_t m = a->type.dims[r - 1].v;
    if (m == 0)
        return LT_OK; /* the determinant of a 0x0 matrix is the constant 1 */
    if (m == 1)
        return ACC(0, OP2(RESHAPE, G, OP1(SHAPE, a)));
    if (m > DET_MAX)
        return lt_ad_fail(c, n, "the gradient of Det goes through all minors and is limited to %dx%d matrices "
                                "(there is no inverse op), got %lldx%lld",
                          DET_MAX, DET_MAX, (long long)m, (long long)m);
    /* others[i] = every index but i, shape [m, m-1] */
    int64_t others[DET_MAX * (DET_MAX - 1)], sign[DET_MAX * DET_MAX], shp[2] = {m, m - 1}, sq[2] = {m, m};
    for (int64_t i = 0, w = 0; i < m; i++)
        for (int64_t j = 0; j < m; j++) {
            if (j != i)
                others[w++] = j;
            sign[i * m + j] = (i + j) % 2 ? -1 : 1;
        }
    lt_ival *idx = OP2(RESHAPE, lt_ad_ints(c, (int)(m * (m - 1)), others), lt_ad_ints(c, 2, shp));
    /* [..., i, p, col] then [..., i, p, j, q] -> [..., i, j, p, q]: the minor of (i, j) */
    lt_ival *rows = gather_axis(c, a, idx, r - 2);
    lt_ival *minors = gather_axis(c, rows, idx, r);
    int64_t perm[LT_MAX_RANK + 2];
    for (int i = 0; i < r + 2; i++)
        perm[i] = i;
    perm[r - 1] = r;
    perm[r] = r - 1;
    if (!minors)
        return LT_ERR_NOMEM;
    lt_node *t = lt_ad_node_of(c, LT_OP_TRANSPOSE, 1, &minors);
    if (!t)
        return LT_ERR_NOMEM;
    lt_ad_attr_ints(c, t, "perm", r + 2, perm);
    lt_ad_infer(c, t);
    lt_ival *sgn = lt_ad_cast(c, OP2(RESHAPE, lt_ad_ints(c, (int)(m * m), sign), lt_ad_ints(c, 2, sq)),
                                   lt_ad_float_dtype(a));
    lt_ival *cof = OP2(MUL, OP1(DET, t->out[0]), sgn);
    int64_t ax[2] = {r - 2, r - 1};
    return ACC(0, OP2(MUL, cof, lt_ad_unsqueeze(c, G, 2, ax)));
}

void lt_ad_register_linalg(lt_ad_rule *t, uint32_t *nd)
{
    (void)nd;
    t[LT_OP_EINSUM] = r_einsum;
    t[LT_OP_DET] = r_det;
}
