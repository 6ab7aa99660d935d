/* Dataset benchmark (not a test): the time to open a dataset's train split
 * and to gather one shuffled batch, on the calling thread (OpenMP allowed),
 * serially (as the prefetch worker does), and through the prefetch worker
 * (submit + wait, nothing overlapped).
 *
 *   bench_data [SPEC [BATCH [ITERS]]]     default: fashion-mnist 128 2000
 *
 * Output: "open SPEC ms X" then "gather MODE batch B median_us X min_us Y". */
#include "train/dataset_impl.h"
#include "train/prefetch.h"
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int main(int argc, char **argv)
{
    const char *spec = argc > 1 ? argv[1] : "fashion-mnist";
    int64_t batch = argc > 2 ? atoll(argv[2]) : 128;
    int iters = argc > 3 ? atoi(argv[3]) : 2000;
    lt_err err;
    lt_dataset *d = NULL;
    double best = 1e30;
    for (int r = 0; r < 3; r++) { /* the first open also warms the page cache */
        lt_dataset_free(d);
        double t0 = now();
        if (lt_dataset_open(spec, 0, &d, &err) != LT_OK) {
            fprintf(stderr, "%s\n", err.msg);
            return 2;
        }
        double t = now() - t0;
        best = t < best ? t : best;
    }
    printf("open %s ms %.1f (n %lld, %lld values per sample)\n", spec, best * 1e3, (long long)lt_dataset_size(d),
           (long long)lt_dataset_sample_numel(d));
    int64_t n = lt_dataset_size(d), numel = lt_dataset_sample_numel(d), xd[2] = {batch, numel};
    lt_tensor x, y;
    int tr;
    int64_t td[LT_MAX_RANK], yn = batch;
    lt_dataset_target_shape(d, &tr, td);
    for (int i = 0; i < tr; i++)
        yn *= td[i];
    if (lt_tensor_alloc(&x, LT_F32, 2, xd, &err) != LT_OK ||
        lt_tensor_alloc(&y, lt_dataset_has_classes(d) ? LT_I64 : LT_F32, 1, &yn, &err) != LT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        return 2;
    }
    int64_t *idx = malloc(sizeof *idx * (size_t)batch);
    double *t = malloc(sizeof *t * (size_t)iters);
    lt_prefetch *p;
    if (!idx || !t || lt_prefetch_new(d, &p, &err) != LT_OK) {
        fprintf(stderr, "setup failed\n");
        return 2;
    }
    uint64_t seed = 1;
    static const char *modes[3] = {"openmp", "serial", "prefetch"};
    for (int mode = 0; mode < 3; mode++) {
        for (int it = 0; it < iters; it++) {
            for (int64_t i = 0; i < batch; i++)
                idx[i] = (int64_t)(next(&seed) % (uint64_t)n);
            double t0 = now();
            lt_status s;
            if (mode == 2) {
                s = lt_prefetch_submit(p, idx, batch, &x, &y, &err);
                if (s == LT_OK)
                    s = lt_prefetch_wait(p, &err);
            } else {
                s = lt_ds_gather(d, idx, batch, &x, &y, mode == 0, &err);
            }
            t[it] = now() - t0;
            if (s != LT_OK) {
                fprintf(stderr, "%s\n", err.msg);
                return 2;
            }
        }
        qsort(t, (size_t)iters, sizeof *t, cmp_double);
        printf("gather %s batch %lld median_us %.1f min_us %.1f\n", modes[mode], (long long)batch,
               t[iters / 2] * 1e6, t[0] * 1e6);
    }
    lt_prefetch_free(p);
    lt_tensor_release(&x);
    lt_tensor_release(&y);
    free(idx);
    free(t);
    lt_dataset_free(d);
    return 0;
}
