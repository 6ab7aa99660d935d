/* Training results do not depend on the thread count: three models trained
 * a few steps on 1, 2 and 3 threads (the trainer's governor off, so each
 * run keeps its count) give the same losses and the same checkpoint bit for
 * bit: parameters and optimizer state, whose momentum (SGD) or moments
 * (Adam) hold the gradients' bits, which a parameter's rounding would hide. The kernels
 * cut every float sum by the sizes alone (runtime/cpu/par.h), so the
 * thread governor may change the count between steps without changing a
 * bit. The models, at realistic sizes:
 *   - models/mlp.onnx (784-512-256-10) at batch 128: products with a long
 *     K (784) and weight gradients summed over the batch;
 *   - tests/data/conv_bn.onnx at batch 32: convolutions with
 *     BatchNormalization on batch statistics, their filter gradients,
 *     global pooling (make_thread_models.py);
 *   - tests/data/attn_block.onnx at batch 128: a pre-LayerNorm attention
 *     block and MLP over 28 tokens, weight gradients summed over 3584 rows,
 *     Adam. */
#include "testutil.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STEPS 3

typedef struct model_case {
    const char *path;
    int64_t batch;
    int rank;
    int64_t sample[3]; /* the input's dims after the batch */
    lt_optim_kind optim;
    double lr;
} model_case;

/* The checkpoint (parameters and optimizer state) after STEPS steps on
 * `threads` threads, with each step's loss after it, as bytes in a new
 * buffer of *bytes. */
static unsigned char *train(const model_case *mc, int threads, size_t *bytes)
{
    lt_set_num_threads(threads);
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_optim_defaults(mc->optim, &o.optim);
    o.optim.momentum = 0.9;
    o.seed = 11;
    lt_trainer *t = NULL;
    lt_err err;
    if (lt_trainer_new(mc->path, &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const char *names[2] = {lt_model_input_name(lt_trainer_model(t), 0), "labels"};
    int64_t xd[4] = {mc->batch};
    for (int i = 0; i < mc->rank - 1; i++)
        xd[i + 1] = mc->sample[i];
    double losses[STEPS];
    for (int s = 0; s < STEPS; s++) {
        int64_t *lab = malloc(sizeof(int64_t) * (size_t)mc->batch);
        assert_non_null(lab);
        for (int64_t i = 0; i < mc->batch; i++)
            lab[i] = (i * 7 + s * 3) % 10;
        lt_tensor yt = {.dtype = LT_I64, .rank = 1, .dims = {mc->batch}, .numel = mc->batch, .data = lab};
        lt_value *x = tu_rand(LT_F32, mc->rank, xd, -1, 1, 100 + (uint64_t)s), *y = NULL;
        assert_int_equal(lt_value_from_tensor(&yt, &y, &err), LT_OK);
        lt_value *in[2] = {x, y};
        if (lt_trainer_step(t, mc->lr, 2, names, in, &losses[s], &err) != LT_OK)
            fail_msg("%s", err.msg);
        lt_value_free(x);
        lt_value_free(y);
        free(lab);
    }
    char dir[] = "/tmp/lt_thread_bits_XXXXXX", file[64];
    assert_non_null(mkdtemp(dir));
    if (lt_trainer_save_checkpoint(t, dir, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_trainer_free(t);
    snprintf(file, sizeof file, "%s/checkpoint.ltck", dir);
    FILE *f = fopen(file, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *all = malloc((size_t)n + sizeof losses);
    assert_non_null(all);
    assert_int_equal(fread(all, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    remove(file);
    rmdir(dir);
    memcpy(all + n, losses, sizeof losses);
    *bytes = (size_t)n + sizeof losses;
    return all;
}

static void same_bits(const model_case *mc)
{
    setenv("LANTERN_THREAD_GOV", "0", 1);
    size_t n1 = 0;
    unsigned char *one = train(mc, 1, &n1);
    for (int threads = 2; threads <= 3; threads++) {
        size_t n = 0;
        unsigned char *got = train(mc, threads, &n);
        assert_int_equal(n, n1);
        size_t at = 0;
        while (at < n && got[at] == one[at])
            at++;
        if (at < n)
            fail_msg("%s: %d threads differ from 1 thread at byte %zu of %zu (checkpoint, then losses)", mc->path,
                     threads, at, n);
        free(got);
    }
    free(one);
    unsetenv("LANTERN_THREAD_GOV");
    lt_set_num_threads(2);
}

static void mlp_long_k(void **state)
{
    (void)state;
    model_case mc = {LT_SOURCE_DIR "/models/mlp.onnx", 128, 2, {784}, LT_OPTIM_MOMENTUM, 0.01};
    same_bits(&mc);
}

static void conv_batchnorm(void **state)
{
    (void)state;
    model_case mc = {LT_SOURCE_DIR "/tests/data/conv_bn.onnx", 32, 4, {3, 16, 16}, LT_OPTIM_MOMENTUM, 0.01};
    same_bits(&mc);
}

static void attention_block(void **state)
{
    (void)state;
    model_case mc = {LT_SOURCE_DIR "/tests/data/attn_block.onnx", 128, 3, {28, 28}, LT_OPTIM_ADAM, 0.001};
    same_bits(&mc);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(mlp_long_k),
        cmocka_unit_test(conv_batchnorm),
        cmocka_unit_test(attention_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
