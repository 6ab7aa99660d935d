/* The host's optimizer step (runtime/cpu/optim_update.c) element by
 * element against the formulas written out here in float32 and float64,
 * for every optimizer, with weight decay, a gradient scale and sizes that
 * end inside a vector (1, 15, 16, 17, 1000) and that go through the
 * threaded loop (70001). The vector loop must give the scalar formulas'
 * bits exactly: the same operations in the same order, each rounded. */
#include "testutil.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static float randf(uint64_t *s, float lo, float hi)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return lo + (hi - lo) * (float)((*s >> 40) * 0x1.0p-24);
}

/* one element, as the formulas read (float, no fused multiply-adds: this
 * file is built for the baseline ISA) */
static void ref_f32(const lt_optim_update *c, float *p, float gr, float *s1, float *s2)
{
    const float lr = (float)c->lr, scale = (float)c->scale, mu = (float)c->mu, b1 = (float)c->b1,
                b2 = (float)c->b2, eps = (float)c->eps, step = (float)c->adam_step, ibc2 = (float)c->inv_sqrt_bc2,
                decay = (float)c->decay, ob1 = (float)c->one_b1, ob2 = (float)c->one_b2;
    const float wd = c->kind == LT_OPTIM_ADAMW ? 0.0f : (float)c->wd;
    if (c->kind == LT_OPTIM_ADAM || c->kind == LT_OPTIM_ADAMW)
        *p *= decay;
    float g = gr * scale + wd * *p;
    switch (c->kind) {
    case LT_OPTIM_SGD:
        *p -= lr * g;
        break;
    case LT_OPTIM_MOMENTUM:
        *s1 = mu * *s1 + g;
        *p -= lr * *s1;
        break;
    case LT_OPTIM_NESTEROV:
        *s1 = mu * *s1 + g;
        *p -= lr * (g + mu * *s1);
        break;
    case LT_OPTIM_ADAGRAD:
        *s1 += g * g;
        *p -= lr * g / (sqrtf(*s1) + eps);
        break;
    default:
        *s1 = b1 * *s1 + ob1 * g;
        *s2 = b2 * *s2 + ob2 * g * g;
        *p -= step * *s1 / (sqrtf(*s2) * ibc2 + eps);
        break;
    }
}

static void run_kind(lt_optim_kind kind, int64_t n)
{
    uint64_t seed = 77 + (uint64_t)kind * 1000 + (uint64_t)n;
    float *p = malloc(sizeof(float) * (size_t)n), *g = malloc(sizeof(float) * (size_t)n);
    float *s1 = malloc(sizeof(float) * (size_t)n), *s2 = malloc(sizeof(float) * (size_t)n);
    float *rp = malloc(sizeof(float) * (size_t)n), *r1 = malloc(sizeof(float) * (size_t)n);
    float *r2 = malloc(sizeof(float) * (size_t)n);
    assert_true(p && g && s1 && s2 && rp && r1 && r2);
    for (int64_t i = 0; i < n; i++) {
        p[i] = randf(&seed, -2, 2);
        g[i] = randf(&seed, -1, 1);
        s1[i] = kind == LT_OPTIM_ADAGRAD ? randf(&seed, 0, 1) : randf(&seed, -0.5f, 0.5f);
        s2[i] = randf(&seed, 0, 0.25f);
    }
    memcpy(rp, p, sizeof(float) * (size_t)n);
    memcpy(r1, s1, sizeof(float) * (size_t)n);
    memcpy(r2, s2, sizeof(float) * (size_t)n);
    lt_optim_update c = {.kind = kind, .dtype = LT_F32, .n = n, .p = p, .g = g, .s1 = s1, .s2 = s2,
                         .lr = 0.0123, .scale = 0.37, .wd = 0.004, .mu = 0.9, .b1 = 0.9, .b2 = 0.999, .eps = 1e-8,
                         .one_b1 = 1 - 0.9, .one_b2 = 1 - 0.999,
                         .adam_step = 0.0123 / (1 - 0.9 * 0.9 * 0.9), .inv_sqrt_bc2 = 1 / sqrt(1 - pow(0.999, 3)),
                         .decay = kind == LT_OPTIM_ADAMW ? 1 - 0.0123 * 0.004 : 1.0};
    lt_cpu_optim_update(&c);
    for (int64_t i = 0; i < n; i++) {
        ref_f32(&c, &rp[i], g[i], &r1[i], &r2[i]);
        if (memcmp(&rp[i], &p[i], sizeof(float)) != 0 || memcmp(&r1[i], &s1[i], sizeof(float)) != 0 ||
            ((kind == LT_OPTIM_ADAM || kind == LT_OPTIM_ADAMW) && memcmp(&r2[i], &s2[i], sizeof(float)) != 0))
            fail_msg("optimizer %d, n %lld, element %lld: p %.9g s1 %.9g s2 %.9g, the formula gives %.9g %.9g %.9g",
                     (int)kind, (long long)n, (long long)i, p[i], s1[i], s2[i], rp[i], r1[i], r2[i]);
    }
    /* the step moved every parameter, and by a sane amount */
    for (int64_t i = 0; i < n; i++)
        assert_true(isfinite(p[i]));
    free(p);
    free(g);
    free(s1);
    free(s2);
    free(rp);
    free(r1);
    free(r2);
}

