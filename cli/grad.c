/* `lantern grad`: the combined forward/backward program of a model, run on
 * given inputs; writes one .npy gradient per parameter. */
#include "options.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* grad --check: the largest relative difference in float64 that passes */
#define CHECK_TOL 1e-4

#define GRAD_OPTIONS(X)                                                                                              \
    X(G_INPUT, "--input", "NAME=FILE", "the model input NAME from a .npy or TensorProto .pb file", NULL,             \
      LT_OPT_REPEAT)                                                                                                 \
    X(G_LOSS, "--loss", "L",                                                                                         \
      "sum | mean | model | softmax-cross-entropy | nll (with --labels) | mse | bce-logits (with --targets)",        \
      "sum", 0)                                                                                                      \
    X(G_LABELS, "--labels", "FILE", "class labels for softmax-cross-entropy and nll (.npy or .pb)", NULL, 0)         \
    X(G_TARGETS, "--targets", "FILE", "targets for mse and bce-logits (.npy or .pb)", NULL, 0)                       \
    X(G_CLASS_AXIS, "--class-axis", "K", LT_CLASS_AXIS_HELP, "the one the labels' shape fits", 0)                     \
    X(G_OUTPUT, "--output", "NAME", "the output the loss is taken of", "the first output", 0)                        \
    X(G_SEED, "--seed", "OUTPUT=FILE", "the cotangent of OUTPUT (a vector-Jacobian product; replaces --loss)",       \
      NULL, LT_OPT_REPEAT)                                                                                           \
    X(G_WRT_INPUTS, "--wrt-inputs", NULL, "also the gradients with respect to the inputs", "parameters only",        \
      0)                                                                                                             \
    X(G_OUTPUT_DIR, "--output-dir", "DIR", "write DIR/<param>.npy for every gradient (DIR is created)",              \
      "print only", 0)                                                                                               \
    X(G_PADDING, "--padding-idx", "PARAM=ROW",                                                                    \
      LT_PADDING_IDX_HELP, "none", LT_OPT_REPEAT)                                            \
    X(G_NO_TIE, "--no-tie", NULL, LT_NO_TIE_HELP, "tied: the source's gradient sums both uses", 0)                  \
    X(G_PRINT, "--print", NULL, "print the combined forward/backward program", NULL, 0)                              \
    X(G_CHECK, "--check", NULL, "compare every gradient with central finite differences in float64; exit status 1 " \
      "when one differs by more than 1e-4 (relative, in float64), excepting a parameter that takes no gradient by " \
      "design (BatchNormalization's running statistics, ...) and an exporter's graph constant (val_N)", NULL, 0)        \
    X(G_F64, "--f64", NULL, "run the whole program in float64", "the model's types", 0)
typedef enum { GRAD_OPTIONS(LT_OPT_ENUM) } grad_opt;
static const lt_cli_opt grad_opts[] = {GRAD_OPTIONS(LT_OPT_ROW){0, NULL, NULL, NULL, NULL, 0}};

/* Ties the folded transposed copies (lt_grad_opts.tie_transposed's work,
 * done here so that the note on stderr can name them). */
static lt_status note_ties(lt_model *m, const char *path, lt_err *err)
{
    char list[1024];
    int n = 0;
    lt_status s = lt_model_tie_transposed(m, &n, list, sizeof list, err);
    if (s == LT_OK && n)
        fprintf(stderr, "lantern grad: %s: %d initializer(s) hold exactly the transpose of another (an exporter's "
                "folded copy of a tied weight) and are read as that one, whose gradient sums both uses (--no-tie "
                "keeps them apart): %s\n", path, n, list);
    return s;
}

/* A seed is fed as the program input "<output>_seed"; a refusal naming that
 * input names the option and the file instead. */
