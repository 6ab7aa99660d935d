/* Einsum: the equation is parsed into labels; each operand first loses its
 * repeated labels (diagonals, as strided views) and the labels nobody else
 * needs (summed); operands are then contracted left to right, each step a
 * permute (skipped when the layout already fits) plus one batched GEMM; a
 * last strided copy puts the labels in output order. */
#include "linalg_util.h"
#include <omp.h>
#include <string.h>

#define NLAB 60 /* a-z, A-Z, then up to 8 ellipsis dims */
#define ELL 52

enum { CT_F32, CT_F64, CT_I64 };

typedef struct ein_t {
    int n;
    int lab[NLAB];
    int64_t dim[NLAB];
    void *data; /* contiguous, compute type */
} ein_t;

/* ---- strided copy / sum: out[o] = sum_r in[off(o) + roff(r)] ---- */
#define DEF_STRIDED(NAME, T, ACC)                                                                                   \
    static void NAME(T *out, int64_t o0, int64_t o1, int nd, const int64_t *dims, const int64_t *st, int nr,         \
                     const int64_t *rdims, const int64_t *rst, int64_t rn, const T *in)                              \
    {                                                                                                                \
        int64_t idx[NLAB], ridx[NLAB], off = 0, rem = o0;                                                            \
        for (int d = nd - 1; d >= 0; d--) {                                                                          \
            idx[d] = rem % dims[d];                                                                                  \
            rem /= dims[d];                                                                                          \
            off += idx[d] * st[d];                                                                                   \
        }                                                                                                            \
        for (int64_t o = o0; o < o1; o++) {                                                                          \
            if (nr == 0) {                                                                                           \
                out[o] = in[off];                                                                                    \
            } else {                                                                                                 \
                ACC acc = 0;                                                                                         \
                int64_t roff = 0;                                                                                    \
                memset(ridx, 0, sizeof ridx[0] * nr);                                                                \
                for (int64_t r = 0; r < rn; r++) {                                                                   \
                    acc += (ACC)in[off + roff];                                                                      \
                    for (int d = nr - 1; d >= 0; d--) {                                                              \
                        roff += rst[d];                                                                              \
                        if (++ridx[d] < rdims[d])                                                                    \
                            break;                                                                                   \
                        roff -= rst[d] * rdims[d];                                                                   \
                        ridx[d] = 0;                                                                                 \
                    }                                                                                                \
                }                                                                                                    \
                out[o] = (T)acc;                                                                                     \
            }                                                                                                        \
            for (int d = nd - 1; d >= 0; d--) {                                                                      \
                off += st[d];                                                                                        \
                if (++idx[d] < dims[d])                                                                              \
                    break;                                                                                           \
                off -= st[d] * dims[d];                                                                              \
                idx[d] = 0;                                                                                          \
            }                                                                                                        \
        }                                                                                                            \
    }

DEF_STRIDED(strided_f32, float, double)
DEF_STRIDED(strided_f64, double, double)
DEF_STRIDED(strided_i64, int64_t, uint64_t)

static void strided(int ct, void *out, int nd, const int64_t *dims, const int64_t *st, int nr, const int64_t *rdims,
                    const int64_t *rst, const void *in)
{
    int64_t total = lt_shape_numel(nd, dims), rn = lt_shape_numel(nr, rdims);
    if (total <= 0)
        return;
    int nt = (double)total * (double)(rn > 1 ? rn : 1) > 32768 && !omp_in_parallel() ? omp_get_max_threads() : 1;
    if (nt > total)
        nt = (int)total;
    int64_t chunk = (total + nt - 1) / nt;
#pragma omp parallel for num_threads(nt)
    for (int c = 0; c < nt; c++) {
        int64_t o0 = c * chunk, o1 = o0 + chunk < total ? o0 + chunk : total;
        if (o0 >= o1)
            continue;
        if (ct == CT_F32)
            strided_f32(out, o0, o1, nd, dims, st, nr, rdims, rst, rn, in);
        else if (ct == CT_F64)
            strided_f64(out, o0, o1, nd, dims, st, nr, rdims, rst, rn, in);
        else
            strided_i64(out, o0, o1, nd, dims, st, nr, rdims, rst, rn, in);
    }
}

static size_t ct_size(int ct) { return ct == CT_F32 ? sizeof(float) : 8; }

