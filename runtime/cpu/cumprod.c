/* CPU kernels: CumProd (opset 26) and its gradient
 *   CumProdGrad (dy, x, axis) -> dx.
 * The gradient uses no division, so zeros in x are exact: along a line in
 * the order of the products (reversed with reverse=1), with E_k the
 * product of the entries before k,
 *   inclusive: dx_k = E_k R_k, R_k = dy_k + x_{k+1} R_{k+1}  (R_last = dy_last)
 *   exclusive: dx_k = E_k R_k, R_k = dy_{k+1} + x_{k+1} R_{k+1} (R_last = 0).
 * Floats run in double, integers in 64-bit with wrap-around. */
#include "norm_util.h"
#include <string.h>

typedef struct cp_line {
    int64_t outer, n, inner;
    bool excl, rev;
} cp_line;

static lt_status cp_setup(lt_kctx *k, cp_line *l, const lt_tensor *x, const lt_tensor *at)
{
    if (!at || !lt_dtype_is_int(at->dtype) || at->numel != 1 || at->rank > 1)
        return lt_k_fail(k, LT_ERR_INVALID, "axis must be an integer scalar");
    int64_t axis = lt_tensor_get_i64(at, 0);
    if (axis < -x->rank || axis >= x->rank || x->rank == 0)
        return lt_k_fail(k, LT_ERR_INVALID, "axis %lld is out of range for rank %d", (long long)axis, x->rank);
    int a = (int)(axis < 0 ? axis + x->rank : axis);
    l->outer = lt_shape_numel(a, x->dims);
    l->n = x->dims[a];
    l->inner = lt_shape_numel(x->rank - a - 1, x->dims + a + 1);
    l->excl = lt_attr_int(k->node, "exclusive", 0) != 0;
    l->rev = lt_attr_int(k->node, "reverse", 0) != 0;
    return LT_OK;
}

/* element t of a line (in product order) */
static int64_t at_(const cp_line *l, int64_t o, int64_t i, int64_t t)
{
    int64_t p = l->rev ? l->n - 1 - t : t;
    return (o * l->n + p) * l->inner + i;
}

static lt_status cumprod(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0);
    if (!x)
        return lt_k_fail(k, LT_ERR_INVALID, "needs x and axis");
    bool fl = lt_dtype_is_float(x->dtype);
    if (!fl && !lt_dtype_is_int(x->dtype))
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s is not supported", lt_dtype_name(x->dtype));
    cp_line l;
    lt_status st = cp_setup(k, &l, x, lt_k_in(k, 1));
    lt_tensor *y;
    if (st == LT_OK)
        st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &y);
    if (st != LT_OK || x->numel == 0)
        return st;
    if (fl) {
        const double *xv = lt_nu_as_f64(k, x);
        double *yv = xv ? lt_nu_scratch(k, x->numel, sizeof *yv) : NULL;
        if (!yv)
            return LT_ERR_RUNTIME;
        for (int64_t o = 0; o < l.outer; o++)
            for (int64_t i = 0; i < l.inner; i++) {
                double p = 1;
                for (int64_t t = 0; t < l.n; t++) {
                    int64_t e = at_(&l, o, i, t);
                    if (!l.excl)
                        p *= xv[e];
                    yv[e] = p;
                    if (l.excl)
                        p *= xv[e];
                }
            }
        lt_nu_store_f64(y, yv);
    } else {
        for (int64_t o = 0; o < l.outer; o++)
            for (int64_t i = 0; i < l.inner; i++) {
                uint64_t p = 1;
                for (int64_t t = 0; t < l.n; t++) {
                    int64_t e = at_(&l, o, i, t);
                    uint64_t v = (uint64_t)lt_tensor_get_i64(x, e);
                    if (!l.excl)
                        p *= v;
                    lt_tensor_set_i64(y, e, (int64_t)p);
                    if (l.excl)
                        p *= v;
                }
            }
    }
    return LT_OK;
}

static lt_status cumprod_grad(lt_kctx *k)
{
    const lt_tensor *dyt = lt_k_in(k, 0), *x = lt_k_in(k, 1);
    if (!dyt || !x || dyt->numel != x->numel || !lt_dtype_is_float(x->dtype))
        return lt_k_fail(k, LT_ERR_INVALID, "needs dy and a float x of one shape");
    cp_line l;
    lt_status st = cp_setup(k, &l, x, lt_k_in(k, 2));
    lt_tensor *dx;
    if (st == LT_OK)
        st = lt_k_out(k, 0, x->dtype, x->rank, x->dims, &dx);
    if (st != LT_OK || x->numel == 0)
        return st;
    const double *xv = lt_nu_as_f64(k, x), *dy = xv ? lt_nu_as_f64(k, dyt) : NULL;
    double *g = dy ? lt_nu_scratch(k, x->numel, sizeof *g) : NULL;
    if (!g)
        return LT_ERR_RUNTIME;
    for (int64_t o = 0; o < l.outer; o++)
        for (int64_t i = 0; i < l.inner; i++) {
            /* R from the end of the line, held in g; then E from the start */
            double r = 0;
            for (int64_t t = l.n - 1; t >= 0; t--) {
                int64_t e = at_(&l, o, i, t);
                if (t == l.n - 1) {
                    r = l.excl ? 0 : dy[e];
                } else {
                    int64_t e1 = at_(&l, o, i, t + 1);
                    r = (l.excl ? dy[e1] : dy[e]) + xv[e1] * r;
                }
                g[e] = r;
            }
            double p = 1;
            for (int64_t t = 0; t < l.n; t++) {
                int64_t e = at_(&l, o, i, t);
                g[e] *= p;
                p *= xv[e];
            }
        }
    lt_nu_store_f64(dx, g);
    return LT_OK;
}

void lt_cpu_register_cumprod(lt_kernel_fn *tab)
{
    tab[LT_OP_CUM_PROD] = cumprod;
    tab[LT_OP_CUM_PROD_GRAD] = cumprod_grad;
}
