/* Training-step benchmark (not a test): the median wall time of one whole
 * training step (forward, backward through the AD program, optimizer update
 * of every parameter in place: lt_trainer_step, as `lantern train` runs it,
 * BatchNormalization on batch statistics and Dropout dropping), after
 * warm-up, for the models bench/make_bench_models.py writes.
 *
 *   bench_train [--warmup W] [--iters N] [--optim KIND] [--lr LR] DIR [NAME...]
 *
 * DIR holds bench.txt (one model a line: NAME BATCH OPTIM LR) and for each
 * model NAME.onnx and NAME.npz. Every array of the npz feeds the model input
 * of its name, except y, the int64 class labels (input "labels" of the
 * softmax cross-entropy loss). A dense array is cut into batches of BATCH
 * along its first axis; an array with NAME_splits (row splits) is ragged and
 * a step takes one sample of it (one tree for the TreeLSTM), and the warm-up
 * then covers every sample at least once. Steps cycle through the batches
 * (or samples) in order, all loaded before timing.
 * OPTIM: sgd, momentum (0.9), adam, adagrad (PyTorch's defaults otherwise);
 * --optim / --lr override every model's. Threads follow OMP_NUM_THREADS.
 *
 * Output, one line per model:
 *   train NAME batch B optim O median_ms X min_ms Y loss0 L minflt_per_step F maxrss_kb R peak_kb P
 *         arena_kb A layouts N layouts_timed T arenas_timed U
 * loss0 is the first step's loss (before its update), F the minor page faults
 * per timed step (getrusage; a step that takes no new memory from the system
 * makes 0), R the process's max RSS (run one model per process to get one
 * model's; bench/torch_bench.py does), P the most activation memory held at
 * once (pool and planned arenas), A the arenas' part, N the memory layouts
 * planned (one per block and input shapes) and T those planned during the
 * timed steps (0: the warm-up saw every shape), U the arenas allocated
 * during them. */
#include "lantern.h"
#include "npz_read.h"
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define MAX_IN 8

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct rusage usage(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int parse_optim(const char *s, lt_optim_kind *k)
{
    static const struct {
        const char *name;
        lt_optim_kind kind;
    } t[] = {{"sgd", LT_OPTIM_SGD},         {"momentum", LT_OPTIM_MOMENTUM}, {"nesterov", LT_OPTIM_NESTEROV},
             {"adagrad", LT_OPTIM_ADAGRAD}, {"adam", LT_OPTIM_ADAM},         {"adamw", LT_OPTIM_ADAMW}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (!strcmp(s, t[i].name)) {
            *k = t[i].kind;
            return 0;
        }
    return -1;
}

typedef struct entry {
    char name[128];
    long long batch;
    char optim[32];
    double lr;
} entry;

/* The manifest's line for name; 0 when found. */
static int find_entry(const char *dir, const char *name, entry *e)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/bench.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open (write it with bench/make_bench_models.py)\n", path);
        return -1;
    }
    char line[512];
    int found = -1;
    while (found && fgets(line, sizeof line, f))
        if (line[0] != '#' && sscanf(line, "%127s %lld %31s %lf", e->name, &e->batch, e->optim, &e->lr) == 4 &&
            !strcmp(e->name, name))
            found = 0;
    fclose(f);
    if (found)
        fprintf(stderr, "%s: no model '%s'\n", path, name);
    return found;
}

/* Every model NAME of the manifest, in order, into names (at most max). */
static int list_entries(const char *dir, char names[][128], int max)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/bench.txt", dir);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "%s: cannot open (write it with bench/make_bench_models.py)\n", path);
        return -1;
    }
    char line[512];
    int n = 0;
    while (n < max && fgets(line, sizeof line, f))
        if (line[0] != '#' && sscanf(line, "%127s", names[n]) == 1)
            n++;
    fclose(f);
    return n;
}

/* Rows [r0, r1) of array t as a new value. */
static lt_value *rows(const lt_tensor *t, int64_t r0, int64_t r1)
{
    lt_tensor v = *t;
    int64_t row = t->rank ? t->numel / (t->dims[0] ? t->dims[0] : 1) : 1;
    v.dims[0] = r1 - r0;
    v.numel = (r1 - r0) * row;
    v.data = (char *)t->data + (size_t)(r0 * row) * lt_dtype_size(t->dtype);
    v.buf = NULL;
    lt_value *out = NULL;
    lt_err err;
    if (lt_value_from_tensor(&v, &out, &err) != LT_OK)
        fprintf(stderr, "%s\n", err.msg);
    return out;
}

