/* CPU kernels, elementwise family: the broadcasting iterator and the generic
 * drivers every elementwise kernel runs through, plus the family registrar.
 * The ops themselves live in elementwise_*.c. */
#include "elementwise_bcast.h"
#include <omp.h>
#include <stdio.h>

static void shape_str(const int64_t *d, int r, char *buf, size_t len)
{
    size_t o = 0;
    o += (size_t)snprintf(buf + o, len - o, "[");
    for (int i = 0; i < r && o < len; i++)
        o += (size_t)snprintf(buf + o, len - o, i ? ",%lld" : "%lld", (long long)d[i]);
    if (o < len)
        snprintf(buf + o, len - o, "]");
}

lt_status lt_ew_bcast_init(lt_kctx *k, lt_ew_bcast *bc, int nin, const lt_tensor *const *in, int rank,
                           const int64_t *dims)
{
    memset(bc, 0, sizeof *bc);
    if (nin < 1 || nin > LT_EW_MAX_IN)
        return lt_k_fail(k, LT_ERR_INTERNAL, "broadcast of %d operands", nin);
    int r = rank;
    int64_t od[LT_MAX_RANK];
    if (rank < 0) {
        r = 0;
        for (int j = 0; j < nin; j++)
            r = in[j]->rank > r ? in[j]->rank : r;
        for (int d = 0; d < r; d++)
            od[d] = 1;
    } else {
        memcpy(od, dims, sizeof *od * (size_t)r);
    }
    for (int j = 0; j < nin; j++) {
        const lt_tensor *t = in[j];
        int off = r - t->rank;
        bool ok = off >= 0;
        for (int d = 0; ok && d < t->rank; d++) {
            int64_t id = t->dims[d], *o = &od[d + off];
            if (id == *o || id == 1)
                continue;
            if (rank < 0 && *o == 1)
                *o = id;
            else
                ok = false;
        }
        if (!ok) {
            char a[160], b[160];
            shape_str(t->dims, t->rank, a, sizeof a);
            if (rank < 0) {
                shape_str(in[0]->dims, in[0]->rank, b, sizeof b);
                return lt_k_fail(k, LT_ERR_RUNTIME, "input %d of shape %s does not broadcast with input 0 of shape %s",
                                 j, a, b);
            }
            shape_str(dims, rank, b, sizeof b);
            return lt_k_fail(k, LT_ERR_RUNTIME, "input %d of shape %s does not broadcast to shape %s", j, a, b);
        }
    }
    bc->nin = nin;
    bc->out_rank = r;
    memcpy(bc->out_dims, od, sizeof *od * (size_t)r);
    bc->numel = lt_shape_numel(r, od);
    if (bc->numel < 0)
        return lt_k_fail(k, LT_ERR_RUNTIME, "broadcast output shape overflows");

    /* natural strides, 0 on broadcast dims */
    int64_t st[LT_EW_MAX_IN][LT_MAX_RANK];
    for (int j = 0; j < nin; j++) {
        const lt_tensor *t = in[j];
        int off = r - t->rank;
        int64_t s = 1;
        for (int d = r - 1; d >= 0; d--) {
            int64_t id = d >= off ? t->dims[d - off] : 1;
            st[j][d] = id == 1 ? 0 : s;
            s *= id;
        }
        bc->es[j] = lt_dtype_size(t->dtype);
    }
    /* coalesce: drop size-1 dims, merge a dim into its outer neighbour when
     * every operand's strides chain across them */
    int cr = 0;
    for (int d = 0; d < r; d++) {
        if (od[d] == 1)
            continue;
        bool merge = cr > 0;
        for (int j = 0; merge && j < nin; j++)
            merge = bc->st[j][cr - 1] == st[j][d] * od[d];
        if (merge) {
            bc->dims[cr - 1] *= od[d];
            for (int j = 0; j < nin; j++)
                bc->st[j][cr - 1] = st[j][d];
        } else {
            bc->dims[cr] = od[d];
            for (int j = 0; j < nin; j++)
                bc->st[j][cr] = st[j][d];
            cr++;
        }
    }
    if (cr == 0) {
        bc->dims[0] = 1;
        cr = 1;
    }
    bc->rank = cr;
    return LT_OK;
}

/* Output elements [s, e) in row-major order, one row call per stretch of the
 * innermost coalesced dim. */
