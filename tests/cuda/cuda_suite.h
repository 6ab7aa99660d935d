/* How a CUDA suite ends when the cuda backend does not open. Without a
 * device that is expected (CI, a laptop): the suite is skipped, exit 77,
 * which CTest reports as skipped. On a machine that has a GPU the same exit
 * would hide a broken driver, CUDA runtime or cuDNN behind "skipped" and
 * let scripts/gpu-check.sh pass; there LANTERN_CUDA_REQUIRED=1 (set by
 * gpu-check when nvidia-smi finds a GPU) makes it a failure, exit 1, with
 * why the backend did not open. Included by every suite in tests/cuda. */
#ifndef LT_TESTS_CUDA_SUITE_H
#define LT_TESTS_CUDA_SUITE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exit status of a suite whose backend did not open; why is the
 * opening's error message. */
static inline int cuda_suite_unopened(const char *why)
{
    const char *req = getenv("LANTERN_CUDA_REQUIRED");
    /* off as the backend's switches are: unset, empty, 0, off or false */
    if (req && *req && strcmp(req, "0") != 0 && strcmp(req, "off") != 0 && strcmp(req, "false") != 0) {
        printf("FAILED: LANTERN_CUDA_REQUIRED=%s but the cuda backend did not open: %s\n", req, why);
        fflush(stdout);
        return 1;
    }
    printf("skipped: %s\n", why);
    return 77;
}

#endif