static void all_kinds_f32(void **state)
{
    (void)state;
    static const int64_t sizes[] = {1, 15, 16, 17, 1000, 70001};
    static const lt_optim_kind kinds[] = {LT_OPTIM_SGD, LT_OPTIM_MOMENTUM, LT_OPTIM_NESTEROV, LT_OPTIM_ADAGRAD,
                                          LT_OPTIM_ADAM, LT_OPTIM_ADAMW};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
            run_kind(kinds[k], sizes[s]);
}

/* float64 against the formulas in long double, to a few ulps */
static void momentum_adam_f64(void **state)
{
    (void)state;
    const int64_t n = 40001;
    for (int kind = 0; kind < 2; kind++) {
        double *p = malloc(sizeof(double) * n), *g = malloc(sizeof(double) * n), *s1 = malloc(sizeof(double) * n),
               *s2 = malloc(sizeof(double) * n), *p0 = malloc(sizeof(double) * n), *m0 = malloc(sizeof(double) * n),
               *v0 = malloc(sizeof(double) * n);
        uint64_t seed = 5 + (uint64_t)kind;
        for (int64_t i = 0; i < n; i++) {
            p0[i] = p[i] = randf(&seed, -2, 2);
            g[i] = randf(&seed, -1, 1);
            m0[i] = s1[i] = randf(&seed, -0.5f, 0.5f);
            v0[i] = s2[i] = randf(&seed, 0, 0.25f);
        }
        lt_optim_update c = {.kind = kind ? LT_OPTIM_ADAM : LT_OPTIM_MOMENTUM, .dtype = LT_F64, .n = n, .p = p,
                             .g = g, .s1 = s1, .s2 = s2, .lr = 0.01, .scale = 1, .wd = 0, .mu = 0.9, .b1 = 0.9,
                             .b2 = 0.999, .one_b1 = 1 - 0.9, .one_b2 = 1 - 0.999, .eps = 1e-8, .adam_step = 0.01 / (1 - 0.9), .inv_sqrt_bc2 = 1 / sqrt(1 - 0.999),
                             .decay = 1};
        lt_cpu_optim_update(&c);
        for (int64_t i = 0; i < n; i++) {
            long double want;
            if (kind == 0) {
                want = (long double)p0[i] - 0.01L * (0.9L * m0[i] + g[i]);
            } else {
                long double m = 0.9L * m0[i] + 0.1L * g[i], v = 0.999L * v0[i] + 0.001L * g[i] * g[i];
                want = (long double)p0[i] - (0.01L / 0.1L) * m / (sqrtl(v) / sqrtl(0.001L) + 1e-8L);
            }
            if (fabsl(want - p[i]) > 1e-12L * (1 + fabsl(want)))
                fail_msg("float64 optimizer %d, element %lld: %.17g, want %.17Lg", kind, (long long)i, p[i], want);
        }
        free(p);
        free(g);
        free(s1);
        free(s2);
        free(p0);
        free(m0);
        free(v0);
    }
}