typedef struct feed {
    int nin;                   /* inputs per step, labels last */
    const char *names[MAX_IN];
    int nunits;                /* batches or samples */
    int ragged;                /* one sample per step */
    lt_value **v;              /* nunits * nin */
} feed;

static void feed_free(feed *f)
{
    if (f->v)
        for (int i = 0; i < f->nunits * f->nin; i++)
            lt_value_free(f->v[i]);
    free(f->v);
    memset(f, 0, sizeof *f);
}

/* The npz's arrays cut into steps: batches of `batch` rows, or one sample
 * per step when the arrays are ragged. */
static int make_feed(const char *path, const bench_npz *z, int64_t batch, feed *f)
{
    memset(f, 0, sizeof *f);
    const bench_array *arr[MAX_IN], *spl[MAX_IN];
    int y = -1;
    for (int i = 0; i < z->n; i++) {
        const char *nm = z->a[i].name;
        size_t l = strlen(nm);
        if (l > 7 && !strcmp(nm + l - 7, "_splits"))
            continue;
        if (strstr(nm, "_test"))
            continue;
        if (f->nin == MAX_IN) {
            fprintf(stderr, "%s: more than %d arrays\n", path, MAX_IN);
            return -1;
        }
        char sn[160];
        snprintf(sn, sizeof sn, "%s_splits", nm);
        arr[f->nin] = &z->a[i];
        spl[f->nin] = bench_npz_find(z, sn);
        if (!strcmp(nm, "y"))
            y = f->nin;
        f->names[f->nin++] = nm;
    }
    if (y < 0 || f->nin < 2) {
        fprintf(stderr, "%s: needs an array y (labels) and at least one input array\n", path);
        return -1;
    }
    /* labels last, named as the loss's input */
    const bench_array *ta = arr[y], *ts = spl[y];
    for (int k = y; k + 1 < f->nin; k++) {
        arr[k] = arr[k + 1];
        spl[k] = spl[k + 1];
        f->names[k] = f->names[k + 1];
    }
    arr[f->nin - 1] = ta;
    spl[f->nin - 1] = ts;
    f->names[f->nin - 1] = "labels";
    int ragged = f->ragged = spl[0] != NULL;
    int64_t n = ragged ? spl[0]->t.numel - 1 : arr[0]->t.dims[0];
    for (int k = 0; k < f->nin; k++) {
        int64_t nk = spl[k] ? spl[k]->t.numel - 1 : arr[k]->t.dims[0];
        if ((spl[k] != NULL) != ragged || nk != n || (spl[k] && spl[k]->t.dtype != LT_I64) || arr[k]->t.rank < 1) {
            fprintf(stderr, "%s: the arrays must all be ragged or all dense, with the same number of samples\n", path);
            return -1;
        }
    }
    if (batch < 1) {
        fprintf(stderr, "%s: batch %lld in bench.txt\n", path, (long long)batch);
        return -1;
    }
    f->nunits = (int)(ragged ? n : n / batch);
    if (f->nunits < 1) {
        fprintf(stderr, "%s: fewer than one batch of %lld\n", path, (long long)batch);
        return -1;
    }
    f->v = calloc((size_t)f->nunits * f->nin, sizeof *f->v);
    if (!f->v)
        return -1;
    for (int u = 0; u < f->nunits; u++)
        for (int k = 0; k < f->nin; k++) {
            const int64_t *s = spl[k] ? (const int64_t *)spl[k]->t.data : NULL;
            int64_t r0 = s ? s[u] : u * batch, r1 = s ? s[u + 1] : (u + 1) * batch;
            if (r0 < 0 || r1 < r0 || r1 > arr[k]->t.dims[0] || !(f->v[u * f->nin + k] = rows(&arr[k]->t, r0, r1))) {
                fprintf(stderr, "%s: bad rows %lld..%lld of %s\n", path, (long long)r0, (long long)r1,
                        arr[k]->name);
                return -1;
            }
        }
    return 0;
}

