/* The optimizer step on a backend (the optim_update, sum_squares and
 * accumulate hooks of runtime/backend.h) against the host's: every
 * optimizer with weight decay and a gradient scale, float32 and float64,
 * five steps on random non-zero parameters and gradients of an odd size
 * (tails), parameters and state read back from the backend. tol 0: bit for
 * bit. Included by tests/unit/test_optim_device.c (cpu-device) and
 * tests/cuda/test_cuda_optim.c. */
#ifndef LT_OPTIM_BACKEND_CHECK_H
#define LT_OPTIM_BACKEND_CHECK_H

#include "runtime/backend.h"
#include "testutil.h"
#include "train/optim.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* A copy of host tensor h in be's memory. */
static void obc_upload(const lt_backend *be, const lt_tensor *h, lt_tensor *d)
{
    lt_err err;
    assert_int_equal(lt_tensor_alloc_on(d, be, h->dtype, h->rank, h->dims, &err), LT_OK);
    assert_int_equal(be->upload(be, d->buf, h->data, lt_tensor_nbytes(h), &err), LT_OK);
}

static double obc_get(const void *p, lt_dtype dt, int64_t i)
{
    return dt == LT_F32 ? (double)((const float *)p)[i] : ((const double *)p)[i];
}

/* |got - want| <= tol * (1 + |want|) everywhere, or bit for bit at tol 0. */
static void obc_compare(const char *what, const void *got, const void *want, lt_dtype dt, int64_t n, double tol,
                        int kind)
{
    if (tol == 0) {
        if (memcmp(got, want, (size_t)n * lt_dtype_size(dt)) != 0)
            for (int64_t i = 0; i < n; i++)
                if (obc_get(got, dt, i) != obc_get(want, dt, i))
                    fail_msg("optimizer %d (%s): %s[%lld] is %.17g on the backend, %.17g on the host", kind,
                             lt_dtype_name(dt), what, (long long)i, obc_get(got, dt, i), obc_get(want, dt, i));
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        double a = obc_get(got, dt, i), b = obc_get(want, dt, i);
        if (!(fabs(a - b) <= tol * (1 + fabs(b))))
            fail_msg("optimizer %d (%s): %s[%lld] is %.9g on the backend, %.9g on the host", kind, lt_dtype_name(dt),
                     what, (long long)i, a, b);
    }
}

