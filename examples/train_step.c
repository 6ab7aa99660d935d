/* lantern as a library: load an ONNX classifier, run it, train it a few
 * steps on tensors this program holds, read a parameter and export the
 * trained model. Uses only the installed lantern.h.
 *
 *   train_step MODEL.onnx OUT.onnx [DATA_DIR]
 *
 * MODEL takes float32 samples [N, ...] in its first input and gives class
 * logits. The data are SAMPLES seeded random samples with labels 0..9; with
 * DATA_DIR they are also written to DATA_DIR/x.npy and DATA_DIR/y.npy. In an
 * .npz, `lantern train MODEL --data npz=... --shuffle off --optimizer momentum
 * --lr 0.05 --batch 32 --epochs 2 -o OUT.onnx` writes the same OUT.onnx. */
#include <lantern.h>
#include <stdio.h>
#include <stdlib.h>

#define SAMPLES 100
#define BATCH 32
#define EPOCHS 2
#define LR 0.05
#define SEED 42

static uint64_t next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* Prints what failed and returns the exit code: 2 for bad input, 1 otherwise. */
static int fail(const char *what, lt_status st, const lt_err *err)
{
    fprintf(stderr, "train_step: %s: %s (%s)\n", what, err->msg, lt_status_str(st));
    return st == LT_ERR_INVALID || st == LT_ERR_UNSUPPORTED || st == LT_ERR_IO ? 2 : 1;
}

/* A value holding a copy of rows [row, row + n) of t. */
static lt_status rows(const lt_tensor *t, int64_t row, int64_t n, lt_value **out, lt_err *err)
{
    lt_tensor v = *t;
    int64_t per_row = t->numel / t->dims[0];
    v.dims[0] = n;
    v.numel = n * per_row;
    v.data = (char *)t->data + row * per_row * lt_dtype_size(t->dtype);
    v.buf = NULL;
    return lt_value_from_tensor(&v, out, err);
}

