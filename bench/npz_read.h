/* A small reader for the .npz archives bench/make_bench_models.py writes
 * (numpy.savez: a zip of stored, uncompressed .npy members), for the
 * benchmarks only; the library's datasets have their own reader. */
#ifndef BENCH_NPZ_READ_H
#define BENCH_NPZ_READ_H

#include "lantern.h"

typedef struct bench_array {
    char name[128];   /* member name without ".npy" */
    lt_tensor t;      /* data borrowed from the archive's buffer */
} bench_array;

typedef struct bench_npz {
    unsigned char *buf; /* the whole file */
    int n;
    bench_array *a;
} bench_npz;

/* Reads every member (little-endian float32/float64/int64/int32/uint8/bool
 * arrays, C order). 0 on success; otherwise -1 with a message in err. */
int bench_npz_open(const char *path, bench_npz *z, char *err, size_t errlen);
void bench_npz_close(bench_npz *z);
const bench_array *bench_npz_find(const bench_npz *z, const char *name);

#endif
