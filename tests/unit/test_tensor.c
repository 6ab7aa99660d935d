/* Tensors: half-precision conversions, storage sharing, element access. */
#include "testutil.h"
#include <math.h>

static void f16_roundtrip(void **state)
{
    (void)state;
    /* every finite half converts to float and back unchanged */
    for (uint32_t h = 0; h < 0x10000; h++) {
        if ((h & 0x7c00) == 0x7c00)
            continue;
        assert_int_equal(lt_f32_to_f16(lt_f16_to_f32((uint16_t)h)), h);
    }
    assert_true(fabsf(lt_f16_to_f32(lt_f32_to_f16(0.1f)) - 0.0999755859375f) < 1e-9f);
    assert_int_equal(lt_f32_to_f16(65520.0f), 0x7c00); /* rounds to inf */
}

static void bf16_values(void **state)
{
    (void)state;
    assert_true(lt_bf16_to_f32(lt_f32_to_bf16(1.0f)) == 1.0f);
    assert_true(fabsf(lt_bf16_to_f32(lt_f32_to_bf16(3.14159f)) - 3.140625f) < 1e-6f);
}

static void views_share(void **state)
{
    (void)state;
    int64_t d[2] = {3, 4}, d2[1] = {12};
    lt_value *v = tu_rand(LT_F32, 2, d, -1, 1, 7);
    lt_tensor w;
    lt_tensor_view(&w, &v->t, 1, d2);
    ((float *)w.data)[5] = 42.0f;
    assert_true(tu_get(v, 5) == 42.0);
    lt_tensor_release(&w);
    lt_value_free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(f16_roundtrip),
        cmocka_unit_test(bf16_values),
        cmocka_unit_test(views_share),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