static void seed_message(lt_err *err, int nseeds, const char *const *outputs, const char *const *files)
{
    for (int i = 0; i < nseeds; i++) {
        char needle[300];
        snprintf(needle, sizeof needle, "input '%s_seed'", outputs[i]);
        const char *at = strstr(err->msg, needle);
        if (!at)
            continue;
        char msg[sizeof err->msg], out[200], file[300];
        snprintf(msg, sizeof msg, "%.*s--seed %s=%s%s", (int)(at - err->msg), err->msg,
                 lt_str_printable(outputs[i], out, sizeof out), lt_str_printable(files[i], file, sizeof file),
                 at + strlen(needle));
        snprintf(err->msg, sizeof err->msg, "%s", msg);
        return;
    }
}

static int cmd_grad(const lt_cli_args *a)
{
    const char *path = a->ops[0], *outdir = NULL, *labels = NULL, *targets = NULL;
    int print = 0, check = 0, f64 = 0, no_tie = 0, rc = 0, nin = 0, nseeds = 0, n = a->nitems + 1;
    bool check_failed = false;
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    const char **names = calloc((size_t)n + 1, sizeof *names), **seed_names = calloc((size_t)n, sizeof *seed_names);
    const char **seed_files = calloc((size_t)n, sizeof *seed_files);
    lt_value **vals = calloc((size_t)n + 1, sizeof *vals), **outs = NULL;
    char **pnames = NULL; /* the parameter each gradient output belongs to */
    char **owned_names = calloc((size_t)n, sizeof *owned_names);
    lt_padding_row *pads = calloc((size_t)n, sizeof *pads);
    char **pad_names = calloc((size_t)n, sizeof *pad_names);
    lt_err err;
    lt_model *m = NULL;
    lt_session *sess = NULL;
    lt_status s = LT_OK;
    if (!names || !vals || !seed_names || !seed_files || !owned_names || !pads || !pad_names) {
        fprintf(stderr, "lantern: out of memory\n");
        rc = 1;
        goto done;
    }
    for (int i = 0; i < a->nitems; i++) {
        char *val = a->items[i].val;
        grad_opt id = (grad_opt)a->items[i].id;
        switch (id) {
        case G_INPUT:
        case G_SEED: {
            const char *opt = a->items[i].name;
            char *eq = strchr(val, '=');
            if (!eq) {
                char shown[512];
                fprintf(stderr, "lantern grad: %s wants NAME=FILE, got '%s'\n", opt,
                        lt_str_printable(val, shown, sizeof shown));
                rc = 2;
                goto done;
            }
            *eq = 0;
            if (id == G_SEED ? !lt_cli_input_once(seed_names, nseeds, val, "grad", "--seed")
                             : !lt_cli_input_once(names, nin, val, "grad", "--input")) {
                rc = 2;
                goto done;
            }
            if (id == G_SEED) {
                seed_files[nseeds] = eq + 1;
                seed_names[nseeds++] = val;
                size_t l = strlen(val) + 6;
                if (!(owned_names[nin] = malloc(l))) {
                    fprintf(stderr, "lantern: out of memory\n");
                    rc = 1;
                    goto done;
                }
                snprintf(owned_names[nin], l, "%s_seed", val);
                names[nin] = owned_names[nin];
            } else {
                names[nin] = val;
            }
            if ((s = lt_value_load(eq + 1, &vals[nin], &err)) != LT_OK)
                goto fail;
            nin++;
            break;
        }
        case G_LOSS:
            if (!lt_loss_parse(val, &o.loss)) {
                char shown[256];
                fprintf(stderr, "lantern grad: unknown loss '%s' (sum, mean, softmax-cross-entropy, nll, mse, "
                                "bce-logits, model)\n", lt_str_printable(val, shown, sizeof shown));
                rc = 2;
                goto done;
            }
            break;
        case G_LABELS: labels = val; break;
        case G_CLASS_AXIS:
            if (!lt_cli_class_axis(a->items[i].name, val, &o.class_axis)) {
                rc = 2;
                goto done;
            }
            break;
        case G_TARGETS: targets = val; break;
        case G_OUTPUT: o.output = val; break;
        case G_OUTPUT_DIR: outdir = val; break;
        case G_WRT_INPUTS: o.wrt_inputs = 1; break;
        case G_NO_TIE: no_tie = 1; break;
        case G_PRINT: print = 1; break;
        case G_CHECK: check = 1; break;
        case G_PADDING:
            if (!lt_cli_padding(a->items[i].name, val, &pads[o.npadding], &pad_names[o.npadding])) {
                rc = 2;
                goto done;
            }
            o.npadding++;
            o.padding = pads;
            break;
        case G_F64: f64 = 1; break;
        }
    }
    int want_labels = o.loss == LT_LOSS_SOFTMAX_CROSS_ENTROPY || o.loss == LT_LOSS_NLL;
    int want_targets = o.loss == LT_LOSS_MSE || o.loss == LT_LOSS_BCE_LOGITS;
    if ((want_labels && !labels) || (want_targets && !targets)) {
        fprintf(stderr, "lantern grad: --loss %s needs %s FILE\n", lt_loss_name(o.loss),
                want_labels ? "--labels" : "--targets");
        rc = 2;
        goto done;
    }
    if (want_labels || want_targets) {
        names[nin] = want_labels ? "labels" : "targets";
        /* --labels and --targets feed the input of that name */
        if (!lt_cli_input_once(names, nin, names[nin], "grad", "input")) {
            rc = 2;
            goto done;
        }
        if ((s = lt_value_load(want_labels ? labels : targets, &vals[nin], &err)) != LT_OK)
            goto fail;
        nin++;
        /* classes on the axis the labels' shape fits, where not given */
        const lt_tensor *lt = lt_value_tensor(vals[nin - 1]);
        if (want_labels && !o.class_axis && lt &&
            ((s = lt_model_load(path, &m, &err)) != LT_OK ||
             (s = lt_model_class_axis(m, o.output, lt->rank, lt->dims, &o.class_axis, &err)) != LT_OK))
            goto fail;
        lt_model_free(m);
        m = NULL;
    }
    o.tie_transposed = !no_tie;
    if (nseeds) {
        o.loss = LT_LOSS_SEEDS;
        o.nseeds = nseeds;
        o.seed_outputs = seed_names;
    }
    if (check && o.npadding) {
        fprintf(stderr, "lantern grad: --check compares with the function's own derivative, which --padding-idx "
                        "departs from by design; use one or the other\n");
        rc = 2;
        goto done;
    }
    if (check) {
        lt_gradcheck_row *rows = NULL;
        int nrows = 0;
        if ((s = lt_grad_check(path, &o, nin, names, vals, 64, &rows, &nrows, &err)) != LT_OK)
            goto fail;
        printf("%-40s %8s %14s %14s %12s\n", "parameter", "checked", "rel.err f64", "rel.err f32", "max |grad|");
        int nbad = 0, nby = 0;
        for (int r = 0; r < nrows; r++) {
            char shown[256];
            bool by_design = rows[r].no_grad[0] != 0;
            bool bad = !(rows[r].err64 <= CHECK_TOL) && !by_design;
            printf("%-40s %8d %14.3e %14.3e %12.4g", lt_str_printable(rows[r].name, shown, sizeof shown),
                   rows[r].checked, rows[r].err64, rows[r].err32, rows[r].max_grad);
            if (bad)
                printf("  FAILED");
            else if (by_design)
                printf("  (excepted: %s)", rows[r].no_grad);
            printf("\n");
            nbad += bad;
            nby += by_design && !(rows[r].err64 <= CHECK_TOL);
        }
        if (nbad)
            printf("gradient check: %d of %d parameters differ from finite differences by more than %g (float64)\n",
                   nbad, nrows, CHECK_TOL);
        else
            printf("gradient check: %d parameters agree with finite differences within %g (float64)%s\n",
                   nrows - nby, CHECK_TOL, nby ? "; the others are excepted" : "");
        check_failed = nbad > 0;
        free(rows);
    }
    o.tie_transposed = 0; /* note_ties ties them, naming the pairs */
    if ((s = lt_model_load(path, &m, &err)) != LT_OK || (f64 && (s = lt_model_to_f64(m, &err)) != LT_OK) ||
        (!no_tie && (s = note_ties(m, path, &err)) != LT_OK) || (s = lt_model_grad(m, &o, &err)) != LT_OK)
        goto fail;
    for (int i = 0; f64 && i < nin; i++) {
        lt_value *w = lt_value_to_f64(vals[i]);
        if (!w) {
            fprintf(stderr, "lantern: out of memory\n");
            rc = 1;
            goto done;
        }
        lt_value_free(vals[i]);
        vals[i] = w;
    }
    if (print)
        lt_model_print(m, stdout);
    int nout = lt_model_num_outputs(m);
    outs = calloc(nout + 1, sizeof *outs);
    pnames = calloc(nout + 1, sizeof *pnames);
    if (!outs || !pnames) {
        fprintf(stderr, "lantern: out of memory\n");
        rc = 1;
        goto done;
    }
    /* output i > 0 is the gradient of parameter (or input) pnames[i - 1] */
    for (int i = 1; i < nout; i++) {
        size_t l = strlen(lt_model_output_name(m, i));
        if (!(pnames[i - 1] = malloc(l + 1))) {
            fprintf(stderr, "lantern: out of memory\n");
            rc = 1;
            goto done;
        }
        memcpy(pnames[i - 1], lt_model_output_name(m, i), l + 1);
        if (l > 5 && !strcmp(pnames[i - 1] + l - 5, "_grad"))
            pnames[i - 1][l - 5] = 0;
    }
    if (outdir && (!lt_cli_npy_names_distinct((const char *const *)pnames, nout - 1, "parameters", outdir) ||
                   !lt_cli_out_dir(outdir, "--output-dir", 1))) {
        rc = 2;
        goto done;
    }
    if ((s = lt_session_new(m, &sess, &err)) != LT_OK || (s = lt_session_run(sess, nin, names, vals, outs, &err)) != LT_OK)
        goto fail;
    /* the loss in any float type (a float16 one read as its value) */
    lt_value *L64 = lt_value_to_f64(outs[0]);
    const lt_tensor *L = L64 ? lt_value_tensor(L64) : NULL;
    printf("loss: %.9g\n", L && L->numel == 1 && L->dtype == LT_F64 ? *(const double *)L->data : 0.0);
    lt_value_free(L64);
    for (int i = 1; i < nout; i++) {
        const char *pname = pnames[i - 1];
        char fn[1024], file[2048];
        lt_fputs_printable(pname, stdout);
        printf(": ");
        lt_value_describe(outs[i], 4, stdout);
        printf("\n");
        if (outdir) {
            lt_cli_sanitize(pname, fn, sizeof fn);
            snprintf(file, sizeof file, "%s/%s.npy", outdir, fn);
            if ((s = lt_value_save_npy(outs[i], file, &err)) != LT_OK)
                goto fail;
        }
    }
    if (check_failed)
        rc = 1;
    goto done;
fail:
    seed_message(&err, nseeds, seed_names, seed_files);
    fprintf(stderr, "lantern: %s\n", err.msg);
    rc = lt_exit_code(s);
done:
    if (outs && m)
        for (int i = 0; i < lt_model_num_outputs(m); i++)
            lt_value_free(outs[i]);
    free(outs);
    for (int i = 0; pnames && m && i < lt_model_num_outputs(m); i++)
        free(pnames[i]);
    free(pnames);
    for (int i = 0; vals && i < nin; i++)
        lt_value_free(vals[i]);
    for (int i = 0; owned_names && i < n; i++)
        free(owned_names[i]);
    free(owned_names);
    for (int i = 0; pad_names && i < n; i++)
        free(pad_names[i]);
    free(pad_names);
    free(pads);
    free(vals);
    free(names);
    free(seed_names);
    free(seed_files);
    lt_session_free(sess);
    lt_model_free(m);
    return rc;
}

const lt_cli_cmd lt_cli_grad = {
    "grad", "MODEL --input NAME=FILE ... [options]",
    "gradients of a loss with respect to the parameters (reverse-mode AD through If, Loop and Scan)", "MODEL", 1,
    1, NULL, grad_opts, cmd_grad, true};
