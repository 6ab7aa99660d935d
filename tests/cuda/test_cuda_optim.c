/* The cuda backend's training hooks (cuda/optim.cu, cuda/train.c) against
 * the host optimizer: every optimizer with weight decay, float32 and
 * float64, the clipping norm, accumulation and the state's round trip
 * (tests/unit/optim_backend_check.h), within 1e-6 relative (the GPU may
 * fuse multiply-adds). Skipped (exit 77) without a CUDA device (failed
 * under LANTERN_CUDA_REQUIRED=1, cuda_suite.h). */
#include "optim_backend_check.h"
#include "cuda_suite.h"
#include <stdio.h>

static const lt_backend *be;

static void cuda_matches_host(void **state)
{
    (void)state;
    optim_backend_check(be, 1e-6);
}

int main(void)
{
    lt_err err;
    be = lt_backend_cuda(0, &err);
    if (!be)
        return cuda_suite_unopened(err.msg);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(cuda_matches_host),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