/* ---- parsing ---- */
typedef struct ein_eq {
    int nops;
    int *nax;      /* per operand: rank */
    int (*axl)[LT_MAX_RANK]; /* per operand: label of each axis */
    int nout;
    int outl[NLAB];
    int64_t size[NLAB]; /* per label: its (broadcast) size, -1 unused */
} ein_eq;

static int label_of(char c)
{
    if (c >= 'a' && c <= 'z')
        return c - 'a';
    if (c >= 'A' && c <= 'Z')
        return 26 + c - 'A';
    return -1;
}

/* Parses one term into labels; ellipsis dims get ELL.. ids right-aligned
 * to E (filled in later: here they are marked -2 - position). */
static bool parse_term(const char *s, size_t len, int *labs, int *nl, bool *ell, int *ellpos)
{
    *nl = 0;
    *ell = false;
    for (size_t i = 0; i < len;) {
        if (s[i] == '.') {
            if (*ell || i + 3 > len || s[i + 1] != '.' || s[i + 2] != '.')
                return false;
            *ell = true;
            *ellpos = *nl;
            i += 3;
            continue;
        }
        int l = label_of(s[i]);
        if (l < 0 || *nl >= NLAB)
            return false;
        labs[(*nl)++] = l;
        i++;
    }
    return true;
}

static lt_status parse(lt_kctx *k, const char *eq_in, int nin, const lt_tensor *const *in, ein_eq *q)
{
    size_t n = strlen(eq_in);
    char *eq = lt_k_scratch(k, n + 1);
    q->axl = lt_k_scratch(k, sizeof *q->axl * (size_t)nin);
    q->nax = lt_k_scratch(k, sizeof *q->nax * (size_t)nin);
    if (!eq || !q->axl || !q->nax)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (eq_in[i] != ' ')
            eq[m++] = eq_in[i];
    eq[m] = 0;
    const char *arrow = strstr(eq, "->");
    size_t lhs_len = arrow ? (size_t)(arrow - eq) : m;
    q->nops = nin;
    int E = 0, ellcount[64];
    int raw[64][NLAB], rawn[64], ellpos[64];
    bool hasell[64];
    if (nin > 64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "Einsum with %d operands (at most 64)", nin);
    size_t start = 0;
    int t = 0;
    for (size_t i = 0; i <= lhs_len; i++) {
        if (i < lhs_len && eq[i] != ',')
            continue;
        if (t >= nin)
            return lt_k_fail(k, LT_ERR_INVALID, "equation '%s' has more terms than the %d inputs", eq_in, nin);
        if (!parse_term(eq + start, i - start, raw[t], &rawn[t], &hasell[t], &ellpos[t]))
            return lt_k_fail(k, LT_ERR_INVALID, "cannot parse term %d of equation '%s'", t, eq_in);
        int r = in[t]->rank;
        if (hasell[t] ? rawn[t] > r : rawn[t] != r)
            return lt_k_fail(k, LT_ERR_RUNTIME, "term %d of '%s' has %d labels but input %d has rank %d", t,
                             eq_in, rawn[t], t, r);
        ellcount[t] = hasell[t] ? r - rawn[t] : 0;
        if (ellcount[t] > E)
            E = ellcount[t];
        t++;
        start = i + 1;
    }
    if (t != nin)
        return lt_k_fail(k, LT_ERR_INVALID, "equation '%s' has %d terms for %d inputs", eq_in, t, nin);
    for (int l = 0; l < NLAB; l++)
        q->size[l] = -1;
    int total[NLAB] = {0};
    for (t = 0; t < nin; t++) {
        int a = 0;
        q->nax[t] = in[t]->rank;
        for (int j = 0; j <= rawn[t]; j++) {
            if (hasell[t] && ellpos[t] == j)
                for (int e = 0; e < ellcount[t]; e++)
                    q->axl[t][a++] = ELL + E - ellcount[t] + e;
            if (j < rawn[t])
                q->axl[t][a++] = raw[t][j];
        }
        for (a = 0; a < q->nax[t]; a++) {
            int l = q->axl[t][a];
            int64_t d = in[t]->dims[a];
            total[l]++;
            if (q->size[l] < 0 || q->size[l] == 1)
                q->size[l] = d;
            else if (d != q->size[l] && d != 1)
                return lt_k_fail(k, LT_ERR_RUNTIME, "equation '%s': a label has sizes %lld and %lld", eq_in,
                                 (long long)q->size[l], (long long)d);
        }
    }
    q->nout = 0;
    if (arrow) {
        int labs[NLAB], nl, pos = 0;
        bool ell;
        if (!parse_term(arrow + 2, strlen(arrow + 2), labs, &nl, &ell, &pos))
            return lt_k_fail(k, LT_ERR_INVALID, "cannot parse the output of equation '%s'", eq_in);
        bool seen[NLAB] = {false};
        for (int j = 0; j <= nl; j++) {
            if (ell && pos == j)
                for (int e = 0; e < E; e++)
                    q->outl[q->nout++] = ELL + e;
            if (j == nl)
                break;
            if (!total[labs[j]] || seen[labs[j]])
                return lt_k_fail(k, LT_ERR_INVALID, "output label %d of '%s' is unknown or repeated", j, eq_in);
            seen[labs[j]] = true;
            q->outl[q->nout++] = labs[j];
        }
    } else {
        for (int e = 0; e < E; e++)
            q->outl[q->nout++] = ELL + e;
        /* letters seen exactly once, in character order (upper case first) */
        for (int l = 26; l < 52; l++)
            if (total[l] == 1)
                q->outl[q->nout++] = l;
        for (int l = 0; l < 26; l++)
            if (total[l] == 1)
                q->outl[q->nout++] = l;
    }
    if (q->nout > LT_MAX_RANK)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "output rank %d exceeds %d", q->nout, LT_MAX_RANK);
    return LT_OK;
}

