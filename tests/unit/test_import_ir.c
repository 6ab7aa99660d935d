/* IR versions 11-14 (onnx 1.18-1.23): accepted; their element types and
 * opaque types refused by name; IR 10's function overloads resolved by
 * (domain, name, overload), though lantern's schema (Debian's onnx.proto,
 * IR 8) does not name the field. Models built here through the protobuf
 * structs, the newer fields written as unknown fields. */
#include "testutil.h"
#include "importer/importer.h"
#include <stdlib.h>
#include <string.h>

/* x: float32[2] -> y = Abs(x) (or a call of local.f when calls) */
typedef struct mini {
    Onnx__ModelProto model;
    Onnx__GraphProto graph;
    Onnx__OperatorSetIdProto opset[2], *opsets[2];
    Onnx__NodeProto node, *nodes[1];
    Onnx__ValueInfoProto in, out, *ins[1], *outs[1];
    Onnx__TypeProto in_t, out_t;
    Onnx__TypeProto__Tensor in_tt, out_tt;
    char *node_in[1], *node_out[1];
    /* two functions local.f, overloads "neg" and "abs" */
    Onnx__FunctionProto fn[2], *fns[2];
    Onnx__NodeProto fn_node[2], *fn_nodes[2][1];
    Onnx__OperatorSetIdProto fn_opset, *fn_opsets[1];
    char *fn_io[2];
    ProtobufCMessageUnknownField fn_over[2], node_over, type_u;
    uint8_t fn_over_b[2][8], node_over_b[8], type_u_b[2];
} mini;

/* an unknown length-delimited field holding s (length prefix included, as
 * protobuf-c keeps it) */
static void unknown_str(ProtobufCMessageUnknownField *u, uint8_t *buf, uint32_t tag, const char *s)
{
    size_t n = strlen(s);
    buf[0] = (uint8_t)n;
    memcpy(buf + 1, s, n);
    u->tag = tag;
    u->wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    u->len = n + 1;
    u->data = buf;
}

static void tensor_vi(Onnx__ValueInfoProto *vi, Onnx__TypeProto *t, Onnx__TypeProto__Tensor *tt, const char *name)
{
    onnx__value_info_proto__init(vi);
    onnx__type_proto__init(t);
    onnx__type_proto__tensor__init(tt);
    vi->name = (char *)name;
    tt->has_elem_type = 1;
    tt->elem_type = LT_F32;
    t->value_case = ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE;
    t->tensor_type = tt;
    vi->type = t;
}

static void mini_build(mini *b, int64_t ir, bool calls)
{
    memset(b, 0, sizeof *b);
    onnx__model_proto__init(&b->model);
    onnx__graph_proto__init(&b->graph);
    onnx__node_proto__init(&b->node);
    b->model.has_ir_version = 1;
    b->model.ir_version = ir;
    for (int i = 0; i < 2; i++) {
        onnx__operator_set_id_proto__init(&b->opset[i]);
        b->opset[i].has_version = 1;
        b->opsets[i] = &b->opset[i];
    }
    b->opset[0].domain = "";
    b->opset[0].version = 24;
    b->opset[1].domain = "local";
    b->opset[1].version = 1;
    b->model.n_opset_import = calls ? 2 : 1;
    b->model.opset_import = b->opsets;
    b->model.graph = &b->graph;
    b->graph.name = "g";
    b->node.op_type = calls ? "f" : "Abs";
    b->node.domain = calls ? "local" : "";
    b->node_in[0] = "x";
    b->node_out[0] = "y";
    b->node.n_input = 1;
    b->node.input = b->node_in;
    b->node.n_output = 1;
    b->node.output = b->node_out;
    b->nodes[0] = &b->node;
    b->graph.n_node = 1;
    b->graph.node = b->nodes;
    tensor_vi(&b->in, &b->in_t, &b->in_tt, "x");
    tensor_vi(&b->out, &b->out_t, &b->out_tt, "y");
    b->ins[0] = &b->in;
    b->outs[0] = &b->out;
    b->graph.n_input = 1;
    b->graph.input = b->ins;
    b->graph.n_output = 1;
    b->graph.output = b->outs;
    if (!calls)
        return;
    onnx__operator_set_id_proto__init(&b->fn_opset);
    b->fn_opset.domain = "";
    b->fn_opset.has_version = 1;
    b->fn_opset.version = 24;
    b->fn_opsets[0] = &b->fn_opset;
    b->fn_io[0] = "a";
    b->fn_io[1] = "b";
    static const char *ops[2] = {"Neg", "Abs"}, *over[2] = {"neg", "abs"};
    for (int i = 0; i < 2; i++) {
        onnx__function_proto__init(&b->fn[i]);
        onnx__node_proto__init(&b->fn_node[i]);
        b->fn_node[i].op_type = (char *)ops[i];
        b->fn_node[i].n_input = 1;
        b->fn_node[i].input = &b->fn_io[0];
        b->fn_node[i].n_output = 1;
        b->fn_node[i].output = &b->fn_io[1];
        b->fn_nodes[i][0] = &b->fn_node[i];
        b->fn[i].name = "f";
        b->fn[i].domain = "local";
        b->fn[i].n_input = 1;
        b->fn[i].input = &b->fn_io[0];
        b->fn[i].n_output = 1;
        b->fn[i].output = &b->fn_io[1];
        b->fn[i].n_node = 1;
        b->fn[i].node = b->fn_nodes[i];
        b->fn[i].n_opset_import = 1;
        b->fn[i].opset_import = b->fn_opsets;
        unknown_str(&b->fn_over[i], b->fn_over_b[i], 13, over[i]);
        b->fn[i].base.n_unknown_fields = 1;
        b->fn[i].base.unknown_fields = &b->fn_over[i];
        b->fns[i] = &b->fn[i];
    }
    b->model.n_functions = 2;
    b->model.functions = b->fns;
}

