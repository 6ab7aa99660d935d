/* `lantern predict`: runs a classifier on the first samples of a dataset's
 * test split and prints predicted and true classes (by name where the data
 * names them, by number otherwise); lt_model_predict does the work. */
#include "options.h"
#include "train/norm_meta.h"
#include <stdlib.h>
#include <string.h>

#define PREDICT_OPTIONS(X)                                                                                           \
    X(P_DATA, "--data", "SPEC",                                                                                      \
      "the dataset whose test split is classified (fashion-mnist[=DIR] | mnist=DIR | cifar10=DIR | npz=FILE "        \
      "| onnx-pb=DIR | csv=FILE,TEST | npy=X,Y,X_TEST,Y_TEST | images=DIR[,TEST_DIR]; SPEC in lantern help train)",  \
      "fashion-mnist", 0)                                                                                            \
    X(P_COUNT, "--count", "N", "how many test samples, from the first", "10", 0)                                     \
    X(P_OUTPUT, "--output", "NAME", "the model output holding the class scores", "the first output", 0)              \
    X(P_LABEL_COLUMN, "--label-column", "NAME|K",                                                                    \
      "csv: the label's column, by header name or number (1 the first, -1 the last)", "the last column", 0)        \
    X(P_IGNORE_INDEX, "--ignore-index", "I", "samples labelled I are shown but not counted in the accuracy", "-100", \
      0)                                                                                                             \
    X(P_MEAN, "--mean", "M[,M...]", "subtract from the samples (one value, or one per channel)",                     \
      "the model's stored lantern.mean, else 0", 0)                                                                  \
    X(P_STD, "--std", "S[,S...]", "then divide by (one value, or one per channel)",                                  \
      "the model's stored lantern.std, else 1", 0)                                                                   \
    X(P_NO_MODEL_NORM, "--no-model-norm", NULL, "ignore the --mean/--std stored in MODEL by lantern train", NULL, 0)
typedef enum { PREDICT_OPTIONS(LT_OPT_ENUM) } predict_opt;
static const lt_cli_opt predict_opts[] = {PREDICT_OPTIONS(LT_OPT_ROW){0, NULL, NULL, NULL, NULL, 0}};

static int cmd_predict(const lt_cli_args *a)
{
    const char *path = a->ops[0];
    lt_eval_opts eo = {"fashion-mnist", 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}, 0};
    int64_t count = 10;
    for (int i = 0; i < a->nitems; i++) {
        const char *opt = a->items[i].name, *val = a->items[i].val;
        int ok = 1;
        switch ((predict_opt)a->items[i].id) {
        case P_DATA: eo.data = val; break;
        case P_OUTPUT: eo.output = val; break;
        case P_LABEL_COLUMN: eo.norm.label_column = val; break;
        case P_MEAN: ok = lt_cli_norm_arg(opt, val, &eo.norm.nmean, eo.norm.mean, 16); break;
        case P_STD: ok = lt_cli_norm_arg(opt, val, &eo.norm.nstd, eo.norm.std, 16); break;
        case P_NO_MODEL_NORM: eo.no_model_norm = 1; break;
        case P_COUNT: ok = lt_cli_int(opt, val, 1, 1e9, &count); break;
        case P_IGNORE_INDEX:
            ok = lt_cli_int(opt, val, -9007199254740992.0, 9007199254740992.0, &eo.ignore_index);
            eo.set_ignore_index = 1;
            break;
        }
        if (!ok)
            return 2;
    }
    char shown[512];
    if (eo.norm.label_column && strncmp(eo.data, "csv=", 4) != 0) {
        fprintf(stderr, "lantern predict: --label-column picks a CSV column; --data %s is not csv=\n",
                lt_str_printable(eo.data, shown, sizeof shown));
        return 2;
    }
    lt_err err;
    lt_model *m = NULL;
    lt_prediction *pred = calloc((size_t)count, sizeof *pred);
    int64_t n = 0;
    lt_dataset_opts given = eo.norm;
    lt_status st = pred ? lt_model_load(path, &m, &err) : lt_errf(&err, LT_ERR_NOMEM, "out of memory");
    /* the normalisation: the options', else what the model stored */
    if (st == LT_OK && !eo.no_model_norm)
        st = lt_norm_fill_from_model(m, &eo.norm, &err);
    eo.no_model_norm = 1;
    if (st == LT_OK)
        st = lt_model_predict(m, &eo, count, pred, &n, &err);
    lt_model_free(m);
    if (st != LT_OK) {
        fprintf(stderr, "lantern: %s\n", err.msg);
        free(pred);
        return lt_exit_code(st);
    }
    lt_cli_print_norm(&eo.norm, eo.norm.nmean != given.nmean || eo.norm.nstd != given.nstd, path);
    printf("%-6s %-14s %-14s\n", "sample", "predicted", "true");
    int64_t correct = 0, counted = 0;
    for (int64_t i = 0; i < n; i++) {
        const lt_prediction *p = &pred[i];
        char pb[80], tb[80];
        if (p->predicted_name[0])
            lt_str_printable(p->predicted_name, pb, sizeof pb);
        else
            snprintf(pb, sizeof pb, "%lld", (long long)p->predicted);
        if (p->truth_name[0])
            lt_str_printable(p->truth_name, tb, sizeof tb);
        else
            snprintf(tb, sizeof tb, "%lld", (long long)p->truth);
        counted += !p->ignored;
        correct += !p->ignored && p->predicted == p->truth;
        printf("%-6lld %-14s %-14s%s\n", (long long)p->sample, pb, tb,
               p->ignored ? "  (ignored)" : p->predicted == p->truth ? "" : "  (wrong)");
    }
    if (counted)
        printf("accuracy on %lld test samples: %.4f\n", (long long)counted, (double)correct / (double)counted);
    else
        printf("accuracy: none of the %lld samples counts (every label is the ignore index)\n", (long long)n);
    free(pred);
    return 0;
}

const lt_cli_cmd lt_cli_predict = {
    "predict", "MODEL [--data SPEC] [--count N] [--output NAME] [--mean M] [--std S] [--no-model-norm]",
    "classify the first test samples and print predicted and true classes", "MODEL", 1, 1,
    "Classes are named for Fashion-MNIST, CIFAR-10 and image class folders, numbered otherwise. The samples\n"
    "feed the model as in lantern train and eval (the input without a default, npz arrays by input name; a\n"
    "layout other than the model's, or a label the output has no score for, is refused). 8-bit pixels are\n"
    "scaled to [0,1], then (x - mean) / std with the normalisation lantern train stored in MODEL (--mean /\n"
    "--std replace it).\n",
    predict_opts, cmd_predict, true};
