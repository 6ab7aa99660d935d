/* The model zoo of today's exporters (models/zoo, made by make_zoo.py from
 * PyPI's torch, torchvision and transformers): every model, as exported by
 * torch.onnx's TorchScript and dynamo exporters, is imported, run and
 * differentiated, and compared with torch's own values saved next to it.
 *   outputs:   max |lantern - torch| <= 1e-4 * max(1, max |torch|): an
 *              absolute bound for outputs of unit size, relative beyond
 *   gradients: of the loss sum_k sum(out_k * seed_k), for every parameter
 *              and float input: max |lantern - torch| <= 1e-3 * max |torch|
 *              per tensor (relative to the tensor's max-norm: float32
 *              backward passes accumulate in different orders, so single
 *              near-zero elements carry no relative precision), with that
 *              max |torch| taken as at least 1e-3 of the largest gradient of
 *              the model: a gradient that is zero in exact arithmetic (the
 *              key bias of an attention, which softmax cancels) is float32
 *              rounding in both, and only its size is compared
 * The <model>_ts / _dynamo exports keep every parameter an initializer of
 * its own (every parameter's gradient compared); the *_default ones are the
 * exporters' defaults, compared on outputs, input gradients and the
 * parameters left as initializers (models/zoo/make_zoo.py).
 * A case listed with a reason is an expected failure: it must still fail
 * (so a fix shows up), and its reason is printed. */
#include "testutil.h"
#include "train/trainer.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZOO LT_SOURCE_DIR "/models/zoo/"
#define MAX_IO 16
#define MAX_GRADS 512
#define OUT_TOL 1e-4
#define GRAD_TOL 1e-3

typedef struct zoo_case {
    const char *dir;
    const char *xfail; /* NULL: must pass; else why it cannot yet */
} zoo_case;

typedef struct zoo_files {
    int nin, nout, ngrad;
    char in_name[MAX_IO][128], in_file[MAX_IO][64];
    char out_name[MAX_IO][128], out_file[MAX_IO][64], seed_file[MAX_IO][64];
    char grad_name[MAX_GRADS][256], grad_file[MAX_GRADS][64];
} zoo_files;

static const zoo_case cases[] = {
#define BOTH(n) {n "_ts", NULL}, {n "_dynamo", NULL}
    BOTH("resnet"),     BOTH("mobilenet_v2"), BOTH("mobilenet_v3"), BOTH("efficientnet"), BOTH("densenet"),
    BOTH("shufflenet"), BOTH("squeezenet"),   BOTH("vit"),          BOTH("bert"),         BOTH("gpt2"),
    BOTH("distilbert"), BOTH("t5_encoder"),   BOTH("whisper_encoder"), BOTH("lstm"),      BOTH("gru"),
    BOTH("if"),         BOTH("loop"),         BOTH("scan"),
    /* the exporters' defaults: BatchNormalization folded into Conv,
     * weights transposed or concatenated into constants */
#define DEFAULTS(n) {n "_ts_default", NULL}, {n "_dynamo_default", NULL}
    DEFAULTS("resnet"),   DEFAULTS("mobilenet_v3"), DEFAULTS("efficientnet"), DEFAULTS("densenet"),
    DEFAULTS("bert"),     DEFAULTS("gpt2"),         DEFAULTS("lstm"),
#undef DEFAULTS
#undef BOTH
};

/* case.txt: "input NAME FILE", "output NAME FILE SEEDFILE", "grad NAME FILE"
 * ('#' starts a comment line) */
static bool read_case(const char *dir, zoo_files *z, char *why, size_t wlen)
{
    char path[512], line[1024];
    snprintf(path, sizeof path, ZOO "%s/case.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        snprintf(why, wlen, "cannot open %s", path);
        return false;
    }
    memset(z, 0, sizeof *z);
    bool ok = true;
    while (ok && fgets(line, sizeof line, f)) {
        if (line[0] == '#' || line[0] == '\n')
            continue;
        char kind[16], a[256], b[64], c[64];
        int n = sscanf(line, "%15s %255s %63s %63s", kind, a, b, c);
        if (n >= 3 && !strcmp(kind, "input") && z->nin < MAX_IO && strlen(a) < 128) {
            strcpy(z->in_name[z->nin], a);
            strcpy(z->in_file[z->nin++], b);
        } else if (n == 4 && !strcmp(kind, "output") && z->nout < MAX_IO && strlen(a) < 128) {
            strcpy(z->out_name[z->nout], a);
            strcpy(z->out_file[z->nout], b);
            strcpy(z->seed_file[z->nout++], c);
        } else if (n >= 3 && !strcmp(kind, "grad") && z->ngrad < MAX_GRADS) {
            strcpy(z->grad_name[z->ngrad], a);
            strcpy(z->grad_file[z->ngrad++], b);
        } else {
            snprintf(why, wlen, "%s: bad line '%.200s'", path, line);
            ok = false;
        }
    }
    fclose(f);
    return ok;
}

