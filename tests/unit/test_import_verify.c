/* Importer, shape inference and verifier: shipped models, models built here
 * through the protobuf structs (external data, input defaults, functions,
 * cycles), random bytes, and hand-built IR the verifier must reject. */
#include "testutil.h"
#include "importer/importer.h"
#include "ir/infer.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODELS LT_SOURCE_DIR "/models/"

static const lt_node *find_op(const lt_block *b, lt_op op)
{
    for (int i = 0; i < b->nnodes; i++) {
        if (b->nodes[i]->op == op)
            return b->nodes[i];
        for (int r = 0; r < b->nodes[i]->nregions; r++) {
            const lt_node *n = find_op(b->nodes[i]->regions[r], op);
            if (n)
                return n;
        }
    }
    return NULL;
}

static void loop_model_structure(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(MODELS "rnn_loop.onnx", &m, &err), LT_OK);
    assert_int_equal(m->main->nparams, 1);
    const lt_type *x = &m->main->params[0]->type;
    assert_int_equal(x->rank, 3);
    assert_true(x->dims[0].sym >= 0);
    assert_string_equal(m->syms[x->dims[0].sym], "N");
    assert_int_equal(x->dims[1].v, 28);
    const lt_node *loop = find_op(m->main, LT_OP_LOOP);
    assert_non_null(loop);
    assert_int_equal(loop->nregions, 1);
    const lt_block *body = loop->regions[0];
    assert_ptr_equal(body->parent, m->main);
    assert_int_equal(body->nparams, 3);
    /* the body reads x from the enclosing graph and U, its own initializer */
    const lt_node *g = find_op(body, LT_OP_GATHER);
    assert_non_null(g);
    assert_ptr_equal(g->in[0], m->main->params[0]);
    bool found_u = false;
    for (int i = 0; i < m->nparams; i++)
        found_u |= strcmp(m->params[i].name, "U") == 0 && m->params[i].data.numel == 128 * 128;
    assert_true(found_u);
    /* carried value type comes through the loop: float32[N,128] */
    const lt_ival *hT = loop->out[0];
    assert_int_equal(hT->type.dtype, LT_F32);
    assert_int_equal(hT->type.rank, 2);
    assert_int_equal(hT->type.dims[1].v, 128);
    assert_int_equal(lt_ir_verify(m, &err), LT_OK);
    lt_model_free(m);
}

static void if_model_structure(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(MODELS "if_model.onnx", &m, &err), LT_OK);
    const lt_node *n = find_op(m->main, LT_OP_IF);
    assert_non_null(n);
    assert_int_equal(n->nregions, 2);
    assert_int_equal(lt_attr_find(n, "then_branch")->kind, LT_ATTR_GRAPH);
    const lt_block *els = n->regions[lt_attr_find(n, "else_branch")->region];
    assert_int_equal(els->nnodes, 1);
    /* B is an initializer of the else branch: a module parameter all the same */
    assert_true(els->nodes[0]->in[1]->param >= 0);
    assert_string_equal(m->params[els->nodes[0]->in[1]->param].name, "B");
    lt_model_free(m);
}

static void random_bytes_rejected(void **state)
{
    (void)state;
    uint64_t seed = 12345;
    for (int trial = 0; trial < 50; trial++) {
        uint8_t buf[512];
        size_t n = 1 + (size_t)(trial * 37) % sizeof buf;
        for (size_t i = 0; i < n; i++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            buf[i] = (uint8_t)(seed >> 56);
        }
        lt_err err;
        lt_model *m = NULL;
        lt_status s = lt_model_load_buffer(buf, n, "random.onnx", NULL, &m, &err);
        if (s == LT_OK) /* a few random byte strings do parse: then they must be whole */
            lt_model_free(m);
        else
            assert_non_null(strstr(err.msg, "random.onnx"));
    }
}

