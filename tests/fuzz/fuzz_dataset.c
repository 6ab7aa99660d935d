/* libFuzzer target for the dataset readers: the first byte picks the format
 * (npz, IDX gzip pair, onnx-pb pair), the rest becomes its file(s) in a
 * private temp folder; opening both splits and gathering from them must give
 * data or a one-line error, never a crash, a leak or undefined behaviour. */
#include "runtime/runtime.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[64];

static void put(const char *name, const uint8_t *d, size_t n)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (n && fwrite(d, 1, n, f) != n)
        abort();
    fclose(f);
}

static void try_spec(const char *spec)
{
    for (int split = 0; split < 2; split++) {
        lt_err err;
        err.msg[0] = 0;
        lt_dataset *d = NULL;
        lt_status st = lt_dataset_open(spec, split, &d, &err);
        if (st != LT_OK) {
            if (d || !err.msg[0] || strchr(err.msg, '\n'))
                abort();
            continue;
        }
        int64_t n = lt_dataset_size(d), numel = lt_dataset_sample_numel(d);
        if (n > 0 && numel <= (1 << 16)) {
            int64_t idx[3] = {0, n - 1, n / 2}, k = n < 3 ? n : 3;
            int tr;
            int64_t td[16], tnumel = 1;
            lt_dataset_target_shape(d, &tr, td);
            for (int i = 0; !lt_dataset_has_classes(d) && i < tr; i++)
                tnumel *= td[i];
            lt_tensor x = {0}, y = {0};
            int64_t xd = k * numel, yd = k * (lt_dataset_has_classes(d) ? 1 : tnumel);
            if (lt_tensor_alloc(&x, LT_F32, 1, &xd, &err) == LT_OK &&
                lt_tensor_alloc(&y, lt_dataset_has_classes(d) ? LT_I64 : LT_F32, 1, &yd, &err) == LT_OK)
                lt_dataset_gather(d, idx, k, &x, &y, &err);
            lt_tensor_release(&x);
            lt_tensor_release(&y);
        }
        lt_dataset_free(d);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "/tmp/lt_fuzz_ds_%d", (int)getpid());
        char cmd[96];
        snprintf(cmd, sizeof cmd, "rm -rf %s && mkdir -p %s", dir, dir);
        if (system(cmd) != 0)
            abort();
    }
    if (size < 3)
        return 0;
    char spec[96];
    /* two files: the split point is the second and third byte */
    size_t cut = ((size_t)data[1] << 8 | data[2]) % (size - 2);
    const uint8_t *a = data + 3, *b = data + 3 + cut;
    size_t an = cut, bn = size - 3 - cut;
    switch (data[0] % 3) {
    case 0:
        put("d.npz", data + 1, size - 1);
        snprintf(spec, sizeof spec, "npz=%s/d.npz", dir);
        break;
    case 1:
        put("train-images-idx3-ubyte.gz", a, an);
        put("train-labels-idx1-ubyte.gz", b, bn);
        put("t10k-images-idx3-ubyte.gz", a, an);
        put("t10k-labels-idx1-ubyte.gz", b, bn);
        snprintf(spec, sizeof spec, "mnist=%s", dir);
        break;
    default:
        put("x.pb", a, an);
        put("y.pb", b, bn);
        snprintf(spec, sizeof spec, "onnx-pb=%s", dir);
        break;
    }
    try_spec(spec);
    return 0;
}