static void run_range(const lt_ew_bcast *bc, char *out, size_t out_es, const void *const *in, lt_ew_row row,
                      const void *par, int64_t s, int64_t e)
{
    int r = bc->rank, nin = bc->nin;
    int64_t idx[LT_MAX_RANK], off[LT_EW_MAX_IN] = {0}, step[LT_EW_MAX_IN];
    const void *ptr[LT_EW_MAX_IN];
    int64_t rem = s;
    for (int d = r - 1; d >= 0; d--) {
        idx[d] = rem % bc->dims[d];
        rem /= bc->dims[d];
    }
    for (int j = 0; j < nin; j++) {
        for (int d = 0; d < r; d++)
            off[j] += idx[d] * bc->st[j][d];
        step[j] = bc->st[j][r - 1];
    }
    int64_t i = s, inner = bc->dims[r - 1];
    while (i < e) {
        int64_t len = inner - idx[r - 1];
        if (len > e - i)
            len = e - i;
        for (int j = 0; j < nin; j++)
            ptr[j] = (const char *)in[j] + off[j] * (int64_t)bc->es[j];
        row(par, len, out + i * (int64_t)out_es, ptr, step);
        i += len;
        idx[r - 1] += len;
        for (int j = 0; j < nin; j++)
            off[j] += len * step[j];
        for (int d = r - 1; d > 0 && idx[d] == bc->dims[d]; d--) {
            idx[d] = 0;
            idx[d - 1]++;
            for (int j = 0; j < nin; j++)
                off[j] += bc->st[j][d - 1] - bc->dims[d] * bc->st[j][d];
        }
    }
}

void lt_ew_bcast_run(const lt_ew_bcast *bc, void *out, size_t out_es, const void *const *in, lt_ew_row row,
                     const void *par, int64_t par_min)
{
    int64_t n = bc->numel;
    if (n == 0)
        return;
    if (n < par_min || omp_get_max_threads() == 1 || omp_in_parallel()) {
        run_range(bc, out, out_es, in, row, par, 0, n);
        return;
    }
#pragma omp parallel
    {
        int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
        /* chunks in whole cache lines so threads never share one */
        int64_t chunk = ((n + nt - 1) / nt + 63) & ~(int64_t)63;
        int64_t s = t * chunk, e = s + chunk < n ? s + chunk : n;
        if (s < e)
            run_range(bc, out, out_es, in, row, par, s, e);
    }
}

lt_status lt_ew_promote(lt_kctx *k, const lt_tensor *src, lt_dtype cd, lt_tensor *dst)
{
    *dst = *src;
    dst->dtype = cd;
    dst->buf = NULL;
    size_t bytes;
    if (__builtin_mul_overflow((size_t)src->numel, lt_dtype_size(cd), &bytes))
        return lt_k_fail(k, LT_ERR_RUNTIME, "tensor too large to convert");
    dst->data = lt_k_scratch(k, bytes);
    if (!dst->data)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory allocating %zu bytes of scratch", bytes);
    lt_ew_cast(dst->data, cd, src->data, src->dtype, src->numel);
    return LT_OK;
}

lt_dtype lt_ew_compute_dtype(const lt_ew_row *rows, lt_dtype dt, bool via_f64)
{
    if ((unsigned)dt >= LT_DTYPE_COUNT)
        return LT_UNDEFINED;
    if (rows[dt])
        return dt;
    if ((dt == LT_F16 || dt == LT_BF16) && rows[LT_F32])
        return LT_F32;
    if (via_f64 && (lt_dtype_is_int(dt) || dt == LT_BOOL) && rows[LT_F64])
        return LT_F64;
    return LT_UNDEFINED;
}

lt_status lt_ew_fail_dtype(lt_kctx *k, lt_dtype t)
{
    return lt_k_fail(k, t == LT_STRING ? LT_ERR_UNSUPPORTED : LT_ERR_INVALID, "%s is not defined for %s tensors",
                     lt_op_names[k->node->op], lt_dtype_name(t));
}