static lt_status mini_load(mini *b, lt_model **m, lt_err *err)
{
    size_t n = onnx__model_proto__get_packed_size(&b->model);
    uint8_t *buf = malloc(n);
    assert_non_null(buf);
    onnx__model_proto__pack(&b->model, buf);
    lt_status s = lt_model_load_buffer(buf, n, "mini.onnx", NULL, m, err);
    free(buf);
    return s;
}

static void mini_run(lt_model *m, const double *want)
{
    lt_err err;
    lt_session *s;
    int64_t d[1] = {2};
    double xv[2] = {-2.5, 3.25};
    lt_value *x = tu_from(LT_F32, 1, d, xv), *y = NULL;
    const char *name = "x";
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, 1, &name, &x, &y, &err) != LT_OK)
        fail_msg("%s", err.msg);
    tu_assert_close(y, want, 2, 0, 0, 0);
    lt_value_free(y);
    lt_value_free(x);
    lt_session_free(s);
}

static void ir_versions_up_to_14(void **state)
{
    (void)state;
    for (int64_t ir = 3; ir <= 15; ir++) {
        mini b;
        mini_build(&b, ir, false);
        lt_model *m = NULL;
        lt_err err;
        lt_status s = mini_load(&b, &m, &err);
        if (ir == 15) {
            assert_int_equal(s, LT_ERR_UNSUPPORTED);
            assert_non_null(strstr(err.msg, "IR version 15 is outside the 3..14"));
            continue;
        }
        if (s != LT_OK)
            fail_msg("IR %lld: %s", (long long)ir, err.msg);
        double want[2] = {2.5, 3.25};
        mini_run(m, want);
        lt_model_free(m);
    }
}

/* Element types 17-26 (float8, 4- and 2-bit types) load as a graph input's
 * type and as an initializer's (packed raw_data unpacked); 27-28 (float6)
 * are refused with their ONNX names. */