/* Adam's first step moves each weight by lr (times the sign of its
 * gradient, up to eps), as PyTorch's does: 1 - beta2 is taken in double. In
 * float, 1 - 0.999f is 1.3e-5 short and every step 6.4e-6 too long. */
static void adam_first_step_is_lr(void **state)
{
    (void)state;
    for (int w = 0; w < 2; w++) {
        const int64_t n = 33; /* the vector loop and its tail */
        float p[33], g[33], s1[33] = {0}, s2[33] = {0};
        for (int64_t i = 0; i < n; i++) {
            p[i] = 0; /* the step in full float precision */
            g[i] = (i % 2 ? -0.5f : 0.75f) * (1 + 0.01f * (float)i);
        }
        const double lr = 0.01, b1 = 0.9, b2 = 0.999;
        lt_optim_update c = {.kind = w ? LT_OPTIM_ADAMW : LT_OPTIM_ADAM, .dtype = LT_F32, .n = n, .p = p, .g = g,
                             .s1 = s1, .s2 = s2, .lr = lr, .scale = 1, .b1 = b1, .b2 = b2, .one_b1 = 1 - b1,
                             .one_b2 = 1 - b2, .eps = 1e-8, .adam_step = lr / (1 - b1),
                             .inv_sqrt_bc2 = 1 / sqrt(1 - b2), .decay = 1};
        lt_cpu_optim_update(&c);
        for (int64_t i = 0; i < n; i++) {
            double moved = -(double)p[i] / (g[i] > 0 ? 1 : -1);
            if (fabs(moved - lr) > 1e-6 * lr)
                fail_msg("%s, element %lld: moved %.9g, PyTorch's step is %.9g", w ? "adamw" : "adam", (long long)i,
                         moved, lr);
        }
    }
}

/* Without weight decay an infinite weight stays infinite under every
 * optimizer, as PyTorch leaves it (0 * -inf would make it nan), in the
 * vector loop and its tail alike; float32 and float64. */
static void infinite_weight_without_decay(void **state)
{
    (void)state;
    const lt_optim_kind kinds[] = {LT_OPTIM_SGD, LT_OPTIM_MOMENTUM, LT_OPTIM_NESTEROV, LT_OPTIM_ADAGRAD,
                                   LT_OPTIM_ADAM, LT_OPTIM_ADAMW};
    for (int dt = 0; dt < 2; dt++)
        for (int k = 0; k < 6; k++) {
            const int64_t n = 37;
            float pf[37], gf[37], s1f[37] = {0}, s2f[37] = {0};
            double pd[37], gd[37], s1d[37] = {0}, s2d[37] = {0};
            for (int64_t i = 0; i < n; i++) {
                pd[i] = pf[i] = i % 5 == 0 ? -INFINITY : 0.25f * (float)(i % 3);
                gd[i] = gf[i] = i % 5 == 0 ? 0.0f : 0.1f * (float)(i % 4) - 0.15f;
            }
            lt_optim_update c = {.kind = kinds[k], .dtype = dt ? LT_F64 : LT_F32, .n = n,
                                 .p = dt ? (void *)pd : (void *)pf, .g = dt ? (void *)gd : (void *)gf,
                                 .s1 = dt ? (void *)s1d : (void *)s1f, .s2 = dt ? (void *)s2d : (void *)s2f,
                                 .lr = 0.1, .scale = 1, .mu = 0.9, .b1 = 0.9, .b2 = 0.999, .one_b1 = 0.1,
                                 .one_b2 = 1 - 0.999, .eps = 1e-8, .adam_step = 1, .inv_sqrt_bc2 = 1, .decay = 1};
            for (int step = 0; step < 2; step++)
                lt_cpu_optim_update(&c);
            for (int64_t i = 0; i < n; i++) {
                double v = dt ? pd[i] : pf[i];
                if (i % 5 == 0 ? !(isinf(v) && v < 0) : !isfinite(v))
                    fail_msg("kind %d, %s, element %lld: %g", (int)kinds[k], dt ? "f64" : "f32", (long long)i, v);
            }
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(all_kinds_f32),
        cmocka_unit_test(adam_first_step_is_lr),
        cmocka_unit_test(momentum_adam_f64),
        cmocka_unit_test(infinite_weight_without_decay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
