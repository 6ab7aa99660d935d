/* Gradient checking: the AD's gradients against central finite differences
 * of the same model evaluated in float64. */
#include "runtime.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* float32, float16 and bfloat16 tensors widen (each value exact), as
 * lt_model_to_f64 widens the model's own values of those types */
/* v, a float tensor, as a new tensor of float type dt */
static lt_value *as_float_type(const lt_value *v, lt_dtype dt)
{
    lt_value *d = lt_value_new_tensor();
    lt_err err;
    if (!d || lt_tensor_alloc(&d->t, dt, v->t.rank, v->t.dims, &err) != LT_OK) {
        free(d);
        return NULL;
    }
    for (int64_t i = 0; i < v->t.numel; i++)
        lt_tensor_set_f64(&d->t, i, lt_tensor_get_f64(&v->t, i));
    return d;
}

lt_value *lt_value_to_f64(const lt_value *v)
{
    if (!v)
        return NULL;
    lt_dtype dt = v->kind == LT_VAL_TENSOR ? v->t.dtype : LT_UNDEFINED;
    if (dt != LT_F32 && dt != LT_F16 && dt != LT_BF16)
        return lt_value_ref(v);
    return as_float_type(v, LT_F64);
}

lt_status lt_model_to_f64(lt_model *m, lt_err *err)
{
    int n = __atomic_load_n(&m->live_sessions, __ATOMIC_SEQ_CST);
    if (n > 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: lt_model_to_f64 rewrites the model, and %d session(s) of it are "
                       "live (free them first)", m->path, n);
    return lt_ir_to_f64(m, err);
}

static lt_status load_path(void *ctx, lt_model **m, lt_err *err) { return lt_model_load(ctx, m, err); }

/* v for input `name` of the model's own-type program: a float64 tensor
 * (a seed given for --f64) in the narrower float type the input has */
static lt_value *in_model_type(const lt_model *m, const char *name, lt_value *v)
{
    lt_dtype want = LT_UNDEFINED;
    for (int k = 0; name && k < m->main->nparams; k++)
        if (!strcmp(m->main->params[k]->name, name))
            want = m->main->params[k]->type.dtype;
    if (!v || v->kind != LT_VAL_TENSOR || v->t.dtype != LT_F64 || (want != LT_F32 && want != LT_F16 && want != LT_BF16))
        return lt_value_ref(v);
    return as_float_type(v, want);
}

/* Builds the model, optionally converts it to float64, builds the gradient
 * program. consts (when given) gets, per parameter, whether it is one of
 * the graph's constants (lt_ir_graph_constant), told apart on the source
 * program: the gradient program's main block is another. */
