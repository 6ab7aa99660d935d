/* Training checkpoints: trained parameters, optimizer state, the position in
 * the run (epoch, step, global step), the shuffling RNG and the data order.
 * Layout (native byte order, little-endian on every target lantern builds
 * for): a fixed header, the order, every parameter's values, each trained
 * parameter's optimizer state, then an FNV-1a checksum of everything before it. */
#include "checkpoint.h"
#include "optim.h"
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MAGIC "LTNCKPT\n"
#define CKPT_VERSION 1u

typedef struct ckpt_header {
    char magic[8];
    uint32_t version, optim_kind;
    uint64_t model_hash;
    int64_t nparams, epoch, step, global, nsamples, batch, steps;
    uint64_t rng;
    double loss_sum;
    int64_t seen, optim_t, nvalues;
} ckpt_header;

static uint64_t fnv1a(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

#define FNV_START 0xcbf29ce484222325ull

uint64_t lt_ckpt_model_hash(int n, const char *const *names, const lt_tensor *const *params)
{
    uint64_t h = FNV_START;
    for (int i = 0; i < n; i++) {
        const lt_tensor *t = params[i];
        int32_t dt = (int32_t)t->dtype, rank = (int32_t)t->rank;
        h = fnv1a(h, names[i], strlen(names[i]) + 1);
        h = fnv1a(h, &dt, sizeof dt);
        h = fnv1a(h, &rank, sizeof rank);
        for (int d = 0; d < t->rank; d++)
            h = fnv1a(h, &t->dims[d], sizeof t->dims[d]);
    }
    return h;
}

static int nstate(lt_optim_kind k)
{
    return k == LT_OPTIM_SGD ? 0 : k == LT_OPTIM_ADAM || k == LT_OPTIM_ADAMW ? 2 : 1;
}

/* The optimizer must be the one made for exactly these parameters. */
static lt_status check_optim(const char *file, const lt_ckpt_state *s, lt_err *err)
{
    const lt_optim *o = s->opt;
    int ok = o->n == s->n;
    for (int i = 0; ok && i < s->n; i++)
        ok = o->dtype[i] == s->params[i]->dtype && o->numel[i] == s->params[i]->numel &&
             (nstate(o->o.kind) < 1 || o->s1[i]) && (nstate(o->o.kind) < 2 || o->s2[i]);
    return ok ? LT_OK : lt_errf(err, LT_ERR_INTERNAL, "%s: the optimizer state does not match the parameters", file);
}

static size_t param_bytes(const lt_tensor *t) { return (size_t)t->numel * lt_dtype_size(t->dtype); }

/* ---- writing ---- */

typedef struct writer {
    FILE *f;
    uint64_t h;
    int bad;
} writer;

static void put(writer *w, const void *p, size_t n)
{
    if (w->bad || n == 0)
        return;
    w->h = fnv1a(w->h, p, n);
    w->bad = fwrite(p, 1, n, w->f) != n;
}

static void path_of(const char *dir, char *out, size_t len) { snprintf(out, len, "%s/%s", dir, LT_CKPT_FILE); }

lt_status lt_ckpt_save(const char *dir, const lt_ckpt_state *s, lt_err *err)
{
    char file[PATH_MAX], tmp[PATH_MAX];
    path_of(dir, file, sizeof file);
    lt_status st = check_optim(file, s, err);
    if (st != LT_OK)
        return st;
    if (snprintf(tmp, sizeof tmp, "%s/.%s.XXXXXX", dir, LT_CKPT_FILE) >= (int)sizeof tmp)
        return lt_errf(err, LT_ERR_IO, "%s: path too long", dir);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return lt_errf(err, LT_ERR_IO, "%s: cannot write a checkpoint there: %s", dir, strerror(errno));
    FILE *f = fdopen(fd, "wb");
    if (!f) {
        close(fd);
        unlink(tmp);
        return lt_errf(err, LT_ERR_IO, "%s: cannot write: %s", tmp, strerror(errno));
    }
    ckpt_header h;
    memset(&h, 0, sizeof h); /* padding too: the checksum covers every byte */
    memcpy(h.magic, CKPT_MAGIC, 8);
    h.version = CKPT_VERSION;
    h.optim_kind = (uint32_t)s->opt->o.kind;
    h.model_hash = s->model_hash;
    h.nparams = s->n;
    h.epoch = s->epoch;
    h.step = s->step;
    h.global = s->global;
    h.nsamples = s->nsamples;
    h.batch = s->batch;
    h.steps = s->steps;
    h.rng = s->rng;
    h.loss_sum = s->loss_sum;
    h.seen = s->seen;
    h.optim_t = s->opt->t;
    h.nvalues = s->nvalues;
    writer w = {f, FNV_START, 0};
    put(&w, &h, sizeof h);
    put(&w, s->order, sizeof *s->order * (size_t)s->nsamples);
    for (int i = 0; i < s->nvalues; i++)
        put(&w, s->values[i]->data, param_bytes(s->values[i]));
    int k = nstate(s->opt->o.kind);
    for (int i = 0; i < s->n; i++) {
        if (k >= 1)
            put(&w, s->opt->s1[i], param_bytes(s->params[i]));
        if (k >= 2)
            put(&w, s->opt->s2[i], param_bytes(s->params[i]));
    }
    uint64_t sum = w.h;
    put(&w, &sum, sizeof sum);
    int bad = w.bad || fflush(f) != 0 || fsync(fileno(f)) != 0;
    int saved = errno;
    bad |= fclose(f) != 0;
    if (!bad && rename(tmp, file) != 0) {
        saved = errno;
        bad = 1;
    }
    if (bad) {
        unlink(tmp);
        return lt_errf(err, LT_ERR_IO, "%s: cannot write the checkpoint: %s", file, strerror(saved ? saved : EIO));
    }
    /* the rename itself is durable once the folder is synced */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return LT_OK;
}

/* ---- reading ---- */

static lt_status read_all(const char *file, unsigned char **buf, size_t *len, lt_err *err)
{
    FILE *f = fopen(file, "rb");
    if (!f)
        return lt_errf(err, LT_ERR_IO, "%s: cannot read the checkpoint: %s", file, strerror(errno));
    struct stat sb;
    if (fstat(fileno(f), &sb) != 0 || !S_ISREG(sb.st_mode)) {
        fclose(f);
        return lt_errf(err, LT_ERR_IO, "%s: not a regular file", file);
    }
    size_t n = (size_t)sb.st_size;
    *buf = malloc(n ? n : 1);
    if (!*buf) {
        fclose(f);
        return lt_errf(err, LT_ERR_NOMEM, "out of memory (%zu bytes for %s)", n, file);
    }
    size_t got = fread(*buf, 1, n, f);
    fclose(f);
    if (got != n) {
        free(*buf);
        *buf = NULL;
        return lt_errf(err, LT_ERR_IO, "%s: read %zu of %zu bytes", file, got, n);
    }
    *len = n;
    return LT_OK;
}

static const char *const kind_names[] = {"sgd", "momentum", "nesterov", "adagrad", "adam", "adamw"};

static lt_status check_header(const char *file, const ckpt_header *h, size_t len, const lt_ckpt_state *s,
                              lt_err *err)
{
    if (h->version != CKPT_VERSION)
        return lt_errf(err, LT_ERR_INVALID, "%s: checkpoint version %u; this lantern reads version %u", file,
                       h->version, CKPT_VERSION);
    if (h->model_hash != s->model_hash || h->nparams != s->n || h->nvalues != s->nvalues)
        return lt_errf(err, LT_ERR_INVALID,
                       "%s: the checkpoint was written for a different model (parameter names or shapes differ, "
                       "or other parameters are frozen)", file);
    if (h->optim_kind != (uint32_t)s->opt->o.kind)
        return lt_errf(err, LT_ERR_INVALID, "%s: the checkpoint was written with --optimizer %s, this run uses %s",
                       file, h->optim_kind < 6 ? kind_names[h->optim_kind] : "?", kind_names[s->opt->o.kind]);
    if (h->nsamples != s->nsamples || h->batch != s->batch || h->steps != s->steps)
        return lt_errf(err, LT_ERR_INVALID,
                       "%s: the checkpoint was written for %lld samples in batches of %lld; this run has %lld in "
                       "batches of %lld (use the same --limit and --batch)",
                       file, (long long)h->nsamples, (long long)h->batch, (long long)s->nsamples,
                       (long long)s->batch);
    if (h->epoch < 1 || h->step < 0 || h->step > h->steps || h->global < 0 || h->seen < 0 || h->optim_t < 0 ||
        h->global != (h->epoch - 1) * h->steps + h->step)
        return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (inconsistent step counters)", file);
    size_t want = sizeof *h + sizeof(int64_t) * (size_t)s->nsamples + sizeof(uint64_t);
    int k = nstate(s->opt->o.kind);
    for (int i = 0; i < s->nvalues; i++)
        want += param_bytes(s->values[i]);
    for (int i = 0; i < s->n; i++)
        want += param_bytes(s->params[i]) * (size_t)k;
    if (len < want)
        return lt_errf(err, LT_ERR_INVALID, "%s: truncated checkpoint (%zu of %zu bytes)", file, len, want);
    if (len > want)
        return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (%zu bytes, expected %zu)", file, len, want);
    return LT_OK;
}

lt_status lt_ckpt_load(const char *dir, lt_ckpt_state *s, lt_err *err)
{
    char file[PATH_MAX];
    path_of(dir, file, sizeof file);
    lt_status st = check_optim(file, s, err);
    if (st != LT_OK)
        return st;
    unsigned char *buf = NULL;
    size_t len = 0;
    st = read_all(file, &buf, &len, err);
    if (st != LT_OK)
        return st;
    ckpt_header h;
    if (len < 8 || memcmp(buf, CKPT_MAGIC, 8) != 0)
        st = lt_errf(err, LT_ERR_INVALID, "%s: not a lantern checkpoint (bad magic)", file);
    else if (len < sizeof h)
        st = lt_errf(err, LT_ERR_INVALID, "%s: truncated checkpoint (%zu bytes, the header alone is %zu)", file, len,
                     sizeof h);
    if (st == LT_OK) {
        memcpy(&h, buf, sizeof h);
        st = check_header(file, &h, len, s, err);
    }
    uint64_t sum;
    if (st == LT_OK) {
        memcpy(&sum, buf + len - sizeof sum, sizeof sum);
        if (fnv1a(FNV_START, buf, len - sizeof sum) != sum)
            st = lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (checksum mismatch)", file);
    }
    const unsigned char *p = buf + sizeof h;
    for (int64_t i = 0; st == LT_OK && i < s->nsamples; i++) {
        int64_t v;
        memcpy(&v, p + sizeof v * (size_t)i, sizeof v);
        if (v < 0 || v >= s->nsamples)
            st = lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (data order entry %lld)", file, (long long)v);
    }
    if (st != LT_OK) {
        free(buf);
        return st;
    }
    /* every check passed: only now overwrite the live state */
    memcpy(s->order, p, sizeof *s->order * (size_t)s->nsamples);
    p += sizeof *s->order * (size_t)s->nsamples;
    for (int i = 0; i < s->nvalues; i++) {
        memcpy(s->values[i]->data, p, param_bytes(s->values[i]));
        p += param_bytes(s->values[i]);
    }
    int k = nstate(s->opt->o.kind);
    for (int i = 0; i < s->n; i++) {
        size_t b = param_bytes(s->params[i]);
        if (k >= 1) {
            memcpy(s->opt->s1[i], p, b);
            p += b;
        }
        if (k >= 2) {
            memcpy(s->opt->s2[i], p, b);
            p += b;
        }
    }
    s->opt->t = h.optim_t;
    s->epoch = h.epoch;
    s->step = h.step;
    s->global = h.global;
    s->rng = h.rng;
    s->loss_sum = h.loss_sum;
    s->seen = h.seen;
    free(buf);
    return LT_OK;
}