/* ---- models built through the protobuf structs ---- */
typedef struct built {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset, *opsets[1];
    Onnx__NodeProto node, *nodes[2], node2;
    Onnx__TensorProto init, *inits[1];
    Onnx__ValueInfoProto in, out, *ins[1], *outs[1];
    Onnx__TypeProto in_t, out_t;
    Onnx__TypeProto__Tensor in_tt, out_tt;
    Onnx__StringStringEntryProto ext[3], *exts[3];
    char *node_in[1], *node_out[1], *node2_in[1], *node2_out[1];
    int64_t dims[1];
} built;

/* y = Identity(w), w an initializer of 4 floats; input "w" shadows it when
 * with_input. */
static void build(built *b, bool with_input)
{
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->model);
    onnx__graph_proto__init(&b->graph);
    onnx__operator_set_id_proto__init(&b->opset);
    onnx__node_proto__init(&b->node);
    onnx__tensor_proto__init(&b->init);
    onnx__value_info_proto__init(&b->in);
    onnx__value_info_proto__init(&b->out);
    onnx__type_proto__init(&b->in_t);
    onnx__type_proto__init(&b->out_t);
    onnx__type_proto__tensor__init(&b->in_tt);
    onnx__type_proto__tensor__init(&b->out_tt);
    b->model.has_ir_version = 1;
    b->model.ir_version = 8;
    b->opset.domain = "";
    b->opset.has_version = 1;
    b->opset.version = 13;
    b->opsets[0] = &b->opset;
    b->model.n_opset_import = 1;
    b->model.opset_import = b->opsets;
    b->model.graph = &b->graph;
    b->graph.name = "g";
    b->node.op_type = "Identity";
    b->node.name = "id";
    b->node_in[0] = "w";
    b->node_out[0] = "y";
    b->node.n_input = 1;
    b->node.input = b->node_in;
    b->node.n_output = 1;
    b->node.output = b->node_out;
    b->nodes[0] = &b->node;
    b->graph.n_node = 1;
    b->graph.node = b->nodes;
    b->init.name = "w";
    b->init.has_data_type = 1;
    b->init.data_type = LT_F32;
    b->dims[0] = 4;
    b->init.n_dims = 1;
    b->init.dims = b->dims;
    b->inits[0] = &b->init;
    b->graph.n_initializer = 1;
    b->graph.initializer = b->inits;
    b->out.name = "y";
    b->out_tt.has_elem_type = 1;
    b->out_tt.elem_type = LT_F32;
    b->out_t.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    b->out_t.tensor_type = &b->out_tt;
    b->out.type = &b->out_t;
    b->outs[0] = &b->out;
    b->graph.n_output = 1;
    b->graph.output = b->outs;
    if (with_input) {
        b->in.name = "w";
        b->in_tt.has_elem_type = 1;
        b->in_tt.elem_type = LT_F32;
        b->in_t.value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
        b->in_t.tensor_type = &b->in_tt;
        b->in.type = &b->in_t;
        b->ins[0] = &b->in;
        b->graph.n_input = 1;
        b->graph.input = b->ins;
    }
}

static lt_status load_built(built *b, const char *dir, lt_model **m, lt_err *err)
{
    size_t n = onnx__model_proto__get_packed_size(&b->model);
    uint8_t *buf = malloc(n);
    onnx__model_proto__pack(&b->model, buf);
    lt_status s = lt_model_load_buffer(buf, n, "built.onnx", dir, m, err);
    free(buf);
    return s;
}

static lt_value *run1(lt_model *m, int nin, const char *name, lt_value *in)
{
    lt_err err;
    lt_session *s;
    lt_value *out = NULL;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    lt_status st = lt_session_run(s, nin, &name, &in, &out, &err);
    if (st != LT_OK)
        fail_msg("%s", err.msg);
    lt_session_free(s);
    return out;
}

