/* Export: trained parameters go back into the original ONNX file by name and
 * scope, the outputs of the re-imported model change accordingly, external
 * data is written again beside the output, sparse initializers stay sparse
 * unless changed, and everything outside the initializers is
 * byte-identical. */
#include "testutil.h"
#include "onnx.pb-c.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MODELS LT_SOURCE_DIR "/models/"

static Onnx__ModelProto *unpack_file(const char *path)
{
    size_t n;
    uint8_t *d = tu_slurp(path, &n);
    Onnx__ModelProto *mp = onnx__model_proto__unpack(NULL, n, d);
    free(d);
    assert_non_null(mp);
    return mp;
}

static void write_model(const Onnx__ModelProto *mp, const char *path)
{
    size_t n = onnx__model_proto__get_packed_size(mp);
    uint8_t *d = malloc(n);
    assert_non_null(d);
    onnx__model_proto__pack(mp, d);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(d, 1, n, f), n);
    fclose(f);
    free(d);
}

/* Graphs of the model in import order: the main graph, then attribute graphs depth first. */
static int collect_graphs(Onnx__GraphProto *g, Onnx__GraphProto **out, int n)
{
    out[n++] = g;
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t a = 0; a < g->node[i]->n_attribute; a++)
            if (g->node[i]->attribute[a]->g)
                n = collect_graphs(g->node[i]->attribute[a]->g, out, n);
    return n;
}

/* The packed model with every graph's (sparse) initializers left out. */
static uint8_t *pack_without_initializers(Onnx__ModelProto *mp, size_t *len)
{
    Onnx__GraphProto *gs[64];
    size_t ni[64], ns[64];
    int n = collect_graphs(mp->graph, gs, 0);
    for (int i = 0; i < n; i++) {
        ni[i] = gs[i]->n_initializer;
        ns[i] = gs[i]->n_sparse_initializer;
        gs[i]->n_initializer = gs[i]->n_sparse_initializer = 0;
    }
    *len = onnx__model_proto__get_packed_size(mp);
    uint8_t *d = malloc(*len ? *len : 1);
    assert_non_null(d);
    onnx__model_proto__pack(mp, d);
    for (int i = 0; i < n; i++) {
        gs[i]->n_initializer = ni[i];
        gs[i]->n_sparse_initializer = ns[i];
    }
    return d;
}

static void assert_same_outside_initializers(const char *a, const char *b)
{
    Onnx__ModelProto *ma = unpack_file(a), *mb = unpack_file(b);
    size_t la, lb;
    uint8_t *pa = pack_without_initializers(ma, &la), *pb = pack_without_initializers(mb, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(pa, pb, la);
    free(pa);
    free(pb);
    onnx__model_proto__free_unpacked(ma, NULL);
    onnx__model_proto__free_unpacked(mb, NULL);
}

static Onnx__TensorProto *find_init(Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++)
        if (!strcmp(g->initializer[i]->name, name))
            return g->initializer[i];
    return NULL;
}

static int param_index(const lt_model *m, const char *name)
{
    for (int i = 0; i < lt_model_num_params(m); i++)
        if (!strcmp(lt_model_param_name(m, i), name))
            return i;
    fail_msg("no parameter %s", name);
    return -1;
}