static lt_status prepare(lt_model_builder build, void *ctx, const lt_grad_opts *o, bool f64, lt_model **m,
                         lt_session **s, bool **consts, lt_err *err)
{
    lt_status st = build(ctx, m, err);
    if (st == LT_OK && f64)
        st = lt_ir_to_f64(*m, err);
    if (st == LT_OK && consts) {
        *consts = calloc((size_t)(*m)->nparams + 1, sizeof **consts);
        for (int p = 0; *consts && p < (*m)->nparams; p++)
            (*consts)[p] = lt_ir_graph_constant(*m, &(*m)->params[p]);
        if (!*consts)
            st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    if (st == LT_OK)
        st = lt_model_grad(*m, o, err);
    if (st == LT_OK)
        st = lt_session_new(*m, s, err);
    return st;
}

static double scalar(const lt_value *v) { return lt_tensor_get_f64(&v->t, 0); }

lt_status lt_grad_check(const char *path, const lt_grad_opts *o, int n, const char *const *names,
                        lt_value *const *inputs, int max_per_param, lt_gradcheck_row **rows_out, int *nrows,
                        lt_err *err)
{
    return lt_grad_check_built(load_path, (void *)path, o, n, names, inputs, max_per_param, rows_out, nrows, err);
}

lt_status lt_grad_check_built(lt_model_builder build, void *ctx, const lt_grad_opts *o, int n,
                              const char *const *names, lt_value *const *inputs, int max_per_param,
                              lt_gradcheck_row **rows_out, int *nrows, lt_err *err)
{
    lt_model *m32 = NULL, *m64 = NULL;
    lt_session *s32 = NULL, *s64 = NULL;
    lt_value **in64 = calloc(n + 1, sizeof *in64), **in32 = calloc(n + 1, sizeof *in32), **o32 = NULL, **o64 = NULL;
    lt_gradcheck_row *rows = NULL;
    bool *consts = NULL; /* per parameter of m64: a graph constant */
    lt_status st = in64 && in32 ? LT_OK : lt_errf(err, LT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n && st == LT_OK; i++)
        if (!(in64[i] = lt_value_to_f64(inputs[i])))
            st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (st == LT_OK)
        st = prepare(build, ctx, o, false, &m32, &s32, NULL, err);
    if (st == LT_OK)
        st = prepare(build, ctx, o, true, &m64, &s64, &consts, err);
    for (int i = 0; i < n && st == LT_OK; i++)
        if (inputs[i] && !(in32[i] = in_model_type(m32, names[i], inputs[i])))
            st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (st != LT_OK)
        goto done;
    int nout = lt_model_num_outputs(m64);
    o32 = calloc(nout, sizeof *o32);
    o64 = calloc(nout, sizeof *o64);
    rows = calloc(nout, sizeof *rows);
    if (!o32 || !o64 || !rows) {
        st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    if ((st = lt_session_run(s32, n, names, in32, o32, err)) != LT_OK ||
        (st = lt_session_run(s64, n, names, in64, o64, err)) != LT_OK)
        goto done;
    lt_value **tmp = calloc(nout, sizeof *tmp);
    if (!tmp) {
        st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    int nr = 0;
    uint64_t seed = 0x5eed;
    /* the largest |gradient| of any parameter: a parameter whose gradient
     * is zero in exact arithmetic (a bias before a normalization) gets
     * rounding noise from both sides, compared on this scale */
    double top = 0;
    for (int r = 1; r < nout; r++)
        for (int64_t i = 0; o64[r] && o64[r]->kind == LT_VAL_TENSOR && i < o64[r]->t.numel; i++)
            top = fmax(top, fabs(lt_tensor_get_f64(&o64[r]->t, i)));
    for (int r = 1; r < nout && st == LT_OK; r++) {
        const char *gname = lt_model_output_name(m64, r);
        size_t gl = strlen(gname);
        lt_param *p = NULL;
        for (int i = 0; i < m64->nparams && !p; i++)
            if (strlen(m64->params[i].name) + 5 == gl && !strncmp(gname, m64->params[i].name, gl - 5))
                p = &m64->params[i];
        if (!p || p->data.dtype != LT_F64)
            continue; /* gradients with respect to inputs: checked through parameters */
        lt_gradcheck_row *row = &rows[nr++];
        snprintf(row->name, sizeof row->name, "%s", p->name);
        if (p->no_grad)
            snprintf(row->no_grad, sizeof row->no_grad, "no gradient through %s", p->no_grad);
        else if (consts[p - m64->params])
            snprintf(row->no_grad, sizeof row->no_grad, "a graph constant, which train keeps fixed");
        double *d = p->data.data;
        /* an initializer fed as an input (IR 4's overridable defaults, or
         * IR 3's initializers listed as inputs) runs with the fed value:
         * that is the one to move */
        for (int j = 0; j < n; j++)
            if (names[j] && !strcmp(names[j], p->name) && in64[j] && in64[j]->kind == LT_VAL_TENSOR &&
                in64[j]->t.dtype == LT_F64 && in64[j]->t.numel == p->data.numel)
                d = in64[j]->t.data;
        int64_t cnt = p->data.numel < max_per_param ? p->data.numel : max_per_param;
        for (int64_t i = 0; i < p->data.numel; i++) {
            /* a gradient that is not finite anywhere fails, whether or not
             * the sampled entries reach it (fmax would drop a nan) */
            double g64 = lt_tensor_get_f64(&o64[r]->t, i), g32 = lt_tensor_get_f64(&o32[r]->t, i);
            row->max_grad = fmax(row->max_grad, fabs(g64));
            if (!isfinite(g64))
                row->err64 = INFINITY;
            if (!isfinite(g32))
                row->err32 = INFINITY;
        }
        for (int64_t k = 0; k < cnt && st == LT_OK; k++) {
            int64_t e = k;
            if (p->data.numel > max_per_param) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                e = (int64_t)((seed >> 33) % (uint64_t)p->data.numel);
            }
            double orig = d[e], h = 1e-6 * fmax(1.0, fabs(orig)), lp, lm;
            d[e] = orig + h;
            st = lt_session_run(s64, n, names, in64, tmp, err);
            lp = st == LT_OK ? scalar(tmp[0]) : 0;
            for (int q = 0; q < nout; q++) {
                lt_value_free(tmp[q]);
                tmp[q] = NULL;
            }
            d[e] = orig - h;
            if (st == LT_OK)
                st = lt_session_run(s64, n, names, in64, tmp, err);
            lm = st == LT_OK ? scalar(tmp[0]) : 0;
            for (int q = 0; q < nout; q++) {
                lt_value_free(tmp[q]);
                tmp[q] = NULL;
            }
            d[e] = orig;
            double fd = (lp - lm) / (2 * h);
            double a64 = lt_tensor_get_f64(&o64[r]->t, e), a32 = lt_tensor_get_f64(&o32[r]->t, e);
            /* relative to the gradient's own scale (and a millionth of the
             * largest), so that entries near zero do not turn rounding noise
             * into huge ratios */
            double floor_ = fmax(1e-3 * row->max_grad, 1e-5 * top) + 1e-12;
            double e64 = fabs(a64 - fd) / fmax(fmax(fabs(a64), fabs(fd)), floor_);
            double e32 = fabs(a32 - fd) / fmax(fmax(fabs(a32), fabs(fd)), floor_);
            row->err64 = isnan(e64) ? INFINITY : fmax(row->err64, e64);
            row->err32 = isnan(e32) ? INFINITY : fmax(row->err32, e32);
            row->checked++;
        }
    }
    free(tmp);
    *rows_out = rows;
    *nrows = nr;
    rows = NULL;
done:
    for (int i = 0; o32 && i < lt_model_num_outputs(m32); i++)
        lt_value_free(o32[i]);
    for (int i = 0; o64 && i < lt_model_num_outputs(m64); i++)
        lt_value_free(o64[i]);
    for (int i = 0; i < n; i++) {
        lt_value_free(in64 ? in64[i] : NULL);
        lt_value_free(in32 ? in32[i] : NULL);
    }
    free(in64);
    free(in32);
    free(o32);
    free(o64);
    free(consts);
    free(rows);
    lt_session_free(s32);
    lt_session_free(s64);
    lt_model_free(m32);
    lt_model_free(m64);
    return st;
}