int main(int argc, char **argv)
{
    if (argc < 3 || argc > 4) {
        fprintf(stderr, "usage: train_step MODEL.onnx OUT.onnx [DATA_DIR]\n");
        return 2;
    }
    printf("lantern %s\n", lt_version());
    lt_err err;
    lt_status st;
    lt_model *model = NULL;
    lt_session *session = NULL;
    lt_trainer *trainer = NULL;
    lt_value *in[2] = {NULL, NULL}, *logits = NULL;
    float *x = NULL;
    int64_t y[SAMPLES];
    int rc = 1;

    /* the model, and the shape of one sample from its first input */
    if ((st = lt_model_load(argv[1], &model, &err)) != LT_OK)
        return fail("loading the model", st, &err);
    int rank;
    int64_t dims[LT_MAX_RANK], per_sample = 1;
    lt_model_input_shape(model, 0, &rank, dims);
    for (int d = 1; d < rank; d++)
        per_sample *= dims[d];
    if (rank < 2 || per_sample <= 0) {
        fprintf(stderr, "train_step: %s: input '%s' should be [N, ...] with fixed sample dims\n", argv[1],
                lt_model_input_name(model, 0));
        goto done;
    }

    /* the data: seeded samples in [0, 1), labels 0..9 */
    lt_tensor xt = {.dtype = LT_F32, .rank = rank, .numel = SAMPLES * per_sample};
    lt_tensor yt = {.dtype = LT_I64, .rank = 1, .dims = {SAMPLES}, .numel = SAMPLES, .data = y};
    for (int d = 0; d < rank; d++)
        xt.dims[d] = d ? dims[d] : SAMPLES;
    if (!(x = malloc(sizeof *x * (size_t)xt.numel))) {
        fprintf(stderr, "train_step: out of memory\n");
        goto done;
    }
    xt.data = x;
    uint64_t rng = SEED;
    for (int64_t i = 0; i < xt.numel; i++)
        x[i] = (float)(next(&rng) >> 40) / 16777216.0f;
    for (int i = 0; i < SAMPLES; i++)
        y[i] = (int64_t)(next(&rng) % 10);
    if (argc == 4) {
        char path[4096];
        for (int k = 0; k < 2; k++) {
            snprintf(path, sizeof path, "%s/%s", argv[3], k ? "y.npy" : "x.npy");
            if ((st = lt_value_from_tensor(k ? &yt : &xt, &in[k], &err)) != LT_OK ||
                (st = lt_value_save_npy(in[k], path, &err)) != LT_OK) {
                rc = fail("writing the data", st, &err);
                goto done;
            }
            lt_value_free(in[k]);
            in[k] = NULL;
        }
    }

    /* run the model on the first batch */
    const char *names[2] = {lt_model_input_name(model, 0), "labels"};
    if ((st = lt_session_new(model, &session, &err)) != LT_OK || (st = rows(&xt, 0, BATCH, &in[0], &err)) != LT_OK ||
        (st = lt_session_run(session, 1, names, in, &logits, &err)) != LT_OK) {
        rc = fail("running the model", st, &err);
        goto done;
    }
    printf("%s: ", lt_model_output_name(model, 0));
    lt_value_describe(logits, 4, stdout);
    printf("\n");
    lt_value_free(in[0]);
    in[0] = NULL;

    /* train: batches in order, softmax cross-entropy on "labels", SGD with momentum */
    lt_train_opts o;
    lt_train_defaults(&o);
    o.loss = LT_LOSS_SOFTMAX_CROSS_ENTROPY;
    lt_optim_defaults(LT_OPTIM_MOMENTUM, &o.optim); /* momentum 0.9 */
    o.seed = SEED; /* used by random initialization (o.init_random), not here */
    if ((st = lt_trainer_new(argv[1], &o, &trainer, &err)) != LT_OK) {
        rc = fail("making the trainer", st, &err);
        goto done;
    }
    for (int e = 0; e < EPOCHS; e++)
        for (int64_t start = 0; start < SAMPLES; start += BATCH) {
            int64_t n = SAMPLES - start < BATCH ? SAMPLES - start : BATCH;
            double loss;
            if ((st = rows(&xt, start, n, &in[0], &err)) != LT_OK || (st = rows(&yt, start, n, &in[1], &err)) != LT_OK ||
                (st = lt_trainer_step(trainer, LR, 2, names, in, &loss, &err)) != LT_OK) {
                rc = fail("training", st, &err);
                goto done;
            }
            printf("step %lld: loss %.4f\n", (long long)lt_trainer_num_steps(trainer), loss);
            for (int k = 0; k < 2; k++) {
                lt_value_free(in[k]);
                in[k] = NULL;
            }
        }

    /* a parameter before and after training (the trained one is the trainer's) */
    lt_model *trained = lt_trainer_model(trainer);
    const lt_tensor *before = lt_model_param(model, 0), *after = lt_model_param(trained, 0);
    if (!before || !after || before->dtype != LT_F32 || after->numel != before->numel) {
        fprintf(stderr, "train_step: %s: the first parameter is not a float32 tensor\n", argv[1]);
        goto done;
    }
    double change = 0;
    for (int64_t i = 0; i < after->numel; i++) {
        double d = (double)((const float *)after->data)[i] - ((const float *)before->data)[i];
        if (d < 0)
            d = -d;
        if (d > change)
            change = d;
    }
    printf("%s: %lld values, largest change %.6f\n", lt_model_param_name(trained, 0), (long long)after->numel,
           change);

    if ((st = lt_trainer_export(trainer, argv[1], argv[2], &err)) != LT_OK) {
        rc = fail("exporting", st, &err);
        goto done;
    }
    printf("wrote %s\n", argv[2]);
    rc = 0;
done:
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_value_free(logits);
    lt_trainer_free(trainer);
    lt_session_free(session);
    lt_model_free(model);
    free(x);
    return rc;
}