static lt_value *load_file(const char *dir, const char *file)
{
    char path[512];
    snprintf(path, sizeof path, ZOO "%s/%s", dir, file);
    return tu_load(path);
}

static int output_index(const lt_model *m, const char *name)
{
    for (int i = 0; i < lt_model_num_outputs(m); i++)
        if (!strcmp(lt_model_output_name(m, i), name))
            return i;
    return -1;
}

/* max |got - want| and max |want|; false when the shapes differ */
static bool diff(const lt_tensor *got, const lt_tensor *want, double *maxd, double *maxw)
{
    *maxd = *maxw = 0;
    if (!got || got->numel != want->numel || got->rank != want->rank)
        return false;
    for (int d = 0; d < got->rank; d++)
        if (got->dims[d] != want->dims[d])
            return false;
    for (int64_t e = 0; e < got->numel; e++) {
        double g = lt_tensor_get_f64(got, e), w = lt_tensor_get_f64(want, e);
        *maxd = fmax(*maxd, isfinite(g) ? fabs(g - w) : INFINITY);
        *maxw = fmax(*maxw, fabs(w));
    }
    return true;
}

/* The gradients of the case's model against torch's, of the program
 * lt_model_grad makes or (rewrite) of the one lantern train runs; *grad_err
 * keeps the largest relative error seen. */
static bool check_grads(const char *dir, const zoo_files *z, const char *path, bool rewrite, char *why, size_t wlen,
                        double *grad_err)
{
    const char *tag = rewrite ? " (trainer's rewrites)" : "";
    lt_err err;
    lt_model *gm = NULL;
    lt_session *gs = NULL;
    lt_value *ins[2 * MAX_IO] = {0}, **gouts = NULL;
    const char *names[2 * MAX_IO];
    char seed_names[MAX_IO][160];
    bool ok = false;
    if (lt_model_load(path, &gm, &err) != LT_OK) {
        snprintf(why, wlen, "import: %.700s", err.msg);
        goto done;
    }
    const char *seed_outputs[MAX_IO];
    for (int k = 0; k < z->nout; k++)
        seed_outputs[k] = z->out_name[k];
    lt_grad_opts o = {LT_LOSS_SEEDS, z->nout, seed_outputs, 1};
    if (lt_model_grad(gm, &o, &err) != LT_OK || (rewrite && lt_trainer_rewrite(gm, true, true, &err) != LT_OK)) {
        snprintf(why, wlen, "grad%s: %.700s", tag, err.msg);
        goto done;
    }
    int n = z->nin;
    for (int i = 0; i < z->nin; i++) {
        ins[i] = load_file(dir, z->in_file[i]);
        names[i] = z->in_name[i];
    }
    for (int k = 0; k < z->nout; k++) {
        snprintf(seed_names[k], sizeof seed_names[k], "%s_seed", z->out_name[k]);
        names[n] = seed_names[k];
        ins[n++] = load_file(dir, z->seed_file[k]);
    }
    int ngout = lt_model_num_outputs(gm);
    gouts = calloc((size_t)ngout, sizeof *gouts);
    assert_non_null(gouts);
    if (lt_session_new(gm, &gs, &err) != LT_OK || lt_session_run(gs, n, names, ins, gouts, &err) != LT_OK) {
        snprintf(why, wlen, "run gradients%s: %.700s", tag, err.msg);
        goto done;
    }
    double scale = 0; /* the largest |torch gradient| of the model */
    for (int g = 0; g < z->ngrad; g++) {
        lt_value *w = load_file(dir, z->grad_file[g]);
        const lt_tensor *t = lt_value_tensor(w);
        for (int64_t e = 0; e < t->numel; e++)
            scale = fmax(scale, fabs(lt_tensor_get_f64(t, e)));
        lt_value_free(w);
    }
    for (int g = 0; g < z->ngrad; g++) {
        char gname[300];
        snprintf(gname, sizeof gname, "%s_grad", z->grad_name[g]);
        int oi = output_index(gm, gname);
        if (oi < 0) {
            snprintf(why, wlen, "no gradient for %s%s", z->grad_name[g], tag);
            goto done;
        }
        lt_value *w = load_file(dir, z->grad_file[g]);
        double maxd, maxw;
        bool same = diff(lt_value_tensor(gouts[oi]), lt_value_tensor(w), &maxd, &maxw);
        lt_value_free(w);
        if (!same) {
            snprintf(why, wlen, "gradient of %s shaped unlike torch's%s", z->grad_name[g], tag);
            goto done;
        }
        double floor = fmax(maxw, 1e-3 * scale);
        double e = floor > 0 ? maxd / floor : maxd;
        *grad_err = fmax(*grad_err, e);
        if (!(e <= GRAD_TOL)) {
            snprintf(why, wlen, "gradient of %s differs from torch by %.3g relative (max |torch| %.3g)%s",
                     z->grad_name[g], e, maxw, tag);
            goto done;
        }
    }
    ok = true;
done:
    for (int i = 0; i < 2 * MAX_IO; i++)
        lt_value_free(ins[i]);
    if (gouts)
        for (int i = 0; i < lt_model_num_outputs(gm); i++)
            lt_value_free(gouts[i]);
    free(gouts);
    lt_session_free(gs);
    lt_model_free(gm);
    return ok;
}