static void optim_backend_check(const lt_backend *be, double tol)
{
    static const lt_optim_kind kinds[] = {LT_OPTIM_SGD,     LT_OPTIM_MOMENTUM, LT_OPTIM_NESTEROV,
                                          LT_OPTIM_ADAGRAD, LT_OPTIM_ADAM,     LT_OPTIM_ADAMW};
    static const lt_dtype dts[] = {LT_F32, LT_F64};
    const int64_t dims[2][2] = {{37, 29}, {1, 5}}; /* two tensors: one with a tail, one tiny */
    lt_err err;
    for (size_t d = 0; d < 2; d++)
        for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
            lt_dtype dt = dts[d];
            lt_value *hp[2], *dp_host[2];
            lt_tensor dpar[2], dgrad[2];
            for (int i = 0; i < 2; i++) {
                hp[i] = tu_rand(dt, 2, dims[i], -1, 1, 100 + (uint64_t)i + 10 * k);
                dp_host[i] = tu_rand(dt, 2, dims[i], -1, 1, 100 + (uint64_t)i + 10 * k);
                obc_upload(be, &dp_host[i]->t, &dpar[i]);
            }
            lt_optim_opts o;
            lt_optim_defaults(kinds[k], &o);
            o.weight_decay = 0.03;
            o.momentum = 0.8;
            lt_optim *ho, *dop;
            const lt_tensor *hpt[2] = {&hp[0]->t, &hp[1]->t};
            assert_int_equal(lt_optim_new(&o, 2, hpt, &ho, &err), LT_OK);
            assert_int_equal(lt_optim_new(&o, 2, hpt, &dop, &err), LT_OK);
            assert_int_equal(lt_optim_to_backend(dop, be, &err), LT_OK);
            for (int s = 0; s < 5; s++) {
                lt_value *g[2];
                const lt_tensor *hg[2], *dg[2];
                for (int i = 0; i < 2; i++) {
                    g[i] = tu_rand(dt, 2, dims[i], -2, 2, 1000 + (uint64_t)s * 7 + (uint64_t)i + 100 * k);
                    obc_upload(be, &g[i]->t, &dgrad[i]);
                    hg[i] = &g[i]->t;
                    dg[i] = &dgrad[i];
                }
                /* the norm the trainer clips with */
                double hn = lt_grad_global_norm(2, hg), dn = 0;
                assert_int_equal(lt_grad_global_norm_on(be, 2, dg, &dn, &err), LT_OK);
                if (!(fabs(hn - dn) <= 1e-9 * hn))
                    fail_msg("gradient norm %.17g on the backend, %.17g on the host", dn, hn);
                double scale = 0.5 + 0.1 * s, lr = 0.05 / (1 + s);
                lt_tensor *hpp[2] = {&hp[0]->t, &hp[1]->t}, *dpp[2] = {&dpar[0], &dpar[1]};
                assert_int_equal(lt_optim_step(ho, lr, scale, hpp, hg, &err), LT_OK);
                assert_int_equal(lt_optim_step(dop, lr, scale, dpp, dg, &err), LT_OK);
                for (int i = 0; i < 2; i++) {
                    lt_value_free(g[i]);
                    lt_tensor_release(&dgrad[i]);
                }
            }
            /* host parameters given to a backend optimizer are refused */
            lt_tensor *hpp[2] = {&hp[0]->t, &hp[1]->t};
            const lt_tensor *hg2[2] = {&hp[0]->t, &hp[1]->t};
            assert_int_equal(lt_optim_step(dop, 0.1, 1, hpp, hg2, &err), LT_ERR_INTERNAL);
            assert_non_null(strstr(err.msg, "not in"));
            /* parameters and state back from the backend */
            assert_int_equal(lt_optim_pull(dop, &err), LT_OK);
            for (int i = 0; i < 2; i++) {
                size_t bytes = lt_tensor_nbytes(&hp[i]->t);
                void *back = malloc(bytes);
                assert_non_null(back);
                assert_int_equal(be->download(be, back, dpar[i].buf, bytes, &err), LT_OK);
                obc_compare("parameter", back, hp[i]->t.data, dt, hp[i]->t.numel, tol, (int)kinds[k]);
                if (ho->s1[i])
                    obc_compare("state 1", dop->s1[i], ho->s1[i], dt, hp[i]->t.numel, tol, (int)kinds[k]);
                if (ho->s2[i])
                    obc_compare("state 2", dop->s2[i], ho->s2[i], dt, hp[i]->t.numel, tol, (int)kinds[k]);
                free(back);
                lt_tensor_release(&dpar[i]);
                lt_value_free(hp[i]);
                lt_value_free(dp_host[i]);
            }
            lt_optim_free(ho);
            lt_optim_free(dop);
        }
    /* accumulate: zero, then two sums */
    for (size_t d = 0; d < 2; d++) {
        const int64_t n1[1] = {1001};
        lt_value *a = tu_rand(dts[d], 1, n1, -1, 1, 7), *b = tu_rand(dts[d], 1, n1, -1, 1, 8);
        lt_tensor acc, da, db;
        assert_int_equal(lt_tensor_alloc_on(&acc, be, dts[d], 1, n1, &err), LT_OK);
        obc_upload(be, &a->t, &da);
        obc_upload(be, &b->t, &db);
        assert_int_equal(be->accumulate(be, &acc, NULL, &err), LT_OK);
        assert_int_equal(be->accumulate(be, &acc, &da, &err), LT_OK);
        assert_int_equal(be->accumulate(be, &acc, &db, &err), LT_OK);
        size_t bytes = lt_tensor_nbytes(&acc);
        void *back = malloc(bytes), *want = malloc(bytes);
        assert_non_null(back);
        assert_non_null(want);
        assert_int_equal(be->download(be, back, acc.buf, bytes, &err), LT_OK);
        for (int64_t i = 0; i < n1[0]; i++) {
            if (dts[d] == LT_F32)
                ((float *)want)[i] = 0.0f + ((const float *)a->t.data)[i] + ((const float *)b->t.data)[i];
            else
                ((double *)want)[i] = 0.0 + ((const double *)a->t.data)[i] + ((const double *)b->t.data)[i];
        }
        obc_compare("accumulated", back, want, dts[d], n1[0], 0, -1);
        free(back);
        free(want);
        lt_tensor_release(&acc);
        lt_tensor_release(&da);
        lt_tensor_release(&db);
        lt_value_free(a);
        lt_value_free(b);
    }
}

#endif