static lt_value *run1(lt_model *m, const char *input_name, const char *input_file)
{
    lt_err err;
    lt_value *x, *y = NULL;
    lt_session *s;
    assert_int_equal(lt_value_load(input_file, &x, &err), LT_OK);
    assert_int_equal(lt_session_new(m, &s, &err), LT_OK);
    if (lt_session_run(s, 1, &input_name, &x, &y, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_session_free(s);
    lt_value_free(x);
    return y;
}

/* No temp file may be left next to the output. */
static void assert_no_temp_files(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    struct dirent *e;
    while ((e = readdir(d)))
        if (strstr(e->d_name, ".tmp."))
            fail_msg("left behind: %s/%s", dir, e->d_name);
    closedir(d);
}

static void rm_tree(const char *dir)
{
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

static Onnx__NodeProto *node_copy(const Onnx__NodeProto *n)
{
    size_t len = onnx__node_proto__get_packed_size(n);
    uint8_t *d = malloc(len ? len : 1);
    assert_non_null(d);
    onnx__node_proto__pack(n, d);
    Onnx__NodeProto *c = onnx__node_proto__unpack(NULL, len, d);
    free(d);
    assert_non_null(c);
    return c;
}

static void set_str(char **field, const char *v)
{
    free(*field);
    *field = strdup(v);
}

/* Export checks every parameter against values set from its index. */
static void check_export_by_index(const char *path, const char *out)
{
    lt_err err;
    lt_model *m, *back;
    if (lt_model_load(path, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    for (int p = 0; p < m->nparams; p++) {
        lt_tensor *t = &m->params[p].data;
        for (int64_t k = 0; k < t->numel; k++)
            lt_tensor_set_f64(t, k, 100.0 * p + (double)k + 0.25);
    }
    if (lt_model_export(m, path, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(lt_model_load(out, &back, &err), LT_OK);
    assert_int_equal(back->nparams, m->nparams);
    for (int p = 0; p < m->nparams; p++) {
        const lt_tensor *t = &back->params[p].data;
        assert_string_equal(back->params[p].name, m->params[p].name);
        for (int64_t k = 0; k < t->numel; k++)
            if (lt_tensor_get_f64(t, k) != 100.0 * p + (double)k + 0.25)
                fail_msg("parameter %d (%s) element %lld is %g", p, back->params[p].name, (long long)k,
                         lt_tensor_get_f64(t, k));
    }
    assert_same_outside_initializers(path, out);
    lt_model_free(m);
    lt_model_free(back);
}

static void changed_bias_moves_outputs(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_export_XXXXXX", out[256];
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/mlp_out.onnx", dir);
    lt_err err;
    lt_model *m, *back;
    assert_int_equal(lt_model_load(MODELS "mlp.onnx", &m, &err), LT_OK);
    lt_value *before = run1(m, "x", MODELS "ref/x8_flat.npy");
    int b = param_index(m, "fc3.bias");
    lt_tensor t = m->params[b].data;
    float nb[10], delta[10];
    for (int c = 0; c < 10; c++) {
        delta[c] = 0.5f * (float)(c + 1) * (c % 2 ? 1.0f : -1.0f);
        nb[c] = ((const float *)t.data)[c] + delta[c];
    }
    t.data = nb;
    t.buf = NULL;
    assert_int_equal(lt_model_set_param(m, b, &t, &err), LT_OK);
    if (lt_model_export(m, MODELS "mlp.onnx", out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_no_temp_files(dir);
    assert_int_equal(lt_model_load(out, &back, &err), LT_OK);
    lt_value *after = run1(back, "x", MODELS "ref/x8_flat.npy");
    const lt_tensor *tb = lt_value_tensor(before), *ta = lt_value_tensor(after);
    assert_int_equal(ta->numel, 80);
    for (int64_t i = 0; i < ta->numel; i++) {
        double d = ((const float *)ta->data)[i] - ((const float *)tb->data)[i];
        if (fabs(d - delta[i % 10]) > 1e-4)
            fail_msg("logit %lld moved by %g, want %g", (long long)i, d, delta[i % 10]);
    }
    /* the bias is raw_data with the new bytes; the other weights are unchanged */
    Onnx__ModelProto *orig = unpack_file(MODELS "mlp.onnx"), *exp = unpack_file(out);
    Onnx__TensorProto *tp = find_init(exp->graph, "fc3.bias");
    assert_non_null(tp);
    assert_true(tp->has_raw_data && tp->raw_data.len == sizeof nb && tp->n_float_data == 0);
    assert_memory_equal(tp->raw_data.data, nb, sizeof nb);
    for (size_t i = 0; i < orig->graph->n_initializer; i++) {
        Onnx__TensorProto *o = orig->graph->initializer[i], *e = exp->graph->initializer[i];
        assert_string_equal(o->name, e->name);
        assert_int_equal(o->n_dims, e->n_dims);
        assert_int_equal(o->data_type, e->data_type);
        if (strcmp(o->name, "fc3.bias") != 0) {
            assert_int_equal(o->raw_data.len, e->raw_data.len);
            assert_memory_equal(o->raw_data.data, e->raw_data.data, o->raw_data.len);
        }
    }
    onnx__model_proto__free_unpacked(orig, NULL);
    onnx__model_proto__free_unpacked(exp, NULL);
    assert_same_outside_initializers(MODELS "mlp.onnx", out);
    lt_value_free(before);
    lt_value_free(after);
    lt_model_free(m);
    lt_model_free(back);
    rm_tree(dir);
}

static void unchanged_model_is_byte_identical(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_export_XXXXXX", out[256];
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/same.onnx", dir);
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(MODELS "cnn.onnx", &m, &err), LT_OK);
    assert_int_equal(lt_model_export(m, MODELS "cnn.onnx", out, &err), LT_OK);
    size_t la, lb;
    uint8_t *a = tu_slurp(MODELS "cnn.onnx", &la), *b = tu_slurp(out, &lb);
    assert_int_equal(la, lb);
    assert_memory_equal(a, b, la);
    free(a);
    free(b);
    lt_model_free(m);
    rm_tree(dir);
}

/* fc1.weight moved to an external file at offset 4096: the export writes
 * external data again, in one file beside out.onnx (w.bin is not next to
 * it): out.onnx.data holds every initializer of 1 KiB or more. */
static void external_data_written_beside(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_export_XXXXXX", other[] = "/tmp/lt_export_XXXXXX", path[256], bin[256], out[256];
    assert_non_null(mkdtemp(dir));
    assert_non_null(mkdtemp(other));
    snprintf(path, sizeof path, "%s/ext.onnx", dir);
    snprintf(bin, sizeof bin, "%s/w.bin", dir);
    snprintf(out, sizeof out, "%s/out.onnx", other);
    Onnx__ModelProto *mp = unpack_file(MODELS "mlp.onnx");
    Onnx__TensorProto *tp = find_init(mp->graph, "fc1.weight");
    assert_true(tp && tp->has_raw_data);
    FILE *f = fopen(bin, "wb");
    assert_non_null(f);
    static const uint8_t pad[4096];
    assert_int_equal(fwrite(pad, 1, sizeof pad, f), sizeof pad);
    assert_int_equal(fwrite(tp->raw_data.data, 1, tp->raw_data.len, f), tp->raw_data.len);
    fclose(f);
    char len[32];
    snprintf(len, sizeof len, "%zu", tp->raw_data.len);
    const char *kv[3][2] = {{"location", "w.bin"}, {"offset", "4096"}, {"length", len}};
    tp->external_data = malloc(3 * sizeof *tp->external_data);
    for (int i = 0; i < 3; i++) {
        Onnx__StringStringEntryProto *e = malloc(sizeof *e);
        onnx__string_string_entry_proto__init(e);
        e->key = strdup(kv[i][0]);
        e->value = strdup(kv[i][1]);
        tp->external_data[i] = e;
    }
    tp->n_external_data = 3;
    tp->has_data_location = 1;
    tp->data_location = ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
    free(tp->raw_data.data);
    tp->raw_data.data = NULL;
    tp->raw_data.len = 0;
    tp->has_raw_data = 0;
    write_model(mp, path);
    onnx__model_proto__free_unpacked(mp, NULL);

    lt_err err;
    lt_model *m, *back, *ref;
    assert_int_equal(lt_model_load(path, &m, &err), LT_OK);
    if (lt_model_export(m, path, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    /* w.bin is not next to out.onnx: the weights must be in out.onnx.data */
    if (lt_model_load(out, &back, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(lt_model_load(MODELS "mlp.onnx", &ref, &err), LT_OK);
    lt_value *a = run1(back, "x", MODELS "ref/x8_flat.npy"), *b = run1(ref, "x", MODELS "ref/x8_flat.npy");
    char why[256];
    if (!lt_value_close(a, b, 0, 0, why, sizeof why))
        fail_msg("%s", why);
    Onnx__ModelProto *e = unpack_file(out);
    for (size_t i = 0; i < e->graph->n_initializer; i++) {
        tp = e->graph->initializer[i];
        bool ext = tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL;
        size_t bytes = 4;
        for (size_t d = 0; d < tp->n_dims; d++)
            bytes *= (size_t)tp->dims[d];
        if (ext != (bytes >= 1024) || ext == (bool)tp->has_raw_data)
            fail_msg("%s: '%s' (%zu bytes) %s", out, tp->name, bytes, ext ? "external" : "inline");
        if (ext && (tp->n_external_data != 3 || strcmp(tp->external_data[0]->key, "location") != 0 ||
                    strcmp(tp->external_data[0]->value, "out.onnx.data") != 0))
            fail_msg("%s: '%s' is not in out.onnx.data", out, tp->name);
    }
    tp = find_init(e->graph, "fc1.weight");
    assert_true(!tp->has_raw_data && tp->n_external_data == 3);
    onnx__model_proto__free_unpacked(e, NULL);
    assert_same_outside_initializers(path, out);
    lt_value_free(a);
    lt_value_free(b);
    lt_model_free(m);
    lt_model_free(back);
    lt_model_free(ref);
    rm_tree(dir);
    rm_tree(other);
}

/* if_model with the else branch's initializer renamed to shadow the outer
 * 'A': each initializer must receive its own parameter. */
static void subgraph_initializers_by_scope(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_export_XXXXXX", path[256], out[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/shadow.onnx", dir);
    snprintf(out, sizeof out, "%s/out.onnx", dir);
    Onnx__ModelProto *mp = unpack_file(MODELS "if_model.onnx");
    Onnx__GraphProto *gs[8];
    int ng = collect_graphs(mp->graph, gs, 0), renamed = 0;
    for (int g = 1; g < ng; g++) {
        for (size_t i = 0; i < gs[g]->n_initializer; i++)
            if (!strcmp(gs[g]->initializer[i]->name, "B")) {
                free(gs[g]->initializer[i]->name);
                gs[g]->initializer[i]->name = strdup("A");
                renamed++;
            }
        for (size_t n = 0; n < gs[g]->n_node; n++)
            for (size_t i = 0; i < gs[g]->node[n]->n_input; i++)
                if (!strcmp(gs[g]->node[n]->input[i], "B")) {
                    free(gs[g]->node[n]->input[i]);
                    gs[g]->node[n]->input[i] = strdup("A");
                }
    }
    assert_int_equal(renamed, 1);
    write_model(mp, path);
    onnx__model_proto__free_unpacked(mp, NULL);

    check_export_by_index(path, out);
    rm_tree(dir);
}

/* Two If nodes, each with a branch initializer 'B', listed in the file in
 * the opposite of the order the importer runs them (the second reads the
 * first's output): names alone would swap the two. */
static void subgraph_initializers_out_of_order(void **state)
{
    (void)state;
    char dir[] = "/tmp/lt_export_XXXXXX", path[256], out[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/two_ifs.onnx", dir);
    snprintf(out, sizeof out, "%s/out.onnx", dir);
    Onnx__ModelProto *mp = unpack_file(MODELS "if_model.onnx");
    Onnx__GraphProto *g = mp->graph;
    assert_int_equal(g->n_node, 3); /* ReduceSum, Greater, If */
    Onnx__NodeProto *rs = g->node[0], *gt = g->node[1], *iff = g->node[2];
    Onnx__NodeProto *rs2 = node_copy(rs), *gt2 = node_copy(gt), *if2 = node_copy(iff);
    set_str(&iff->name, "first");
    set_str(&if2->name, "second");
    set_str(&if2->input[0], "cond2");
    set_str(&if2->output[0], "y2");
    set_str(&rs2->input[0], "y");
    set_str(&rs2->output[0], "s2");
    set_str(&gt2->input[0], "s2");
    set_str(&gt2->output[0], "cond2");
    Onnx__NodeProto **nodes = malloc(6 * sizeof *nodes);
    Onnx__NodeProto *order[6] = {if2, rs2, gt2, rs, gt, iff};
    memcpy(nodes, order, sizeof order);
    free(g->node);
    g->node = nodes;
    g->n_node = 6;
    size_t len = onnx__value_info_proto__get_packed_size(g->output[0]);
    uint8_t *d = malloc(len);
    assert_non_null(d);
    onnx__value_info_proto__pack(g->output[0], d);
    Onnx__ValueInfoProto *o2 = onnx__value_info_proto__unpack(NULL, len, d);
    free(d);
    set_str(&o2->name, "y2");
    g->output = realloc(g->output, 2 * sizeof *g->output);
    g->output[g->n_output++] = o2;
    write_model(mp, path);
    onnx__model_proto__free_unpacked(mp, NULL);
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(path, &m, &err), LT_OK);
    assert_int_equal(m->nparams, 5);
    assert_string_equal(m->params[3].name, "B");
    assert_string_equal(m->params[3].value->block->owner->name, "first");
    lt_model_free(m);
    check_export_by_index(path, out);
    rm_tree(dir);
}

static void sparse_initializers(void **state)
{
    (void)state;
    const char *src = LT_SOURCE_DIR "/tests/data/sparse.onnx";
    char dir[] = "/tmp/lt_export_XXXXXX", out[256];
    assert_non_null(mkdtemp(dir));
    snprintf(out, sizeof out, "%s/out.onnx", dir);
    lt_err err;
    lt_model *m, *back;
    assert_int_equal(lt_model_load(src, &m, &err), LT_OK);
    /* unchanged: stays sparse, the file is the original re-packed */
    assert_int_equal(lt_model_export(m, src, out, &err), LT_OK);
    Onnx__ModelProto *e = unpack_file(out);
    assert_int_equal(e->graph->n_sparse_initializer, 1);
    assert_int_equal(e->graph->n_initializer, 0);
    onnx__model_proto__free_unpacked(e, NULL);
    /* trained: becomes a dense initializer holding the new values */
    int w = param_index(m, "W");
    lt_tensor *t = &m->params[w].data;
    for (int64_t k = 0; k < t->numel; k++)
        lt_tensor_set_f64(t, k, 1.5 + (double)k);
    assert_int_equal(lt_model_export(m, src, out, &err), LT_OK);
    e = unpack_file(out);
    assert_int_equal(e->graph->n_sparse_initializer, 0);
    assert_non_null(find_init(e->graph, "W"));
    onnx__model_proto__free_unpacked(e, NULL);
    assert_int_equal(lt_model_load(out, &back, &err), LT_OK);
    const lt_tensor *bt = &back->params[param_index(back, "W")].data;
    assert_int_equal(bt->numel, t->numel);
    for (int64_t k = 0; k < bt->numel; k++)
        assert_true(lt_tensor_get_f64(bt, k) == 1.5 + (double)k);
    assert_same_outside_initializers(src, out);
    lt_model_free(m);
    lt_model_free(back);
    rm_tree(dir);
}

static void export_errors(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m;
    assert_int_equal(lt_model_load(MODELS "mlp.onnx", &m, &err), LT_OK);
    /* another model's file: its initializers have no parameter here */
    assert_int_equal(lt_model_export(m, MODELS "cnn.onnx", "/tmp/lt_export_never.onnx", &err), LT_ERR_INVALID);
    assert_non_null(strstr(err.msg, "cnn.onnx"));
    assert_int_not_equal(access("/tmp/lt_export_never.onnx", F_OK), 0);
    assert_int_equal(lt_model_export(m, MODELS "mlp.onnx", "/nonexistent/dir/out.onnx", &err), LT_ERR_IO);
    assert_int_equal(lt_model_export(m, "/nonexistent.onnx", "/tmp/lt_export_never.onnx", &err), LT_ERR_IO);
    assert_int_equal(lt_model_export(m, MODELS "ref/x8_flat.npy", "/tmp/lt_export_never.onnx", &err),
                     LT_ERR_INVALID);
    /* a value of the wrong shape is refused */
    float v[3] = {1, 2, 3};
    lt_tensor t = {LT_F32, 1, {3}, 3, v, NULL};
    assert_int_equal(lt_model_set_param(m, param_index(m, "fc3.bias"), &t, &err), LT_ERR_INVALID);
    assert_int_equal(lt_model_set_param(m, 99, &t, &err), LT_ERR_INVALID);
    lt_model_free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(changed_bias_moves_outputs),
        cmocka_unit_test(unchanged_model_is_byte_identical),
        cmocka_unit_test(external_data_written_beside),
        cmocka_unit_test(subgraph_initializers_by_scope),
        cmocka_unit_test(subgraph_initializers_out_of_order),
        cmocka_unit_test(sparse_initializers),
        cmocka_unit_test(export_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
