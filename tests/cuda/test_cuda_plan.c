/* Which nodes of the shipped models' training programs the cuda backend
 * takes, decided as at plan time (lt_cuda_kernel_for: the kernel table and
 * each op's fits rule, by the IR's types); runs without a GPU. The
 * combined forward/backward programs of the MLP and the CNN (softmax
 * cross-entropy) must run on the device but for the nodes that only make
 * host values (Constant, Shape); the accumulation cells' ops run there too. */
#include "testutil.h"
#include "cuda/cuda_internal.h"
#include <stdio.h>
#include <string.h>

#define MODELS LT_SOURCE_DIR "/models/"

static const char *const HOST_OK[] = {"Constant", "Shape"};

static bool host_ok(const char *op)
{
    for (size_t i = 0; i < sizeof HOST_OK / sizeof *HOST_OK; i++)
        if (strcmp(op, HOST_OK[i]) == 0)
            return true;
    return false;
}

/* Counts the block's nodes on each side; lists unexpected host ones. */
static void walk(const lt_block *b, int *dev, int *host, char *bad, size_t len)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        uint64_t mask;
        if (lt_cuda_kernel_for(n, &mask)) {
            (*dev)++;
        } else {
            (*host)++;
            const char *op = lt_op_names[n->op];
            if (!host_ok(op) && !strstr(bad, op) && strlen(bad) + strlen(op) + 2 < len) {
                strcat(bad, " ");
                strcat(bad, op);
            }
        }
        for (int r = 0; r < n->nregions; r++)
            walk(n->regions[r], dev, host, bad, len);
    }
}

/* strict: every op but HOST_OK on cuda; else the host ones are listed only */
static void check_model(const char *name, bool strict)
{
    char path[512];
    snprintf(path, sizeof path, "%s%s", MODELS, name);
    lt_model *m;
    lt_err err;
    if (lt_model_load(path, &m, &err) != LT_OK)
        fail_msg("%s: %s", name, err.msg);
    lt_grad_opts o;
    memset(&o, 0, sizeof o);
    o.loss = LT_LOSS_SOFTMAX_CROSS_ENTROPY;
    if (lt_model_grad(m, &o, &err) != LT_OK)
        fail_msg("%s: %s", name, err.msg);
    int dev = 0, host = 0;
    char bad[512] = "";
    walk(m->main, &dev, &host, bad, sizeof bad);
    for (int i = 0; i < m->nfuncs; i++) /* loops lifted into functions by the AD */
        walk(m->funcs[i]->body, &dev, &host, bad, sizeof bad);
    printf("%s: %d node(s) on cuda, %d on the host%s%s\n", name, dev, host, bad[0] ? "; ops on the host:" : "",
           bad);
    lt_model_free(m);
    if (strict && bad[0])
        fail_msg("%s: ops left to the host:%s", name, bad);
    if (strict)
        assert_true(dev > 0);
}

static void test_mlp(void **state)
{
    (void)state;
    check_model("mlp.onnx", true);
}

static void test_cnn(void **state)
{
    (void)state;
    check_model("cnn.onnx", true);
}

/* The others: what still falls back is printed (no kernel yet). */
static void test_others(void **state)
{
    (void)state;
    check_model("squeezenet.onnx", false);
    check_model("lstm.onnx", false);
    check_model("rnn_loop.onnx", false);
    check_model("treelstm.onnx", false);
    check_model("tiny_bert.onnx", false);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_mlp), cmocka_unit_test(test_cnn), cmocka_unit_test(test_others)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