/* ---- evaluation ---- */
static int find(const ein_t *x, int l)
{
    for (int i = 0; i < x->n; i++)
        if (x->lab[i] == l)
            return i;
    return -1;
}

static void contiguous_strides(int n, const int64_t *dims, int64_t *st)
{
    int64_t s = 1;
    for (int i = n - 1; i >= 0; i--) {
        st[i] = s;
        s *= dims[i];
    }
}

/* Makes an operand with the labels `want` (sizes wsz) in that order from x:
 * missing sizes broadcast (stride 0), labels of x not in want are summed. */
static lt_status reshape_op(lt_kctx *k, int ct, const ein_t *x, int nw, const int *want, const int64_t *wsz,
                            ein_t *out)
{
    int64_t xst[NLAB], st[NLAB], rd[NLAB], rs[NLAB];
    int nr = 0;
    contiguous_strides(x->n, x->dim, xst);
    for (int i = 0; i < nw; i++) {
        int a = find(x, want[i]);
        st[i] = a < 0 || x->dim[a] == 1 ? 0 : xst[a];
        out->lab[i] = want[i];
        out->dim[i] = wsz[i];
    }
    for (int a = 0; a < x->n; a++) {
        bool kept = false;
        for (int i = 0; i < nw; i++)
            kept |= want[i] == x->lab[a];
        if (!kept) {
            rd[nr] = x->dim[a];
            rs[nr++] = xst[a];
        }
    }
    out->n = nw;
    int64_t total = lt_shape_numel(nw, wsz);
    if (total < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "intermediate shape overflows");
    out->data = lt_k_scratch(k, (size_t)total * ct_size(ct));
    if (!out->data)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    strided(ct, out->data, nw, wsz, st, nr, rd, rs, x->data);
    return LT_OK;
}

/* Whether x's labels are exactly the concatenation of the groups, with the
 * full sizes (no broadcasting needed). */
static bool layout_is(const ein_t *x, const int *const *g, const int *gn, int ng, const int64_t *size)
{
    int a = 0;
    for (int i = 0; i < ng; i++)
        for (int j = 0; j < gn[i]; j++, a++)
            if (a >= x->n || x->lab[a] != g[i][j] || x->dim[a] != size[g[i][j]])
                return false;
    return a == x->n;
}

static void imm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, const int64_t *A, const int64_t *B, int64_t *C,
                int64_t nb)
{
#pragma omp parallel for if (nb * M * N * K > 32768)
    for (int64_t b = 0; b < nb; b++)
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                uint64_t acc = 0;
                for (int64_t x = 0; x < K; x++)
                    acc += (uint64_t)A[b * M * K + (ta ? x * M + i : i * K + x)] *
                           (uint64_t)B[b * K * N + (tb ? j * K + x : x * N + j)];
                C[(b * M + i) * N + j] = (int64_t)acc;
            }
}

/* Contracts x with y keeping the labels marked in keep. When the result
 * comes out with exactly the labels final[0..nfinal) in that order, it is
 * written straight into dst (the output) instead of scratch. */