lt_status lt_ew_run(lt_kctx *k, const lt_ew_op *op, const void *par, int nin, const lt_tensor *const *in,
                    lt_dtype cd, lt_dtype odt, int rank, const int64_t *dims)
{
    lt_tensor conv[LT_EW_MAX_IN];
    const lt_tensor *use[LT_EW_MAX_IN];
    const void *ptr[LT_EW_MAX_IN];
    lt_status s;
    if (!op->rows[cd])
        return lt_ew_fail_dtype(k, cd);
    lt_ew_bcast bc;
    if ((s = lt_ew_bcast_init(k, &bc, nin, in, rank, dims)) != LT_OK)
        return s; /* before converting: a mismatch costs nothing */
    for (int j = 0; j < nin; j++) {
        use[j] = in[j];
        if (in[j]->dtype != cd) {
            if (!lt_ew_cast_supported(in[j]->dtype))
                return lt_ew_fail_dtype(k, in[j]->dtype);
            if ((s = lt_ew_promote(k, in[j], cd, &conv[j])) != LT_OK)
                return s;
            use[j] = &conv[j];
        }
        ptr[j] = use[j]->data;
        bc.es[j] = lt_dtype_size(use[j]->dtype);
    }
    /* every row reads its inputs at the index it writes: the output can
     * take the storage of a node input of its own type and shape (Pow's
     * row copies, so it does not offer) */
    int over = -1;
    for (int j = 0; j < nin && over < 0 && k->node->op != LT_OP_POW; j++) {
        if (use[j] != in[j] || in[j]->dtype != odt || in[j]->rank != bc.out_rank ||
            memcmp(in[j]->dims, bc.out_dims, sizeof *in[j]->dims * (size_t)bc.out_rank) != 0)
            continue;
        for (int x = 0; x < k->nin && over < 0; x++)
            if (lt_k_in(k, x) == in[j])
                over = x;
    }
    lt_tensor *y;
    if ((s = lt_k_out_over(k, 0, over, odt, bc.out_rank, bc.out_dims, &y)) != LT_OK)
        return s;
    lt_dtype row_out = op->out == LT_EW_OUT_BOOL ? LT_BOOL : cd;
    void *obuf = y->data;
    if (row_out != odt) {
        size_t bytes;
        obuf = __builtin_mul_overflow((size_t)bc.numel, lt_dtype_size(row_out), &bytes) ? NULL
                                                                                          : lt_k_scratch(k, bytes);
        if (!obuf)
            return lt_k_fail(k, LT_ERR_NOMEM, "out of memory allocating scratch");
    }
    lt_ew_bcast_run(&bc, obuf, lt_dtype_size(row_out), ptr, op->rows[cd], par, op->par_min);
    if (obuf != y->data)
        lt_ew_cast(y->data, odt, obuf, row_out, bc.numel);
    return LT_OK;
}

lt_status lt_ew_unary(lt_kctx *k, const lt_ew_op *op, const void *par)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "input 0 is missing");
    lt_dtype cd = lt_ew_compute_dtype(op->rows, x->dtype, op->via_f64);
    if (cd == LT_UNDEFINED)
        return lt_ew_fail_dtype(k, x->dtype);
    lt_dtype odt = op->out == LT_EW_OUT_BOOL ? LT_BOOL : x->dtype;
    return lt_ew_run(k, op, par, 1, &x, cd, odt, x->rank, x->dims);
}

lt_status lt_ew_legacy_bcast(lt_kctx *k, const lt_tensor *a, const lt_tensor **b, lt_tensor *tmp)
{
    if (k->node->opset >= 7 || !lt_attr_int(k->node, "broadcast", 0))
        return LT_OK;
    const lt_tensor *bt = *b;
    int64_t axis = lt_attr_int(k->node, "axis", a->rank - bt->rank);
    if (axis < 0)
        axis += a->rank;
    if (axis < 0 || axis > a->rank - bt->rank)
        return lt_k_fail(k, LT_ERR_RUNTIME, "broadcast axis %lld does not fit ranks %d and %d", (long long)axis,
                         a->rank, bt->rank);
    *tmp = *bt;
    tmp->rank = a->rank - (int)axis;
    for (int d = bt->rank; d < tmp->rank; d++)
        tmp->dims[d] = 1;
    *b = tmp;
    return LT_OK;
}

lt_status lt_ew_binary(lt_kctx *k, const lt_ew_op *op, const void *par)
{
    const lt_tensor *a = lt_k_in(k, 0), *b = lt_k_in(k, 1);
    if (!a || !b)
        return lt_k_fail(k, LT_ERR_INVALID, "needs two inputs");
    if (a->dtype != b->dtype)
        return lt_k_fail(k, LT_ERR_INVALID, "input types differ (%s and %s)", lt_dtype_name(a->dtype),
                         lt_dtype_name(b->dtype));
    lt_dtype cd = lt_ew_compute_dtype(op->rows, a->dtype, op->via_f64);
    if (cd == LT_UNDEFINED)
        return lt_ew_fail_dtype(k, a->dtype);
    lt_tensor bl;
    lt_status s = lt_ew_legacy_bcast(k, a, &b, &bl);
    if (s != LT_OK)
        return s;
    const lt_tensor *in[2] = {a, b};
    lt_dtype odt = op->out == LT_EW_OUT_BOOL ? LT_BOOL : a->dtype;
    return lt_ew_run(k, op, par, 2, in, cd, odt, -1, NULL);
}

void lt_cpu_register_elementwise(lt_kernel_fn *tab)
{
    lt_cpu_register_elementwise_unary(tab);
    lt_cpu_register_elementwise_act(tab);
    lt_cpu_register_elementwise_arith(tab);
    lt_cpu_register_elementwise_logic(tab);
    lt_cpu_register_elementwise_variadic(tab);
    lt_cpu_register_elementwise_cast(tab);
}
