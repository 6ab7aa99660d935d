/* The training hooks of the device-path CPU backend (cpu-device) against
 * the host optimizer, bit for bit: every optimizer with weight decay, the
 * clipping norm, gradient accumulation, and the state's round trip
 * (optim_backend_check.h; tests/cuda/test_cuda_optim.c checks the cuda
 * backend's kernels the same way). */
#include "optim_backend_check.h"

static void cpu_device_matches_host(void **state)
{
    (void)state;
    const lt_backend *be = lt_backend_cpu_device();
    assert_non_null(be->optim_update);
    optim_backend_check(be, 0);
}

/* the host backend has no hooks: the trainer keeps everything on the host */
static void host_has_none(void **state)
{
    (void)state;
    const lt_backend *be = lt_backend_cpu();
    assert_null(be->optim_update);
    assert_null(be->sum_squares);
    assert_null(be->accumulate);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cpu_device_matches_host),
        cmocka_unit_test(host_has_none),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