static lt_status contract(lt_kctx *k, int ct, const ein_t *x, const ein_t *y, const bool *keep, const int *final,
                          int nfinal, void *dst, ein_t *out)
{
    int bat[NLAB], lef[NLAB], con[NLAB], rig[NLAB], nb = 0, nl = 0, nc = 0, nr = 0;
    int64_t size[NLAB];
    for (int i = 0; i < x->n; i++) {
        int l = x->lab[i], j = find(y, l);
        size[l] = j >= 0 && y->dim[j] > x->dim[i] ? y->dim[j] : x->dim[i];
        if (j < 0)
            lef[nl++] = l;
        else if (keep[l])
            bat[nb++] = l;
        else
            con[nc++] = l;
    }
    for (int j = 0; j < y->n; j++)
        if (find(x, y->lab[j]) < 0) {
            rig[nr++] = y->lab[j];
            size[y->lab[j]] = y->dim[j];
        }
    /* batch and contracted orders follow x unless x must be copied anyway */
    const int *gx1[3] = {bat, lef, con}, *gx2[3] = {bat, con, lef};
    int nx1[3] = {nb, nl, nc}, nx2[3] = {nb, nc, nl};
    bool x_ok = layout_is(x, gx1, nx1, 3, size) || layout_is(x, gx2, nx2, 3, size);
    if (!x_ok) {
        int ob = 0, oc = 0;
        for (int j = 0; j < y->n; j++) {
            int l = y->lab[j], i = find(x, l);
            if (i < 0)
                continue;
            if (keep[l])
                bat[ob++] = l;
            else
                con[oc++] = l;
        }
    }
    int64_t B = 1, M = 1, K = 1, N = 1;
    int64_t wsz[NLAB];
    for (int i = 0; i < nb; i++)
        B *= size[bat[i]];
    for (int i = 0; i < nl; i++)
        M *= size[lef[i]];
    for (int i = 0; i < nc; i++)
        K *= size[con[i]];
    for (int i = 0; i < nr; i++)
        N *= size[rig[i]];
    bool ta = false, tb = false;
    ein_t xa = *x, yb = *y;
    if (layout_is(x, gx1, nx1, 3, size)) {
        ta = false;
    } else if (layout_is(x, gx2, nx2, 3, size)) {
        ta = true;
    } else {
        int w[NLAB], n = 0;
        for (int i = 0; i < nb; i++)
            w[n++] = bat[i];
        for (int i = 0; i < nl; i++)
            w[n++] = lef[i];
        for (int i = 0; i < nc; i++)
            w[n++] = con[i];
        for (int i = 0; i < n; i++)
            wsz[i] = size[w[i]];
        lt_status s = reshape_op(k, ct, x, n, w, wsz, &xa);
        if (s != LT_OK)
            return s;
    }
    const int *gy1[3] = {bat, con, rig}, *gy2[3] = {bat, rig, con};
    int ny1[3] = {nb, nc, nr}, ny2[3] = {nb, nr, nc};
    if (layout_is(y, gy1, ny1, 3, size)) {
        tb = false;
    } else if (layout_is(y, gy2, ny2, 3, size)) {
        tb = true;
    } else {
        int w[NLAB], n = 0;
        for (int i = 0; i < nb; i++)
            w[n++] = bat[i];
        for (int i = 0; i < nc; i++)
            w[n++] = con[i];
        for (int i = 0; i < nr; i++)
            w[n++] = rig[i];
        for (int i = 0; i < n; i++)
            wsz[i] = size[w[i]];
        lt_status s = reshape_op(k, ct, y, n, w, wsz, &yb);
        if (s != LT_OK)
            return s;
    }
    out->n = 0;
    for (int i = 0; i < nb; i++)
        out->lab[out->n++] = bat[i];
    for (int i = 0; i < nl; i++)
        out->lab[out->n++] = lef[i];
    for (int i = 0; i < nr; i++)
        out->lab[out->n++] = rig[i];
    for (int i = 0; i < out->n; i++)
        out->dim[i] = size[out->lab[i]];
    int64_t total = lt_shape_numel(out->n, out->dim);
    if (total < 0 || lt_shape_numel(4, (int64_t[]){B, M, K, N}) < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "intermediate shape overflows");
    bool is_final = dst && out->n == nfinal;
    for (int i = 0; is_final && i < nfinal; i++)
        is_final = out->lab[i] == final[i];
    out->data = is_final ? dst : lt_k_scratch(k, (size_t)total * ct_size(ct));
    if (!out->data)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    if (total == 0)
        return LT_OK;
    if (ct == CT_I64) {
        imm(ta, tb, M, N, K, xa.data, yb.data, out->data, B);
        return LT_OK;
    }
    if (!lt_linalg_blas_ok(M, N, K))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "matrix sizes exceed BLAS's int range");
    int64_t *off = lt_k_scratch(k, sizeof *off * 3 * (size_t)B);
    if (!off)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < B; i++) {
        off[i] = i * M * K;
        off[B + i] = i * K * N;
        off[2 * B + i] = i * M * N;
    }
    lt_linalg_gemm_batched(ct == CT_F32 ? LT_F32 : LT_F64, ta, tb, M, N, K, 1.0, xa.data, ta ? M : K, off,
                           yb.data, tb ? K : N, off + B, 0.0, out->data, N, off + 2 * B, B);
    return LT_OK;
}