/* Runs one case; false with the reason in why when lantern disagrees. */
static bool run_case(const char *dir, char *why, size_t wlen, double *out_err, double *grad_err, int *ngrad)
{
    static zoo_files z;
    char path[512];
    lt_err err;
    lt_model *m = NULL;
    lt_session *s = NULL;
    lt_value *ins[2 * MAX_IO] = {0}, *outs[MAX_IO] = {0}, *want[MAX_IO] = {0};
    const char *names[2 * MAX_IO];
    bool ok = false;
    *out_err = *grad_err = 0;
    *ngrad = 0;
    if (!read_case(dir, &z, why, wlen))
        return false;
    snprintf(path, sizeof path, ZOO "%s/model.onnx", dir);
    if (lt_model_load(path, &m, &err) != LT_OK) {
        snprintf(why, wlen, "import: %.700s", err.msg);
        goto done;
    }
    if (lt_model_num_outputs(m) != z.nout) {
        snprintf(why, wlen, "%d outputs, torch gave %d", lt_model_num_outputs(m), z.nout);
        goto done;
    }
    for (int i = 0; i < z.nin; i++) {
        ins[i] = load_file(dir, z.in_file[i]);
        names[i] = z.in_name[i];
    }
    if (lt_session_new(m, &s, &err) != LT_OK || lt_session_run(s, z.nin, names, ins, outs, &err) != LT_OK) {
        snprintf(why, wlen, "run: %.700s", err.msg);
        goto done;
    }
    for (int k = 0; k < z.nout; k++) {
        int oi = output_index(m, z.out_name[k]);
        want[k] = load_file(dir, z.out_file[k]);
        double maxd, maxw;
        if (oi < 0 || !diff(lt_value_tensor(outs[oi]), lt_value_tensor(want[k]), &maxd, &maxw)) {
            snprintf(why, wlen, "output %s: missing or shaped unlike torch's", z.out_name[k]);
            goto done;
        }
        double e = maxd / fmax(1, maxw);
        *out_err = fmax(*out_err, e);
        if (!(e <= OUT_TOL)) {
            snprintf(why, wlen, "output %s differs from torch by %.3g (max |torch| %.3g)", z.out_name[k], maxd,
                     maxw);
            goto done;
        }
    }
    /* gradients: the combined program of a fresh import, as lantern grad
     * runs it, then with the trainer's rewrites (lantern train's program) */
    if (!check_grads(dir, &z, path, false, why, wlen, grad_err) || !check_grads(dir, &z, path, true, why, wlen, grad_err))
        goto done;
    *ngrad = z.ngrad;
    ok = true;
done:
    for (int i = 0; i < 2 * MAX_IO; i++)
        lt_value_free(ins[i]);
    for (int i = 0; i < MAX_IO; i++) {
        lt_value_free(outs[i]);
        lt_value_free(want[i]);
    }
    lt_session_free(s);
    lt_model_free(m);
    return ok;
}

static void zoo_test(void **state)
{
    const zoo_case *c = *state;
    char why[768] = "";
    double oe, ge;
    int ng;
    bool ok = run_case(c->dir, why, sizeof why, &oe, &ge, &ng);
    if (c->xfail) {
        if (ok)
            fail_msg("%s passes now: remove its expected failure (%s)", c->dir, c->xfail);
        printf("%-24s expected failure: %s [%s]\n", c->dir, c->xfail, why);
        return;
    }
    if (!ok)
        fail_msg("%s: %s", c->dir, why);
    printf("%-24s pass: outputs max err %.2g, %3d gradients max rel err %.2g\n", c->dir, oe, ng, ge);
}

int main(void)
{
    enum { N = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[N];
    for (int i = 0; i < N; i++)
        tests[i] = (struct CMUnitTest){cases[i].dir, zoo_test, NULL, NULL, (void *)&cases[i]};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
