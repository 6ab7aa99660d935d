/* `lantern predict`: runs a classifier on the first samples of a dataset's
 * test split and prints predicted and true classes (by name for the image
 * sets lantern knows, by number otherwise). */
#include "options.h"
#include "train/norm_meta.h"
#include <stdlib.h>
#include <string.h>

static const char *const fashion_names[10] = {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
                                              "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot"};
static const char *const cifar_names[10] = {"airplane", "automobile", "bird",  "cat",  "deer",
                                            "dog",      "frog",       "horse", "ship", "truck"};

/* class c's name for the data named by spec (d), in buf */
static const char *class_name(const char *spec, const lt_dataset *d, int64_t c, char *buf, size_t len)
{
    if (lt_dataset_class_name(d, c))
        return lt_str_printable(lt_dataset_class_name(d, c), buf, len);
    if (c >= 0 && c < 10 && !strncmp(spec, "fashion-mnist", 13))
        return fashion_names[c];
    if (c >= 0 && c < 10 && !strncmp(spec, "cifar10", 7))
        return cifar_names[c];
    snprintf(buf, len, "%lld", (long long)c);
    return buf;
}

#define PREDICT_OPTIONS(X)                                                                                           \
    X(P_DATA, "--data", "SPEC",                                                                                      \
      "the dataset whose test split is classified (fashion-mnist[=DIR] | mnist=DIR | cifar10=DIR | npz=FILE "        \
      "| onnx-pb=DIR | csv=FILE,TEST | npy=X,Y,X_TEST,Y_TEST | images=DIR[,TEST_DIR])", "fashion-mnist", 0) \
    X(P_COUNT, "--count", "N", "how many test samples, from the first", "10", 0)                                     \
    X(P_MEAN, "--mean", "M[,M...]", "subtract from the samples (one value, or one per channel)",                     \
      "the model's stored lantern.mean, else 0", 0)                                                                  \
    X(P_STD, "--std", "S[,S...]", "then divide by (one value, or one per channel)",                                  \
      "the model's stored lantern.std, else 1", 0)                                                                   \
    X(P_NO_MODEL_NORM, "--no-model-norm", NULL, "ignore the --mean/--std stored in MODEL by lantern train", NULL, 0)
typedef enum { PREDICT_OPTIONS(LT_OPT_ENUM) } predict_opt;
static const lt_cli_opt predict_opts[] = {PREDICT_OPTIONS(LT_OPT_ROW){0, NULL, NULL, NULL, NULL, 0}};

