/* Float32 matrix products through lt_linalg_gemm, lantern's own kernels
 * (the default) against OpenBLAS (LANTERN_GEMM=blas), on 1 and 2 threads:
 * the shapes of the MLP, CNN, RNN and transformer benchmarks and square
 * ones. LANTERN_GEMM is read once per process, so each setting runs in a
 * child process (this program again, with --child), one shape at a time,
 * the two back to back in each round; a shape's figure is the median over
 * its reps, and the table shows the median over the rounds.
 *   bench_gemm [--reps N] [--rounds R] [--filter SUBSTR] */
#include "lantern.h"
#include "runtime/cpu/linalg_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef struct {
    const char *what;
    int ta, tb;
    int64_t M, N, K;
} shape;

static const shape shapes[] = {
    {"mlp fc1 fwd", 0, 1, 128, 512, 784},
    {"mlp fc2 fwd", 0, 1, 128, 256, 512},
    {"mlp fc2 dX", 0, 0, 128, 512, 256},
    {"mlp fc1 dW", 1, 0, 512, 784, 128},
    {"mlp fc2 dW", 1, 0, 256, 512, 128},
    {"conv1 fwd", 0, 0, 32, 576, 25},
    {"conv2 fwd", 0, 0, 64, 64, 800},
    {"conv2 dW", 0, 1, 64, 800, 64},
    {"conv2 dX", 1, 0, 800, 64, 64},
    {"rnn nn", 0, 0, 128, 128, 128},
    {"rnn nt", 0, 1, 128, 128, 128},
    {"rnn tn", 1, 0, 128, 128, 128},
    {"rnn tt", 1, 1, 128, 128, 128},
    {"tfm qkv", 0, 1, 3584, 128, 32},
    {"tfm out", 0, 1, 3584, 32, 128},
    {"tfm dW", 1, 0, 32, 128, 3584},
    {"narrow dW", 1, 0, 512, 28, 3584},
    {"narrow tb", 0, 1, 128, 20, 1000},
    {"sq 256", 0, 0, 256, 256, 256},
    {"sq 512", 0, 0, 512, 512, 512},
    {"sq 1024", 0, 0, 1024, 1024, 1024},
};
#define NSHAPES (int)(sizeof shapes / sizeof shapes[0])
#define MAX_ROUNDS 15

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* one shape's median GFLOP/s over reps */
static double time_shape(const shape *s, int reps)
{
    int64_t na = s->M * s->K, nb = s->K * s->N, nc = s->M * s->N;
    float *A = malloc(sizeof(float) * (size_t)na), *B = malloc(sizeof(float) * (size_t)nb);
    float *C = malloc(sizeof(float) * (size_t)nc);
    double *t = malloc(sizeof(double) * (size_t)reps);
    if (!A || !B || !C || !t) {
        free(A), free(B), free(C), free(t);
        return 0;
    }
    uint32_t x = 12345;
    for (int64_t i = 0; i < na; i++)
        A[i] = (float)((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    for (int64_t i = 0; i < nb; i++)
        B[i] = (float)((x = x * 1664525u + 1013904223u) >> 8) / 16777216.0f - 0.5f;
    memset(C, 0, sizeof(float) * (size_t)nc);
    int64_t lda = s->ta ? s->M : s->K, ldb = s->tb ? s->K : s->N;
    for (int r = 0; r < 5; r++)
        lt_linalg_gemm(LT_F32, s->ta, s->tb, s->M, s->N, s->K, 1.0, A, lda, B, ldb, 0.0, C, s->N);
    for (int r = 0; r < reps; r++) {
        double t0 = now();
        lt_linalg_gemm(LT_F32, s->ta, s->tb, s->M, s->N, s->K, 1.0, A, lda, B, ldb, 0.0, C, s->N);
        t[r] = now() - t0;
    }
    double med = median(t, reps);
    free(A), free(B), free(C), free(t);
    return 2.0 * (double)s->M * (double)s->N * (double)s->K / med * 1e-9;
}

static bool picked(const shape *s, const char *filter) { return !filter || strstr(s->what, filter); }

int main(int argc, char **argv)
{
    int reps = 200, rounds = 5;
    const char *filter = NULL;
    bool child = false;
    int only = -1;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            filter = argv[++i];
        else if (!strcmp(argv[i], "--only") && i + 1 < argc)
            only = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--child"))
            child = true;
        else {
            fprintf(stderr, "usage: %s [--reps N] [--rounds R] [--filter SUBSTR]\n", argv[0]);
            return 2;
        }
    }
    reps = reps < 1 ? 1 : reps;
    rounds = rounds < 1 ? 1 : rounds > MAX_ROUNDS ? MAX_ROUNDS : rounds;
    if (child) {
        /* one setting, as the environment gives it: "index GFLOP/s" lines;
         * OpenBLAS pinned to one thread as a lantern session pins it */
        lt_set_num_threads(0);
        for (int i = 0; i < NSHAPES; i++)
            if (picked(&shapes[i], filter) && (only < 0 || only == i))
                printf("%d %.4f\n", i, time_shape(&shapes[i], reps));
        return 0;
    }
    static double gf[2][2][NSHAPES][MAX_ROUNDS]; /* [threads - 1][own][shape][round] */
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return 1;
    exe[n] = 0;
    /* shape by shape, each round running both settings back to back
     * (alternating which goes first), so that load from elsewhere on the
     * machine falls on both alike */
    for (int i = 0; i < NSHAPES; i++) {
        if (!picked(&shapes[i], filter))
            continue;
        for (int r = 0; r < rounds; r++)
            for (int th = 1; th <= 2; th++)
                for (int own = 0; own < 2; own++) {
                    int o = (r + th) % 2 ? 1 - own : own;
                    char cmd[8192];
                    snprintf(cmd, sizeof cmd,
                             "%s OMP_NUM_THREADS=%d OMP_WAIT_POLICY=passive '%s' --child --reps %d --only %d",
                             o ? "env -u LANTERN_GEMM" : "env LANTERN_GEMM=blas", th, exe, reps, i);
                    FILE *p = popen(cmd, "r");
                    if (!p)
                        return 1;
                    int idx;
                    double g;
                    while (fscanf(p, "%d %lf", &idx, &g) == 2)
                        if (idx == i)
                            gf[th - 1][o][idx][r] = g;
                    if (pclose(p) != 0)
                        return 1;
                }
    }
    printf("%-12s %2s %2s %5s %5s %5s | %8s %8s %6s | %8s %8s %6s\n", "shape", "ta", "tb", "M", "N", "K",
           "blas 1t", "own 1t", "ratio", "blas 2t", "own 2t", "ratio");
    for (int i = 0; i < NSHAPES; i++) {
        const shape *s = &shapes[i];
        if (!picked(s, filter))
            continue;
        printf("%-12s %2d %2d %5lld %5lld %5lld", s->what, s->ta, s->tb, (long long)s->M, (long long)s->N,
               (long long)s->K);
        for (int th = 0; th < 2; th++) {
            double b = median(gf[th][0][i], rounds), o = median(gf[th][1][i], rounds);
            printf(" | %8.1f %8.1f %6.2f", b, o, b > 0 ? o / b : 0.0);
        }
        printf("\n");
    }
    printf("GFLOP/s, medians over %d reps and %d rounds; ratio = own / blas\n", reps, rounds);
    return 0;
}