static void new_element_types_named(void **state)
{
    (void)state;
    static const char *names[] = {"float8e4m3fn", "float8e4m3fnuz", "float8e5m2", "float8e5m2fnuz",
                                  "uint4",        "int4",           "float4e2m1", "float8e8m0",
                                  "uint2",        "int2",           "float6e2m3", "float6e3m2"};
    for (int t = 17; t <= 28; t++) {
        mini b;
        mini_build(&b, 14, false);
        b.in_tt.elem_type = t;
        lt_model *m = NULL;
        lt_err err;
        lt_status s = mini_load(&b, &m, &err);
        char want[64];
        snprintf(want, sizeof want, "has element type %s,", names[t - 17]);
        if (t <= 26) {
            /* held now: whatever the mini graph's op says of it, not the type */
            if (s != LT_OK && strstr(err.msg, "element type"))
                fail_msg("type %d: %s", t, err.msg);
            assert_string_equal(lt_dtype_name((lt_dtype)t), names[t - 17]);
            lt_model_free(m);
            continue;
        }
        assert_int_equal(s, LT_ERR_UNSUPPORTED);
        if (!strstr(err.msg, want))
            fail_msg("type %d: %s", t, err.msg);
    }
    /* initializers: float8e5m2 codes 0x38, 0x40 are 0.5 and 2; float6e2m3 is refused */
    for (int k = 0; k < 2; k++) {
        mini b;
        mini_build(&b, 14, false);
        Onnx__TensorProto init, *inits[1] = {&init};
        onnx__tensor_proto__init(&init);
        int64_t dims[1] = {2};
        uint8_t raw[2] = {0x38, 0x40};
        init.name = "w";
        init.has_data_type = 1;
        init.data_type = k ? 27 : 19;
        init.n_dims = 1;
        init.dims = dims;
        init.has_raw_data = 1;
        init.raw_data.len = 2;
        init.raw_data.data = raw;
        b.graph.n_initializer = 1;
        b.graph.initializer = inits;
        lt_model *m = NULL;
        lt_err err;
        lt_status s = mini_load(&b, &m, &err);
        if (k) {
            assert_int_equal(s, LT_ERR_UNSUPPORTED);
            if (!strstr(err.msg, "element type float6e2m3,"))
                fail_msg("%s", err.msg);
            continue;
        }
        if (s != LT_OK)
            fail_msg("%s", err.msg);
        int p = -1;
        for (int i = 0; i < lt_model_num_params(m); i++)
            if (!strcmp(lt_model_param_name(m, i), "w"))
                p = i;
        assert_true(p >= 0);
        const lt_tensor *w = lt_model_param(m, p);
        assert_int_equal(w->dtype, LT_F8E5M2);
        assert_true(lt_tensor_get_f64(w, 0) == 0.5 && lt_tensor_get_f64(w, 1) == 2.0);
        lt_model_free(m);
    }
}

/* IR 14 puts TypeProto.Opaque (field 7) into every build */
static void opaque_type_refused(void **state)
{
    (void)state;
    mini b;
    mini_build(&b, 14, false);
    b.in_t.value_case = ONNX__TYPE_PROTO__VALUE__NOT_SET;
    b.in_t.tensor_type = NULL;
    b.type_u_b[0] = 0; /* an empty Opaque message */
    b.type_u.tag = 7;
    b.type_u.wire_type = PROTOBUF_C_WIRE_TYPE_LENGTH_PREFIXED;
    b.type_u.len = 1;
    b.type_u.data = b.type_u_b;
    b.in_t.base.n_unknown_fields = 1;
    b.in_t.base.unknown_fields = &b.type_u;
    lt_model *m = NULL;
    lt_err err;
    assert_int_equal(mini_load(&b, &m, &err), LT_ERR_UNSUPPORTED);
    if (!strstr(err.msg, "opaque type"))
        fail_msg("%s", err.msg);
}

/* Two local functions named local.f, overloads "neg" and "abs": a call picks
 * by overload; a call without one finds neither. */
static void function_overloads(void **state)
{
    (void)state;
    static const char *over[2] = {"neg", "abs"};
    static const double want[2][2] = {{2.5, -3.25}, {2.5, 3.25}};
    for (int k = 0; k < 2; k++) {
        mini b;
        mini_build(&b, 10, true);
        unknown_str(&b.node_over, b.node_over_b, 8, over[k]);
        b.node.base.n_unknown_fields = 1;
        b.node.base.unknown_fields = &b.node_over;
        lt_model *m = NULL;
        lt_err err;
        if (mini_load(&b, &m, &err) != LT_OK)
            fail_msg("overload %s: %s", over[k], err.msg);
        mini_run(m, want[k]);
        lt_model_free(m);
    }
    mini b;
    mini_build(&b, 10, true);
    lt_model *m = NULL;
    lt_err err;
    lt_status s = mini_load(&b, &m, &err);
    if (s == LT_OK) {
        /* imported with the call recorded as an op lantern cannot run */
        lt_session *sess = NULL;
        assert_int_not_equal(lt_session_new(m, &sess, &err), LT_OK);
        lt_model_free(m);
    }
    if (!strstr(err.msg, "local"))
        fail_msg("%s", err.msg);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(ir_versions_up_to_14),
        cmocka_unit_test(new_element_types_named),
        cmocka_unit_test(opaque_type_refused),
        cmocka_unit_test(function_overloads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
