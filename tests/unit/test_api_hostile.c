/* The public API against a careless embedding program, through lantern.h
 * alone:
 * - a caller's tensor whose numel disagrees with its dims is refused
 *   wherever one enters the library (lt_value_from_tensor,
 *   lt_model_set_param, lt_trainer_set_param, lt_dataset_from_arrays),
 *   naming both, instead of copied past either end;
 * - NULL for a pointer a function needs is LT_ERR_INVALID naming the
 *   function and the argument; an index out of range gives NULL / -1 from
 *   the model's accessors, as lt_model_param does;
 * - an empty batch, an input named twice and an input of the wrong shape
 *   are refused with messages that say so. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <lantern.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MLP LT_SOURCE_DIR "/models/mlp.onnx"

/* got must be want, with a one-line message holding every fragment */
static void fails(lt_status got, lt_status want, const lt_err *err, const char *frag, ...)
{
    if (got != want)
        fail_msg("status %d (want %d): %s", got, want, got == LT_OK ? "(ok)" : err->msg);
    assert_null(strchr(err->msg, '\n'));
    va_list ap;
    va_start(ap, frag);
    for (const char *f = frag; f; f = va_arg(ap, const char *))
        if (!strstr(err->msg, f))
            fail_msg("message '%s' lacks '%s'", err->msg, f);
    va_end(ap);
}
#define FAILS(call, want, ...)                                                                                         \
    do {                                                                                                               \
        memset(&err, 0, sizeof err);                                                                                   \
        fails((call), want, &err, __VA_ARGS__, NULL);                                                                  \
    } while (0)