static int bench_one(const char *dir, const entry *e, const char *optim_override, double lr_override, int warmup,
                     int iters)
{
    char mpath[4096], dpath[4096], emsg[1024];
    snprintf(mpath, sizeof mpath, "%s/%s.onnx", dir, e->name);
    snprintf(dpath, sizeof dpath, "%s/%s.npz", dir, e->name);
    const char *optim = optim_override ? optim_override : e->optim;
    double lr = lr_override > 0 ? lr_override : e->lr;
    lt_optim_kind kind;
    if (parse_optim(optim, &kind) != 0) {
        fprintf(stderr, "%s: unknown optimizer '%s'\n", e->name, optim);
        return 1;
    }
    bench_npz z;
    if (bench_npz_open(dpath, &z, emsg, sizeof emsg) != 0) {
        fprintf(stderr, "%s\n", emsg);
        return 1;
    }
    feed f = {0};
    int rc = 1;
    lt_trainer *t = NULL;
    double *times = calloc((size_t)iters, sizeof *times);
    lt_err err;
    if (!times || make_feed(dpath, &z, e->batch, &f) != 0)
        goto out;
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_optim_defaults(kind, &o.optim);
    o.optim.momentum = 0.9;
    if (lt_trainer_new(mpath, &o, &t, &err) != LT_OK) {
        fprintf(stderr, "%s\n", err.msg);
        goto out;
    }
    /* one sample a step: warm up over every sample once, so that each
     * sample's shape has been seen before timing (PyTorch does the same steps) */
    if (f.ragged && warmup < f.nunits)
        warmup = f.nunits;
    double loss0 = 0;
    struct rusage r0 = usage();
    lt_run_stats s0 = {0}, s1;
    for (int it = 0; it < warmup + iters; it++) {
        if (it == warmup) {
            r0 = usage();
            lt_trainer_stats(t, &s0);
        }
        lt_value *const *in = f.v + (size_t)(it % f.nunits) * f.nin;
        double loss, t0 = now();
        if (lt_trainer_step(t, lr, f.nin, f.names, in, &loss, &err) != LT_OK) {
            fprintf(stderr, "%s: step %d: %s\n", e->name, it, err.msg);
            goto out;
        }
        double t1 = now();
        if (it == 0)
            loss0 = loss;
        if (it >= warmup)
            times[it - warmup] = (t1 - t0) * 1e3;
    }
    struct rusage r1 = usage();
    lt_trainer_stats(t, &s1);
    double flt = (double)(r1.ru_minflt - r0.ru_minflt) / iters;
    qsort(times, (size_t)iters, sizeof *times, cmp_double);
    double med = iters % 2 ? times[iters / 2] : 0.5 * (times[iters / 2 - 1] + times[iters / 2]);
    printf("train %s batch %lld optim %s median_ms %.3f min_ms %.3f loss0 %.6f minflt_per_step %.1f maxrss_kb %ld "
           "peak_kb %zu arena_kb %zu layouts %lld layouts_timed %lld arenas_timed %lld device_nodes %.1f host_nodes %.1f "
           "uploads %.1f downloads %.1f\n",
           e->name, f.ragged ? 1LL : e->batch, optim, med, times[0], loss0, flt, r1.ru_maxrss, s1.peak_bytes / 1024,
           s1.arena_peak_bytes / 1024, (long long)s1.layouts, (long long)(s1.layouts - s0.layouts),
           (long long)(s1.arenas - s0.arenas), s1.device_nodes, s1.host_nodes, s1.uploads, s1.downloads);
    fflush(stdout);
    rc = 0;
out:
    lt_trainer_free(t);
    feed_free(&f);
    bench_npz_close(&z);
    free(times);
    return rc;
}

static int usage_exit(void)
{
    fprintf(stderr, "usage: bench_train [--warmup W] [--iters N] [--optim KIND] [--lr LR] DIR [NAME...]\n");
    return 2;
}

int main(int argc, char **argv)
{
    int warmup = 5, iters = 30, a = 1;
    const char *optim = NULL;
    double lr = 0;
    for (; a < argc && !strncmp(argv[a], "--", 2); a++) {
        if (a + 1 >= argc)
            return usage_exit();
        if (!strcmp(argv[a], "--warmup"))
            warmup = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--iters"))
            iters = atoi(argv[++a]);
        else if (!strcmp(argv[a], "--optim"))
            optim = argv[++a];
        else if (!strcmp(argv[a], "--lr"))
            lr = atof(argv[++a]);
        else
            return usage_exit();
    }
    if (a >= argc || warmup < 0 || iters < 1)
        return usage_exit();
    const char *dir = argv[a++];
    const char *env = getenv("OMP_NUM_THREADS");
    lt_set_num_threads(env ? atoi(env) : 0);
    static char all[64][128];
    int n = 0;
    if (a == argc) {
        n = list_entries(dir, all, 64);
        if (n < 0)
            return 1;
    }
    int rc = 0;
    for (int i = 0; i < (a < argc ? argc - a : n); i++) {
        entry e;
        if (find_entry(dir, a < argc ? argv[a + i] : all[i], &e) != 0) {
            rc = 1;
            continue;
        }
        rc |= bench_one(dir, &e, optim, lr, warmup, iters);
    }
    return rc;
}