/* Operand i in compute type, repeated labels folded into diagonals and the
 * labels that no other operand nor the output uses summed away. */
static lt_status prepare(lt_kctx *k, int ct, const ein_eq *q, int i, const lt_tensor *t, const int *opcount,
                         const bool *in_out, ein_t *out)
{
    void *data = t->data;
    bool same = (ct == CT_F32 && t->dtype == LT_F32) || (ct == CT_F64 && t->dtype == LT_F64) ||
                (ct == CT_I64 && t->dtype == LT_I64);
    if (!same) {
        if (ct == CT_F32) {
            data = (void *)lt_linalg_as_f32(k, t);
        } else if (ct == CT_F64) {
            data = (void *)lt_linalg_as_f64(k, t);
        } else {
            int64_t *d = lt_k_scratch(k, sizeof *d * (size_t)t->numel);
            for (int64_t j = 0; d && j < t->numel; j++)
                d[j] = lt_tensor_get_i64(t, j);
            data = d;
        }
        if (!data)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    }
    /* the raw operand: one entry per axis (labels may repeat) */
    int n = q->nax[i];
    int64_t st[LT_MAX_RANK];
    contiguous_strides(n, t->dims, st);
    int uniq[LT_MAX_RANK], nu = 0;
    int64_t ust[LT_MAX_RANK], ud[LT_MAX_RANK];
    bool repeated = false;
    for (int a = 0; a < n; a++) {
        int l = q->axl[i][a], u;
        for (u = 0; u < nu && uniq[u] != l; u++)
            ;
        if (u == nu) {
            uniq[nu] = l;
            ud[nu] = t->dims[a];
            ust[nu++] = 0;
        } else {
            repeated = true;
            if (t->dims[a] != ud[u])
                return lt_k_fail(k, LT_ERR_RUNTIME, "repeated label in term %d has sizes %lld and %lld", i,
                                 (long long)ud[u], (long long)t->dims[a]);
        }
        ust[u] += st[a];
    }
    int keepl[LT_MAX_RANK], nk = 0, nr = 0;
    int64_t kd[LT_MAX_RANK], ks[LT_MAX_RANK], rd[LT_MAX_RANK], rs[LT_MAX_RANK];
    for (int u = 0; u < nu; u++) {
        if (in_out[uniq[u]] || opcount[uniq[u]] > 1) {
            keepl[nk] = uniq[u];
            kd[nk] = ud[u];
            ks[nk++] = ust[u];
        } else {
            rd[nr] = ud[u];
            rs[nr++] = ust[u];
        }
    }
    out->n = nk;
    for (int j = 0; j < nk; j++) {
        out->lab[j] = keepl[j];
        out->dim[j] = kd[j];
    }
    if (!repeated && nr == 0) {
        out->data = data;
        return LT_OK;
    }
    int64_t total = lt_shape_numel(nk, kd);
    out->data = lt_k_scratch(k, (size_t)(total > 0 ? total : 1) * ct_size(ct));
    if (!out->data)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    strided(ct, out->data, nk, kd, ks, nr, rd, rs, data);
    return LT_OK;
}

