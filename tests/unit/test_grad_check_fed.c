/* lt_grad_check (grad --check) of a model whose initializers are also
 * graph inputs (tests/data/defaults_inputs.onnx: IR 3, as
 * keep_initializers_as_inputs writes it), with W1 fed at run time: the
 * finite differences move the fed W1, which the model runs with, not the
 * file's (moving that one left the loss unchanged and reported a relative
 * error of 1 on a right gradient). */
#include "testutil.h"
#include <stdlib.h>

#define MODEL LT_SOURCE_DIR "/tests/data/defaults_inputs.onnx"

static void fed_initializer_checked(void **state)
{
    (void)state;
    int64_t xd[2] = {8, 4}, wd[2] = {4, 6};
    lt_value *in[2] = {tu_rand(LT_F32, 2, xd, -2, 2, 31), tu_rand(LT_F32, 2, wd, -1, 1, 32)};
    const char *names[2] = {"x", "W1"};
    lt_grad_opts o = {LT_LOSS_SUM, 0, NULL, 0};
    lt_gradcheck_row *rows = NULL;
    int nrows = 0;
    lt_err err;
    if (lt_grad_check(MODEL, &o, 2, names, in, 64, &rows, &nrows, &err) != LT_OK)
        fail_msg("%s", err.msg);
    int seen = 0;
    for (int r = 0; r < nrows; r++) {
        print_message("%-4s rel.err %.3g in float64, %.3g in float32\n", rows[r].name, rows[r].err64, rows[r].err32);
        if (!(rows[r].err64 < 1e-6) || !(rows[r].err32 < 1e-2))
            fail_msg("%s: rel.err %.3g in float64, %.3g in float32", rows[r].name, rows[r].err64, rows[r].err32);
        seen += rows[r].checked > 0;
    }
    assert_int_equal(seen, 4); /* W1, b1, W2, b2 */
    free(rows);
    lt_value_free(in[0]);
    lt_value_free(in[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(fed_initializer_checked)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
