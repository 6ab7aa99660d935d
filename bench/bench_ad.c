/* AD benchmarks (not tests):
 *   bench_ad memory MODEL BATCH   peak activation memory of one gradient step
 *                                 of a [N,T,28] sequence model, and whether
 *                                 memory returns to where it started
 *   bench_ad transform NODES      time of the AD transform of a NODES-node graph */
#include "runtime/runtime.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int memory(const char *path, int batch)
{
    lt_err err;
    lt_model *m;
    lt_session *s;
    lt_grad_opts o = {LT_LOSS_SOFTMAX_CROSS_ENTROPY, 0, NULL, 0};
    if (lt_model_load(path, &m, &err) != LT_OK || lt_model_grad(m, &o, &err) != LT_OK ||
        lt_session_new(m, &s, &err) != LT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    int rank;
    int64_t dims[LT_MAX_RANK];
    lt_model_input_shape(m, 0, &rank, dims);
    dims[0] = batch;
    lt_value *x = lt_value_new_tensor(), *y = lt_value_new_tensor();
    lt_tensor_alloc(&x->t, LT_F32, rank, dims, &err);
    int64_t nb = batch;
    lt_tensor_alloc(&y->t, LT_I64, 1, &nb, &err);
    uint64_t seed = 1;
    for (int64_t i = 0; i < x->t.numel; i++) {
        seed = seed * 6364136223846793005ull + 1442695040888963407ull;
        ((float *)x->t.data)[i] = (float)(seed >> 40) / (float)(1 << 24);
    }
    for (int64_t i = 0; i < batch; i++)
        ((int64_t *)y->t.data)[i] = i % 10;
    const char *names[2] = {lt_model_input_name(m, 0), "labels"};
    lt_value *ins[2] = {x, y}, *outs[16] = {0};
    int nout = lt_model_num_outputs(m);
    size_t before = lt_pool_bytes_in_use();
    lt_pool_reset_peak();
    double t0 = now();
    if (lt_session_run(s, 2, names, ins, outs, &err) != LT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double dt = now() - t0;
    size_t peak = lt_pool_peak_bytes() - before, results = lt_pool_bytes_in_use() - before;
    for (int i = 0; i < nout; i++)
        lt_value_free(outs[i]);
    size_t after = lt_pool_bytes_in_use();
    printf("%s: T=%lld batch %d: peak activation memory %zu bytes (%.2f MiB), results %zu bytes, "
           "in use after the step %+lld bytes, %.1f ms\n",
           path, (long long)dims[1], batch, peak, peak / 1048576.0, results, (long long)after - (long long)before,
           dt * 1e3);
    lt_value_free(x);
    lt_value_free(y);
    lt_session_free(s);
    lt_model_free(m);
    return 0;
}

/* x -> (MatMul W_i, Tanh) repeated: nodes/2 layers */
static int transform(int nodes)
{
    lt_module *m = lt_module_new();
    m->path = "chain";
    lt_block *b = m->main = lt_block_new(m, NULL, "main");
    lt_block_set_params(m, b, 1);
    b->params[0] = lt_ival_new(m, b, "x");
    int64_t xd[2] = {4, 16}, wd[2] = {16, 16};
    lt_type_tensor(&b->params[0]->type, LT_F32, 2, xd);
    m->input_default = lt_ir_alloc(m, sizeof(int));
    m->input_default[0] = -1;
    lt_ival *cur = b->params[0];
    lt_err err;
    for (int l = 0; l < nodes / 2; l++) {
        char nm[32];
        snprintf(nm, sizeof nm, "w%d", l);
        int p = lt_module_add_param(m, nm);
        lt_tensor t;
        lt_tensor_alloc(&t, LT_F32, 2, wd, &err);
        m->params[p].data = t;
        m->params[p].data.data = calloc(256, sizeof(float));
        m->params[p].data.buf = NULL;
        lt_tensor_release(&t);
        lt_ival *w = m->params[p].value = lt_ival_new(m, b, nm);
        w->param = p;
        lt_type_tensor(&w->type, LT_F32, 2, wd);
        lt_node *mm = lt_node_new(m, b, LT_OP_MAT_MUL, 2, 1);
        mm->opset = 13;
        mm->in[0] = cur;
        mm->in[1] = w;
        mm->out[0] = lt_ival_new(m, b, "mm");
        mm->out[0]->def = mm;
        lt_node *th = lt_node_new(m, b, LT_OP_TANH, 1, 1);
        th->opset = 13;
        th->in[0] = mm->out[0];
        th->out[0] = lt_ival_new(m, b, "h");
        th->out[0]->def = th;
        cur = th->out[0];
    }
    lt_block_set_results(m, b, 1);
    b->results[0] = cur;
    if (lt_infer_module(m, &err) != LT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    double t0 = now();
    if (lt_model_grad(m, &o, &err) != LT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 1;
    }
    double dt = now() - t0;
    int n = 0;
    for (int i = 0; i < b->nnodes; i++)
        n++;
    printf("AD transform of a %d-node graph: %.2f ms (program: %d nodes in main)\n", nodes, dt * 1e3,
           m->main->nnodes);
    lt_module_free(m);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && !strcmp(argv[1], "memory"))
        return memory(argv[2], atoi(argv[3]));
    if (argc >= 3 && !strcmp(argv[1], "transform"))
        return transform(atoi(argv[2]));
    fprintf(stderr, "usage: bench_ad memory MODEL BATCH | bench_ad transform NODES\n");
    return 2;
}