static lt_status einsum(lt_kctx *k)
{
    int nin = k->nin;
    const char *eqs = lt_attr_str(k->node, "equation", NULL);
    if (!eqs)
        return lt_k_fail(k, LT_ERR_INVALID, "Einsum needs an 'equation' attribute");
    if (nin < 1)
        return lt_k_fail(k, LT_ERR_INVALID, "Einsum needs at least one input");
    const lt_tensor **in = lt_k_scratch(k, sizeof *in * (size_t)nin);
    if (!in)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < nin; i++) {
        in[i] = lt_k_in(k, i);
        if (!in[i])
            return lt_k_fail(k, LT_ERR_INVALID, "input %d is missing", i);
        if (in[i]->dtype != in[0]->dtype)
            return lt_k_fail(k, LT_ERR_INVALID, "input types differ");
    }
    lt_dtype dt = in[0]->dtype;
    int ct;
    if (dt == LT_F32 || dt == LT_F16 || dt == LT_BF16)
        ct = CT_F32;
    else if (dt == LT_F64)
        ct = CT_F64;
    else if (lt_dtype_is_int(dt))
        ct = CT_I64;
    else
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "Einsum of %s is not supported", lt_dtype_name(dt));
    ein_eq q;
    lt_status s = parse(k, eqs, nin, in, &q);
    if (s != LT_OK)
        return s;
    int64_t od[LT_MAX_RANK];
    for (int i = 0; i < q.nout; i++)
        od[i] = q.size[q.outl[i]];
    lt_tensor *Y;
    s = lt_k_out(k, 0, dt, q.nout, od, &Y);
    if (s != LT_OK || Y->numel == 0)
        return s;

    bool in_out[NLAB] = {false};
    for (int i = 0; i < q.nout; i++)
        in_out[q.outl[i]] = true;
    int opcount[NLAB] = {0};
    for (int i = 0; i < nin; i++) {
        bool seen[NLAB] = {false};
        for (int a = 0; a < q.nax[i]; a++)
            if (!seen[q.axl[i][a]]) {
                seen[q.axl[i][a]] = true;
                opcount[q.axl[i][a]]++;
            }
    }
    bool direct = (ct == CT_F32 && dt == LT_F32) || (ct == CT_F64 && dt == LT_F64) || (ct == CT_I64 && dt == LT_I64);
    ein_t fin, cur;
    fin.data = direct ? Y->data : lt_k_scratch(k, (size_t)Y->numel * ct_size(ct));
    if (!fin.data)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    s = prepare(k, ct, &q, 0, in[0], opcount, in_out, &cur);
    for (int i = 1; i < nin && s == LT_OK; i++) {
        ein_t op, res;
        s = prepare(k, ct, &q, i, in[i], opcount, in_out, &op);
        if (s != LT_OK)
            break;
        /* keep what the output or a later operand still needs */
        bool keep[NLAB];
        for (int l = 0; l < NLAB; l++)
            keep[l] = in_out[l];
        for (int j = i + 1; j < nin; j++)
            for (int a = 0; a < q.nax[j]; a++)
                keep[q.axl[j][a]] = true;
        s = contract(k, ct, &cur, &op, keep, q.outl, q.nout, i == nin - 1 ? fin.data : NULL, &res);
        cur = res;
    }
    if (s != LT_OK)
        return s;
    int64_t xst[NLAB], st[NLAB], rd[NLAB], rs[NLAB];
    int nr = 0;
    contiguous_strides(cur.n, cur.dim, xst);
    for (int i = 0; i < q.nout; i++) {
        int a = find(&cur, q.outl[i]);
        st[i] = a < 0 || cur.dim[a] == 1 ? 0 : xst[a];
    }
    for (int a = 0; a < cur.n; a++)
        if (!in_out[cur.lab[a]]) {
            rd[nr] = cur.dim[a];
            rs[nr++] = xst[a];
        }
    /* output order; anything else still there is summed */
    if (cur.data != fin.data)
        strided(ct, fin.data, q.nout, od, st, nr, rd, rs, cur.data);
    if (!direct)
        for (int64_t i = 0; i < Y->numel; i++) {
            if (ct == CT_I64)
                lt_tensor_set_i64(Y, i, ((int64_t *)fin.data)[i]);
            else if (ct == CT_F32)
                lt_tensor_set_f64(Y, i, ((float *)fin.data)[i]);
            else
                lt_tensor_set_f64(Y, i, ((double *)fin.data)[i]);
        }
    return LT_OK;
}

void lt_linalg_register_einsum(lt_kernel_fn *tab)
{
    tab[LT_OP_EINSUM] = einsum;
}
