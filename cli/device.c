/* The device options of the commands that run models (run, grad, train,
 * eval, predict): --device picks the backend every session of the command
 * runs on, --tf32 and --cudnn-benchmark tune the cuda backend. They map
 * onto the environment the runtime reads (LANTERN_BACKEND, LANTERN_TF32,
 * LANTERN_CUDNN_BENCHMARK), set before the first session opens; the
 * backend is opened here once, so that a device that cannot run is one
 * line and exit 2 before anything is loaded. */
#include "options.h"
#include "runtime/backend.h"
#include <stdlib.h>
#include <string.h>

enum { D_DEVICE = LT_CLI_DEVICE_IDS - 2, D_TF32, D_BENCHMARK };

const lt_cli_opt lt_cli_device_opts[] = {
    {D_DEVICE, "--device", "DEV",
     "where the model runs: cpu, or cuda[:N] (CUDA device N, 0 by default; needs a lantern built with the cuda "
     "backend and a GPU); cpu-device runs the CPU kernels behind the device path",
     "cpu, or LANTERN_BACKEND", 0},
    {D_TF32, "--tf32", NULL, "let float32 matrix products and convolutions use TF32 tensor cores (cuda only)",
     "off: full float32", 0},
    {D_BENCHMARK, "--cudnn-benchmark", "on|off",
     "choose each convolution's cuDNN algorithm by timing them on its first shape (on) or by cuDNN's "
     "heuristics (off; cuda only)",
     "on", 0},
    {0, NULL, NULL, NULL, NULL, 0},
};

/* cpu, cpu-device, cuda or cuda:N with N a whole number */
static int device_name_ok(const char *s)
{
    if (!strcmp(s, "cpu") || !strcmp(s, "cpu-device") || !strcmp(s, "cuda"))
        return 1;
    if (strncmp(s, "cuda:", 5) != 0 || !s[5] || strlen(s + 5) > 4)
        return 0;
    for (const char *p = s + 5; *p; p++)
        if (*p < '0' || *p > '9')
            return 0;
    return 1;
}

int lt_cli_device_opt(const lt_cli_cmd *cmd, int id, const char *val, lt_cli_device *d)
{
    char shown[256];
    switch (id) {
    case D_DEVICE:
        if (!device_name_ok(val)) {
            fprintf(stderr, "lantern %s: --device: unknown device '%s' (cpu, cuda or cuda:N)\n", cmd->name,
                    lt_str_printable(val, shown, sizeof shown));
            return 0;
        }
        d->device = val;
        return 1;
    case D_TF32: d->tf32 = 1; return 1;
    case D_BENCHMARK: {
        static const char *const onoff[] = {"off", "on"};
        return lt_cli_pick("--cudnn-benchmark", val, onoff, 2, &d->benchmark);
    }
    default: return 0;
    }
}

int lt_cli_device_apply(const lt_cli_cmd *cmd, const lt_cli_device *d)
{
    /* the cuda backend reads these once, as it opens below */
    if ((d->tf32 && setenv("LANTERN_TF32", "1", 1) != 0) ||
        (d->benchmark >= 0 && setenv("LANTERN_CUDNN_BENCHMARK", d->benchmark ? "1" : "0", 1) != 0)) {
        fprintf(stderr, "lantern %s: cannot set the device options\n", cmd->name);
        return 0;
    }
    if (!d->device)
        return 1;
    lt_err err;
    err.msg[0] = 0;
    if (!lt_backend_open(d->device, &err)) {
        fprintf(stderr, "lantern %s: --device %s: %s\n", cmd->name, d->device, err.msg);
        return 0;
    }
    if (setenv("LANTERN_BACKEND", d->device, 1) != 0) {
        fprintf(stderr, "lantern %s: cannot set the device\n", cmd->name);
        return 0;
    }
    return 1;
}