static lt_model *load(void)
{
    lt_err err;
    lt_model *m = NULL;
    if (lt_model_load(MLP, &m, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return m;
}

/* a float32 value of the given shape, filled with small numbers */
static lt_value *f32(int rank, int64_t d0, int64_t d1)
{
    lt_tensor t = {.dtype = LT_F32, .rank = rank, .dims = {d0, d1}, .numel = rank == 1 ? d0 : d0 * d1};
    float *x = calloc((size_t)(t.numel ? t.numel : 1), sizeof *x);
    for (int64_t i = 0; i < t.numel; i++)
        x[i] = (float)(i % 17) / 17.0f;
    t.data = x;
    lt_err err;
    lt_value *v = NULL;
    if (lt_value_from_tensor(&t, &v, &err) != LT_OK)
        fail_msg("%s", err.msg);
    free(x);
    return v;
}

static lt_value *labels(int64_t n)
{
    int64_t *y = calloc((size_t)(n ? n : 1), sizeof *y);
    for (int64_t i = 0; i < n; i++)
        y[i] = i % 10;
    lt_tensor t = {.dtype = LT_I64, .rank = 1, .dims = {n}, .numel = n, .data = y};
    lt_err err;
    lt_value *v = NULL;
    if (lt_value_from_tensor(&t, &v, &err) != LT_OK)
        fail_msg("%s", err.msg);
    free(y);
    return v;
}

static lt_trainer *trainer(void)
{
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_err err;
    lt_trainer *t = NULL;
    if (lt_trainer_new(MLP, &o, &t, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return t;
}

static void numel_disagreeing_with_dims(void **state)
{
    (void)state;
    lt_err err;
    static float big[1024];
    lt_value *v = (lt_value *)0x1;
    /* more elements than the dims hold: the copy would overflow the value */
    lt_tensor t = {.dtype = LT_F32, .rank = 1, .dims = {4}, .numel = 1024, .data = big};
    FAILS(lt_value_from_tensor(&t, &v, &err), LT_ERR_INVALID, "lt_value_from_tensor", "numel is 1024", "[4]",
          "hold 4");
    assert_null(v);
    /* fewer: the value's tail would be left unwritten */
    lt_tensor s = {.dtype = LT_F32, .rank = 2, .dims = {10, 10}, .numel = 4, .data = big};
    FAILS(lt_value_from_tensor(&s, &v, &err), LT_ERR_INVALID, "numel is 4", "[10,10]", "hold 100");
    lt_tensor z = {.dtype = LT_F32, .rank = 1, .dims = {4}, .numel = 4, .data = NULL};
    FAILS(lt_value_from_tensor(&z, &v, &err), LT_ERR_INVALID, "lt_value_from_tensor", "data is NULL");

    /* a parameter's dims with too few elements behind them */
    lt_model *m = load();
    lt_tensor p = *lt_model_param(m, 1); /* fc1.bias [512] */
    p.buf = NULL;
    p.numel = 4;
    p.data = big;
    FAILS(lt_model_set_param(m, 1, &p, &err), LT_ERR_INVALID, "fc1.bias", "numel 4", "[512]", "512 elements");
    p.numel = 512;
    p.data = NULL;
    FAILS(lt_model_set_param(m, 1, &p, &err), LT_ERR_INVALID, "lt_model_set_param", "data NULL");
    FAILS(lt_model_set_param(m, 1, NULL, &err), LT_ERR_INVALID, "lt_model_set_param", "NULL");
    lt_model_free(m);

    lt_trainer *tr = trainer();
    p.numel = 4;
    p.data = big;
    FAILS(lt_trainer_set_param(tr, "fc1.bias", &p, &err), LT_ERR_INVALID, "fc1.bias", "numel 4", "[512]");
    lt_trainer_free(tr);

    /* arrays: x's numel against its dims, then y's */
    float x[12] = {0};
    int64_t y[3] = {0, 1, 2};
    lt_tensor xt = {.dtype = LT_F32, .rank = 2, .dims = {3, 4}, .numel = 1024, .data = big};
    lt_tensor yt = {.dtype = LT_I64, .rank = 1, .dims = {3}, .numel = 3, .data = y};
    lt_dataset *d = (lt_dataset *)0x1;
    FAILS(lt_dataset_from_arrays(&xt, &yt, NULL, &d, &err), LT_ERR_INVALID, "lt_dataset_from_arrays",
          "x's numel is 1024", "3x4", "12 elements");
    assert_null(d);
    xt.numel = 12;
    xt.data = x;
    yt.numel = 1;
    FAILS(lt_dataset_from_arrays(&xt, &yt, NULL, &d, &err), LT_ERR_INVALID, "y's numel is 1", "hold 3");
}

static void null_arguments_refused(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m = NULL;
    FAILS(lt_model_load(NULL, &m, &err), LT_ERR_INVALID, "lt_model_load", "path is NULL");
    FAILS(lt_model_load(MLP, NULL, &err), LT_ERR_INVALID, "lt_model_load", "out is NULL");
    FAILS(lt_model_load_buffer(NULL, 10, "x", NULL, &m, &err), LT_ERR_INVALID, "lt_model_load_buffer",
          "data is NULL");
    char junk[4] = {0};
    FAILS(lt_model_load_buffer(junk, sizeof junk, "x", NULL, NULL, &err), LT_ERR_INVALID, "lt_model_load_buffer",
          "out is NULL");
    lt_session *s = NULL;
    FAILS(lt_session_new(NULL, &s, &err), LT_ERR_INVALID, "lt_session_new", "model is NULL");

    lt_value *v = NULL;
    FAILS(lt_value_from_tensor(NULL, &v, &err), LT_ERR_INVALID, "lt_value_from_tensor", "t is NULL");
    float one = 1;
    lt_tensor t1 = {.dtype = LT_F32, .rank = 0, .numel = 1, .data = &one};
    FAILS(lt_value_from_tensor(&t1, NULL, &err), LT_ERR_INVALID, "lt_value_from_tensor", "out is NULL");
    FAILS(lt_value_load(NULL, &v, &err), LT_ERR_INVALID, "lt_value_load", "path is NULL");
    FAILS(lt_value_save_npy(NULL, "x.npy", &err), LT_ERR_INVALID, "lt_value_save_npy", "value is NULL");

    /* the void and int functions: no crash, a plain answer */
    char buf[64];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    lt_value_describe(NULL, 3, f);
    fclose(f);
    assert_string_equal(buf, "null");
    lt_value *a = f32(1, 3, 0);
    char why[128] = "";
    assert_int_equal(lt_value_close(NULL, a, 0, 0, why, sizeof why), 0);
    assert_non_null(strstr(why, "got is NULL"));
    assert_int_equal(lt_value_close(a, NULL, 0, 0, NULL, 0), 0);
    lt_value_free(a);

    /* a NULL model has no inputs, outputs or parameters */
    assert_int_equal(lt_model_num_inputs(NULL), 0);
    assert_int_equal(lt_model_num_outputs(NULL), 0);
    assert_int_equal(lt_model_num_params(NULL), 0);
    assert_null(lt_model_input_name(NULL, 0));
    assert_null(lt_model_output_name(NULL, 0));
    assert_null(lt_model_param_name(NULL, 0));
    assert_null(lt_model_param(NULL, 0));
    assert_int_equal(lt_model_input_kind(NULL, 0), (lt_value_kind)-1);
    assert_int_equal(lt_model_output_kind(NULL, 0), (lt_value_kind)-1);
    int rank = 7;
    lt_model_input_shape(NULL, 0, &rank, NULL);
    assert_int_equal(rank, -1);
    FAILS(lt_model_set_param(NULL, 0, NULL, &err), LT_ERR_INVALID, "lt_model_set_param", "model is NULL");

    lt_train_opts o;
    lt_train_defaults(&o);
    lt_trainer *tr = NULL;
    FAILS(lt_trainer_new(MLP, NULL, &tr, &err), LT_ERR_INVALID, "lt_trainer_new", "o is NULL");
    FAILS(lt_trainer_new(NULL, &o, &tr, &err), LT_ERR_INVALID, "lt_trainer_new", "model_path is NULL");
    const char *xl[2] = {"x", "labels"};
    lt_value *in[2] = {NULL, NULL};
    double loss = 0;
    FAILS(lt_trainer_step(NULL, 0.1, 2, xl, in, &loss, &err), LT_ERR_INVALID, "lt_trainer_step",
          "trainer is NULL");
    assert_true(isnan(loss));
    tr = trainer();
    lt_tensor b = *lt_model_param(lt_trainer_model(tr), 1);
    FAILS(lt_trainer_set_param(tr, NULL, &b, &err), LT_ERR_INVALID, "lt_trainer_set_param", "name is NULL");
    FAILS(lt_trainer_step(tr, 0.1, 2, NULL, in, &loss, &err), LT_ERR_INVALID, "lt_trainer_step", "names is NULL");
    FAILS(lt_trainer_save_checkpoint(tr, NULL, &err), LT_ERR_INVALID, "lt_trainer_save_checkpoint", "dir is NULL");
    lt_trainer_free(tr);

    lt_dataset *d = NULL;
    FAILS(lt_dataset_open(NULL, 0, &d, &err), LT_ERR_INVALID, "lt_dataset_open", "spec is NULL");
    assert_int_equal(lt_dataset_has_split(NULL, 0), 0);
    float x[12] = {0};
    int64_t y[3] = {0, 1, 2};
    lt_tensor xt = {.dtype = LT_F32, .rank = 2, .dims = {3, 4}, .numel = 12, .data = x};
    lt_tensor yt = {.dtype = LT_I64, .rank = 1, .dims = {3}, .numel = 3, .data = y};
    if (lt_dataset_from_arrays(&xt, &yt, NULL, &d, &err) != LT_OK)
        fail_msg("%s", err.msg);
    lt_value *bx = NULL, *by = NULL;
    FAILS(lt_dataset_batch(d, 0, 2, 2, NULL, &bx, &by, &err), LT_ERR_INVALID, "lt_dataset_batch", "shape is NULL");

    /* no dataset named and none given in memory */
    o.data = NULL;
    lt_model *trained = NULL;
    FAILS(lt_train(MLP, &o, &trained, &err), LT_ERR_INVALID, "lt_train", "o->data and o->train_set are both NULL");
    o.train_set = d;
    FAILS(lt_train(MLP, &o, NULL, &err), LT_ERR_INVALID, "lt_train", "trained is NULL");
    lt_dataset_free(d);
    m = load();
    lt_eval_opts e;
    memset(&e, 0, sizeof e);
    lt_eval_result r;
    FAILS(lt_model_evaluate(m, &e, &r, &err), LT_ERR_INVALID, "lt_model_evaluate", "o->data is NULL");
    lt_prediction pred[2];
    int64_t n = -1;
    FAILS(lt_model_predict(m, &e, 2, pred, &n, &err), LT_ERR_INVALID, "lt_model_predict: o->data is NULL");
    assert_int_equal(n, 0);
    lt_loss_kind k = LT_LOSS_SUM;
    assert_int_equal(lt_loss_parse(NULL, &k), 0);
    assert_null(lt_value_to_f64(NULL));
    lt_model_free(m);
}

static void session_run_arguments(void **state)
{
    (void)state;
    lt_err err;
    lt_model *m = load();
    lt_session *s = NULL;
    FAILS(lt_session_new(m, NULL, &err), LT_ERR_INVALID, "lt_session_new", "out is NULL");
    if (lt_session_new(m, &s, &err) != LT_OK)
        fail_msg("%s", err.msg);
    const char *x1[1] = {"x"}, *xx[2] = {"x", "x"};
    lt_value *none[1] = {NULL}, *out[1] = {NULL};
    lt_value *a = f32(2, 2, 784), *b = f32(2, 3, 784), *ab[2] = {a, b};
    FAILS(lt_session_run(NULL, 1, x1, &a, out, &err), LT_ERR_INVALID, "lt_session_run", "session is NULL");
    FAILS(lt_session_run(s, 1, NULL, &a, out, &err), LT_ERR_INVALID, "lt_session_run", "names is NULL");
    FAILS(lt_session_run(s, 1, x1, none, out, &err), LT_ERR_INVALID, "lt_session_run", "input 0 ('x') is NULL");
    FAILS(lt_session_run(s, 1, x1, &a, NULL, &err), LT_ERR_INVALID, "lt_session_run", "outputs is NULL");
    FAILS(lt_session_run(s, -5, x1, &a, out, &err), LT_ERR_INVALID, "lt_session_run", "n is -5");
    /* named twice: not the second silently */
    FAILS(lt_session_run(s, 2, xx, ab, out, &err), LT_ERR_INVALID, "input 'x' is given twice");
    assert_null(out[0]);
    /* one dim wrong: the message shows the shape given */
    lt_value *w = f32(2, 4, 100);
    FAILS(lt_session_run(s, 1, x1, &w, out, &err), LT_ERR_INVALID, "input 'x' expects float32[", "got float32[4,100]");
    if (lt_session_run(s, 1, x1, &a, out, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(lt_value_tensor(out[0])->dims[0], 2);
    lt_value_free(out[0]);
    lt_value_free(w);
    lt_value_free(a);
    lt_value_free(b);
    lt_session_free(s);
    lt_model_free(m);
}

static void accessors_out_of_range(void **state)
{
    (void)state;
    lt_model *m = load();
    int ni = lt_model_num_inputs(m), no = lt_model_num_outputs(m);
    assert_non_null(lt_model_input_name(m, 0));
    assert_null(lt_model_input_name(m, ni));
    assert_null(lt_model_input_name(m, -1));
    assert_null(lt_model_output_name(m, no));
    assert_null(lt_model_output_name(m, -1));
    assert_true((int)lt_model_input_kind(m, ni + 98) == -1);
    assert_true((int)lt_model_output_kind(m, -1) == -1);
    assert_int_equal(lt_model_input_kind(m, 0), LT_VALUE_TENSOR);
    int rank = 77;
    int64_t dims[LT_MAX_RANK];
    lt_model_input_shape(m, 99, &rank, dims);
    assert_int_equal(rank, -1);
    lt_model_input_shape(m, 0, &rank, dims);
    assert_int_equal(rank, 2);
    /* the count of unsupported nodes is optional */
    FILE *f = fopen("/dev/null", "w");
    assert_non_null(f);
    lt_model_summary(m, f, NULL);
    fclose(f);
    lt_model_free(m);
}

static void empty_batch_refused(void **state)
{
    (void)state;
    lt_err err;
    lt_trainer *t = trainer();
    const char *xl[2] = {"x", "labels"};
    lt_value *in[2] = {f32(2, 0, 784), labels(0)};
    double loss = 0;
    FAILS(lt_trainer_step(t, 0.05, 2, xl, in, &loss, &err), LT_ERR_INVALID, "lt_trainer_step", "input 'x'",
          "batch of 0");
    assert_true(isnan(loss));
    assert_int_equal(lt_trainer_num_steps(t), 0);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    /* a real batch still steps */
    in[0] = f32(2, 4, 784);
    in[1] = labels(4);
    if (lt_trainer_step(t, 0.05, 2, xl, in, &loss, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_true(isfinite(loss));
    assert_int_equal(lt_trainer_num_steps(t), 1);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
    lt_trainer_free(t);
}

int main(void)
{
    lt_set_num_threads(1);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(numel_disagreeing_with_dims),
        cmocka_unit_test(null_arguments_refused),
        cmocka_unit_test(session_run_arguments),
        cmocka_unit_test(accessors_out_of_range),
        cmocka_unit_test(empty_batch_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