static int cmd_predict(const lt_cli_args *a)
{
    const char *path = a->ops[0], *spec = "fashion-mnist";
    long count = 10;
    lt_dataset_opts norm = {0};
    int no_model_norm = 0;
    for (int i = 0; i < a->nitems; i++) {
        int64_t v;
        switch ((predict_opt)a->items[i].id) {
        case P_DATA: spec = a->items[i].val; break;
        case P_MEAN:
            if (!lt_cli_norm_arg(a->items[i].name, a->items[i].val, &norm.nmean, norm.mean, 16))
                return 2;
            break;
        case P_STD:
            if (!lt_cli_norm_arg(a->items[i].name, a->items[i].val, &norm.nstd, norm.std, 16))
                return 2;
            break;
        case P_NO_MODEL_NORM: no_model_norm = 1; break;
        case P_COUNT:
            if (!lt_cli_int("--count", a->items[i].val, 1, 1e9, &v))
                return 2;
            count = (long)v;
            break;
        }
    }
    lt_err err;
    lt_model *m = NULL;
    lt_dataset *d = NULL;
    lt_session *s = NULL;
    lt_value *x = NULL, *y = NULL, *out = NULL;
    int rc = 0;
    lt_status st = lt_model_load(path, &m, &err);
    /* the normalisation: the options', else what the model stored */
    lt_dataset_opts given = norm;
    if (st == LT_OK && !no_model_norm)
        st = lt_norm_fill_from_model(m, &norm, &err);
    if (st == LT_OK)
        st = lt_dataset_open_opts(spec, 1, &norm, &d, &err);
    if (st != LT_OK)
        goto fail;
    lt_cli_print_norm(&norm, norm.nmean != given.nmean || norm.nstd != given.nstd, path);
    if (count > lt_dataset_size(d))
        count = (long)lt_dataset_size(d);
    const char *name = lt_model_input_name(m, 0);
    char shown[256]; /* from the model: escaped in messages */
    lt_str_printable(name, shown, sizeof shown);
    int rank;
    int64_t shape[LT_MAX_RANK];
    lt_model_input_shape(m, 0, &rank, shape);
    if (rank < 2) {
        fprintf(stderr, "lantern: %s: input '%s' must be [N, ...] with a known rank\n", path, shown);
        rc = 2;
        goto done;
    }
    /* unknown dims: the sample's own shape at its rank, or flat at rank 2 */
    int sr;
    int64_t sd[LT_MAX_RANK];
    lt_dataset_sample_shape(d, &sr, sd);
    int unknown = 0;
    for (int i = 1; i < rank; i++)
        unknown += shape[i] < 0;
    if (unknown && rank - 1 == sr)
        memcpy(shape + 1, sd, sizeof *sd * (size_t)sr);
    else if (unknown && rank == 2)
        shape[1] = lt_dataset_sample_numel(d);
    else if (unknown) {
        fprintf(stderr, "lantern: %s: cannot tell how input '%s' takes the samples\n", path, shown);
        rc = 2;
        goto done;
    }
    if (!lt_dataset_has_classes(d)) {
        fprintf(stderr, "lantern: %s: predict needs class labels; the data has float targets\n", spec);
        rc = 2;
        goto done;
    }
    st = lt_dataset_batch(d, 0, count, rank, shape, &x, &y, &err);
    if (st == LT_OK)
        st = lt_session_new(m, &s, &err);
    if (st == LT_OK)
        st = lt_session_run(s, 1, &name, &x, &out, &err);
    if (st != LT_OK)
        goto fail;
    const lt_tensor *logits = lt_value_tensor(out);
    if (!logits || logits->rank != 2 || logits->dims[0] != count || logits->dtype != LT_F32) {
        fprintf(stderr, "lantern: %s: the first output must be float32 [N, classes]\n", path);
        rc = 2;
        goto done;
    }
    int64_t C = logits->dims[1], correct = 0;
    printf("%-6s %-14s %-14s\n", "sample", "predicted", "true");
    for (long i = 0; i < count; i++) {
        const float *row = (const float *)logits->data + i * C;
        int64_t best = 0;
        for (int64_t c = 1; c < C; c++)
            if (row[c] > row[best])
                best = c;
        int64_t truth = ((const int64_t *)lt_value_tensor(y)->data)[i];
        correct += best == truth;
        char pb[32], tb[32];
        printf("%-6ld %-14s %-14s%s\n", i, class_name(spec, d, best, pb, sizeof pb), class_name(spec, d, truth, tb, sizeof tb),
               best == truth ? "" : "  (wrong)");
    }
    printf("accuracy on %ld test samples: %.4f\n", count, (double)correct / (double)count);
    goto done;
fail:
    fprintf(stderr, "lantern: %s\n", err.msg);
    rc = lt_exit_code(st);
done:
    lt_value_free(x);
    lt_value_free(y);
    lt_value_free(out);
    lt_session_free(s);
    lt_dataset_free(d);
    lt_model_free(m);
    return rc;
}

const lt_cli_cmd lt_cli_predict = {
    "predict", "MODEL [--data SPEC] [--count N] [--mean M] [--std S] [--no-model-norm]",
    "classify the first test samples and print predicted and true classes", "MODEL", 1, 1,
    "Classes are named for Fashion-MNIST and CIFAR-10, numbered otherwise. 8-bit pixels are scaled to [0,1],\n"
    "then (x - mean) / std with the normalisation lantern train stored in MODEL (--mean / --std replace it).\n",
    predict_opts, cmd_predict, true};