static void external_data(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_extXXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/w.bin", dir);
    FILE *f = fopen(path, "wb");
    float junk[3] = {9, 9, 9}, w[4] = {1.5f, -2.25f, 3.0f, 0.125f};
    fwrite(junk, sizeof junk, 1, f);
    fwrite(w, sizeof w, 1, f);
    fclose(f);
    built b;
    build(&b, false);
    b.init.has_data_location = 1;
    b.init.data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    const char *kv[3][2] = {{"location", "w.bin"}, {"offset", "12"}, {"length", "16"}};
    for (int i = 0; i < 3; i++) {
        onnx__string_string_entry_proto__init(&b.ext[i]);
        b.ext[i].key = (char *)kv[i][0];
        b.ext[i].value = (char *)kv[i][1];
        b.exts[i] = &b.ext[i];
    }
    b.init.n_external_data = 3;
    b.init.external_data = b.exts;
    lt_err err;
    lt_model *m;
    if (load_built(&b, dir, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value *y = run1(m, 0, NULL, NULL);
    double want[4] = {1.5, -2.25, 3.0, 0.125};
    tu_assert_close(y, want, 4, 0, 0, 0);
    lt_value_free(y);
    lt_model_free(m);
    /* past the end of the file, and outside the folder: both refused */
    b.ext[1].value = "16";
    assert_int_equal(load_built(&b, dir, &m, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "initializer 'w'"));
    b.ext[1].value = "0";
    b.ext[0].value = "../etc/passwd";
    assert_int_equal(load_built(&b, dir, &m, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "leaves the model's folder"));
    unlink(path);
    rmdir(dir);
}

static void input_shadows_initializer(void **state)
{
    (void)state;
    built b;
    build(&b, true);
    float w[4] = {1, 2, 3, 4};
    b.init.has_raw_data = 1;
    b.init.raw_data.len = sizeof w;
    b.init.raw_data.data = (uint8_t *)w;
    lt_err err;
    lt_model *m;
    assert_int_equal(load_built(&b, NULL, &m, &err), LT_OK);
    assert_int_equal(m->input_default[0], 0);
    /* not given: the initializer is the default */
    lt_value *y = run1(m, 0, NULL, NULL);
    double want[4] = {1, 2, 3, 4};
    tu_assert_close(y, want, 4, 0, 0, 0);
    lt_value_free(y);
    /* given: the input wins */
    int64_t d = 4;
    lt_value *x = tu_rand(LT_F32, 1, &d, -1, 1, 99);
    y = run1(m, 1, "w", x);
    double w2[4];
    for (int i = 0; i < 4; i++)
        w2[i] = tu_get(x, i);
    tu_assert_close(y, w2, 4, 0, 0, 99);
    lt_value_free(y);
    lt_value_free(x);
    /* an initializer is not a constant for shape inference once an input shadows it */
    lt_infer_ctx c = {m, &err};
    assert_null(lt_infer_const(&c, m->main->params[0]));
    lt_model_free(m);
}

static void raw_data_size_checked(void **state)
{
    (void)state;
    built b;
    build(&b, false);
    float w[3] = {1, 2, 3};
    b.init.has_raw_data = 1;
    b.init.raw_data.len = sizeof w; /* 12 bytes for 4 floats */
    b.init.raw_data.data = (uint8_t *)w;
    lt_err err;
    lt_model *m;
    assert_int_equal(load_built(&b, NULL, &m, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "raw_data has 12 bytes"));
    /* typed field with the wrong count */
    b.init.has_raw_data = 0;
    b.init.n_float_data = 3;
    b.init.float_data = w;
    assert_int_equal(load_built(&b, NULL, &m, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "holds 3 values"));
    /* dims whose product overflows */
    int64_t big[1] = {INT64_MAX};
    b.init.dims = big;
    assert_int_equal(load_built(&b, NULL, &m, &err), LT_ERR_INVALID);
}

static void cycle_and_dangling(void **state)
{
    (void)state;
    built b;
    build(&b, false);
    float w[4] = {1, 2, 3, 4};
    b.init.has_raw_data = 1;
    b.init.raw_data.len = sizeof w;
    b.init.raw_data.data = (uint8_t *)w;
    /* two nodes reading each other */
    onnx__node_proto__init(&b.node2);
    b.node2.op_type = "Relu";
    b.node2.name = "r";
    b.node2_in[0] = "y";
    b.node2_out[0] = "z";
    b.node2.n_input = 1;
    b.node2.input = b.node2_in;
    b.node2.n_output = 1;
    b.node2.output = b.node2_out;
    b.nodes[1] = &b.node2;
    b.graph.n_node = 2;
    b.node_in[0] = "z";
    lt_err err;
    lt_model *m;
    assert_int_equal(load_built(&b, NULL, &m, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "cycle"));
    assert_non_null(strstr(err.msg, "'id' (Identity)"));
    /* a name nobody defines */
    b.graph.n_node = 1;
    b.node_in[0] = "nowhere";
    assert_int_equal(load_built(&b, NULL, &m, &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "node 'id' (Identity): input 'nowhere' is not defined"));
    /* the nodes out of order: imported in dependency order */
    b.node_in[0] = "w";
    b.nodes[0] = &b.node2;
    b.nodes[1] = &b.node;
    b.graph.n_node = 2;
    b.node2_out[0] = "z";
    b.out.name = "z";
    assert_int_equal(load_built(&b, NULL, &m, &err), LT_OK);
    /* y = Identity(w) of an initializer became parameter y (ir/untie.c),
     * so the Relu reading it is the one node left */
    assert_int_equal(m->main->nnodes, 1);
    assert_int_equal(m->main->nodes[0]->op, LT_OP_RELU);
    assert_true(m->main->nodes[0]->in[0]->param >= 0);
    lt_model_free(m);
}

static void unknown_op_reported(void **state)
{
    (void)state;
    built b;
    build(&b, false);
    float w[4] = {1, 2, 3, 4};
    b.init.has_raw_data = 1;
    b.init.raw_data.len = sizeof w;
    b.init.raw_data.data = (uint8_t *)w;
    b.node.op_type = "FancyOp";
    b.node.domain = "com.example";
    lt_err err;
    lt_model *m;
    assert_int_equal(load_built(&b, NULL, &m, &err), LT_OK);
    assert_int_equal(m->nunsupported, 1);
    assert_string_equal(m->unsupported[0].op, "FancyOp");
    char buf[4096];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    int bad = 0;
    lt_model_summary(m, f, &bad);
    fclose(f);
    assert_int_equal(bad, 1);
    assert_non_null(strstr(buf, "FancyOp (domain com.example, node 'id')"));
    lt_model_free(m);
}

/* ---- verifier on hand-built IR ---- */
static void verifier_rejects_bad_ir(void **state)
{
    (void)state;
    lt_err err;
    tu_graph g = tu_single(LT_OP_RELU, 13, 1, 1);
    assert_int_equal(lt_ir_verify(g.m, &err), LT_OK);
    /* a second node reading a value defined after it */
    lt_node *n2 = lt_node_new(g.m, g.m->main, LT_OP_RELU, 1, 1);
    n2->out[0] = lt_ival_new(g.m, g.m->main, "late");
    n2->out[0]->def = n2;
    lt_node *first = g.m->main->nodes[0];
    first->in[0] = n2->out[0];
    n2->in[0] = g.m->main->params[0];
    assert_int_equal(lt_ir_verify(g.m, &err), LT_ERR_INTERNAL);
    assert_non_null(strstr(err.msg, "before it is defined"));
    tu_free(&g);

    /* a region value read from outside its region */
    g = tu_single(LT_OP_IF, 13, 1, 1);
    lt_node *iff = g.node;
    lt_node_set_regions(g.m, iff, 2);
    for (int r = 0; r < 2; r++) {
        lt_block *b = lt_block_new(g.m, g.m->main, r ? "else" : "then");
        b->owner = iff;
        lt_node *in = lt_node_new(g.m, b, LT_OP_IDENTITY, 1, 1);
        in->in[0] = g.m->main->params[0];
        in->out[0] = lt_ival_new(g.m, b, r ? "e" : "t");
        in->out[0]->def = in;
        lt_block_set_results(g.m, b, 1);
        b->results[0] = in->out[0];
        iff->regions[r] = b;
    }
    assert_int_equal(lt_ir_verify(g.m, &err), LT_OK);
    g.m->main->results[0] = iff->regions[0]->results[0];
    assert_int_equal(lt_ir_verify(g.m, &err), LT_ERR_INTERNAL);
    assert_non_null(strstr(err.msg, "'t'"));
    tu_free(&g);
}

static void broadcast_inference(void **state)
{
    (void)state;
    lt_type a, b, o;
    int64_t da[3] = {4, 1, 5}, db[2] = {3, 1};
    lt_type_tensor(&a, LT_F32, 3, da);
    lt_type_tensor(&b, LT_F32, 2, db);
    assert_true(lt_infer_broadcast(&a, &b, &o));
    assert_int_equal(o.rank, 3);
    assert_int_equal(o.dims[0].v, 4);
    assert_int_equal(o.dims[1].v, 3);
    assert_int_equal(o.dims[2].v, 5);
    /* symbolic against 1 keeps the symbol */
    a.dims[0].sym = 0;
    assert_true(lt_infer_broadcast(&a, &b, &o));
    assert_int_equal(o.dims[0].sym, 0);
    int64_t dc[1] = {7};
    lt_type_tensor(&b, LT_F32, 1, dc);
    assert_false(lt_infer_broadcast(&a, &b, &o)); /* 5 vs 7 */
}

static lt_value *run_file(const char *path, int n, const char **names, lt_value **ins)
{
    lt_err err;
    lt_model *m;
    if (lt_model_load(path, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session *s;
    lt_value *out = NULL;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, n, names, ins, &out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session_free(s);
    lt_model_free(m);
    return out;
}

/* z = leaky(leaky(x*y, 0.5) * y, 0.25): a function inlined twice with the
 * caller's attribute values */
static void function_inlined(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(LT_SOURCE_DIR "/tests/data/function.onnx", &m, &err), LT_OK);
    assert_int_equal(m->main->nnodes, 4);
    assert_int_equal(m->main->nodes[1]->op, LT_OP_LEAKY_RELU);
    assert_true(lt_attr_float(m->main->nodes[1], "alpha", 0) == 0.5f);
    assert_true(lt_attr_float(m->main->nodes[3], "alpha", 0) == 0.25f);
    assert_string_equal(m->main->nodes[0]->name, "first/");
    lt_model_free(m);
    int64_t d[2] = {2, 3};
    lt_value *x = tu_rand(LT_F32, 2, d, -2, 2, 21), *y = tu_rand(LT_F32, 2, d, -2, 2, 22);
    const char *names[2] = {"x", "y"};
    lt_value *ins[2] = {x, y};
    lt_value *z = run_file(LT_SOURCE_DIR "/tests/data/function.onnx", 2, names, ins);
    double want[6];
    for (int i = 0; i < 6; i++) {
        double t = tu_get(x, i) * tu_get(y, i);
        t = t < 0 ? 0.5 * t : t;
        t *= tu_get(y, i);
        want[i] = t < 0 ? 0.25 * t : t;
    }
    tu_assert_close(z, want, 6, 1e-6, 1e-7, 21);
    lt_value_free(x);
    lt_value_free(y);
    lt_value_free(z);
}

static void sparse_initializer(void **state)
{
    (void)state;
    int64_t d[2] = {3, 4};
    lt_value *x = tu_rand(LT_F32, 2, d, -1, 1, 31);
    const char *name = "x";
    lt_value *z = run_file(LT_SOURCE_DIR "/tests/data/sparse.onnx", 1, &name, &x);
    double want[12];
    for (int i = 0; i < 12; i++)
        want[i] = tu_get(x, i);
    want[0 * 4 + 1] += 1.5;
    want[1 * 4 + 3] += -2.0;
    want[2 * 4 + 0] += 4.0;
    tu_assert_close(z, want, 12, 1e-6, 1e-7, 31);
    lt_value_free(x);
    lt_value_free(z);
}

/* onnx::MatMul_937 = Identity(onnx::MatMul_826), as TorchScript writes a
 * weight's folded transpose that two layers share, is one tensor: one
 * parameter, whose gradient sums both reads (y = (x W) W, dW = x^T (s W^T)
 * + (x W)^T s for the seed s). An Identity to a parameter's own name is
 * untied (input_shadows_initializer). */
static void shared_folded_weight(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m = NULL;
    assert_int_equal(lt_model_load(LT_SOURCE_DIR "/tests/data/shared_folded.onnx", &m, &err), LT_OK);
    assert_int_equal(lt_model_num_params(m), 1);
    double W[9];
    for (int i = 0; i < 9; i++)
        W[i] = lt_tensor_get_f64(lt_model_param(m, 0), i);
    const char *seeds[1] = {"y"};
    lt_grad_opts o = {.loss = LT_LOSS_SEEDS, .nseeds = 1, .seed_outputs = seeds};
    assert_int_equal(lt_model_grad(m, &o, &err), LT_OK);
    assert_int_equal(lt_model_num_outputs(m), 2);
    int64_t d[2] = {2, 3};
    lt_value *in[2] = {tu_rand(LT_F32, 2, d, -1, 1, 3), tu_rand(LT_F32, 2, d, -1, 1, 4)}, *out[2] = {0};
    const char *names[2] = {"x", "y_seed"};
    lt_session *s = NULL;
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, 2, names, in, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    double want[9] = {0};
    for (int n = 0; n < 2; n++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) {
                double sw = 0, xw = 0; /* (s W^T)[n,j] and (x W)[n,i] */
                for (int k = 0; k < 3; k++) {
                    sw += tu_get(in[1], n * 3 + k) * W[j * 3 + k];
                    xw += tu_get(in[0], n * 3 + k) * W[k * 3 + i];
                }
                want[i * 3 + j] += tu_get(in[0], n * 3 + i) * sw + xw * tu_get(in[1], n * 3 + j);
            }
    tu_assert_close(out[1], want, 9, 1e-5, 1e-6, 0);
    for (int i = 0; i < 2; i++) {
        lt_value_free(in[i]);
        lt_value_free(out[i]);
    }
    lt_session_free(s);
    lt_model_free(m);
    /* the same layout holding zeros: two freshly zeroed weights (LoRA's B
     * matrices) whose equal folded copies were merged, two parameters */
    assert_int_equal(lt_model_load(LT_SOURCE_DIR "/tests/data/shared_zero.onnx", &m, &err), LT_OK);
    assert_int_equal(lt_model_num_params(m), 2);
    lt_model_free(m);
    /* two layers deep-copied from one (nn.TransformerEncoder's): the second
     * module's bias is an Identity of the first's too, so its folded
     * weight's copy is equal by chance: four parameters (they trained as
     * two, layer 1's weight moved by the sum of both layers' gradients) */
    assert_int_equal(lt_model_load(LT_SOURCE_DIR "/tests/data/deepcopy_layers.onnx", &m, &err), LT_OK);
    assert_int_equal(lt_model_num_params(m), 4);
    lt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(loop_model_structure),
        cmocka_unit_test(if_model_structure),
        cmocka_unit_test(random_bytes_rejected),
        cmocka_unit_test(external_data),
        cmocka_unit_test(input_shadows_initializer),
        cmocka_unit_test(raw_data_size_checked),
        cmocka_unit_test(cycle_and_dangling),
        cmocka_unit_test(unknown_op_reported),
        cmocka_unit_test(verifier_rejects_bad_ir),
        cmocka_unit_test(broadcast_inference),
        cmocka_unit_test(function_inlined),
        cmocka_unit_test(sparse_initializer),
        cmocka_unit_test(shared_folded_weight),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
