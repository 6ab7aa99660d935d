/* Training checkpoints: trained parameters, optimizer state, the position in
 * the run (epoch, step, global step), the shuffling RNG and the data order.
 * Layout (native byte order, little-endian on every target lantern builds
 * for): a fixed header; a table naming every stored parameter with its
 * element type and shape, so that the weights can be read back without the
 * run (lantern export); the order; every parameter's values; each trained
 * parameter's optimizer state; an FNV-1a checksum of everything before it.
 * Version 3 adds, right after the header, the run's options as text (a
 * uint64 length, then "name value" lines) so that --resume continues only
 * the run that wrote the checkpoint. Version 4 adds after those the lantern
 * that wrote the file ("lantern 0.7.0": a uint64 length, then the text),
 * shown where a run resumes. Version 5 adds after the writer the state of
 * validation (a uint64 length, then "best_epoch E", "best_value V" (a hex
 * float), "since_best K" and "best_values 0|1" lines) and, after the
 * optimizer state, when best_values is 1, the values of the best epoch
 * (--save-best) in the table's order. Versions 2 to 4 are still read. */
#include "checkpoint.h"
#include "../importer/atomic_file.h"
#include "../importer/open_read.h"
#include "optim.h"
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_MAGIC "LTNCKPT\n"
#define CKPT_VERSION 5u /* 2: the parameter table; 3: the run's options; 4: the writer; 5: validation */
#define CKPT_OLDEST 2u
#define CKPT_MAX_RUN_TEXT 65536
#define CKPT_MAX_WRITER 255
#define CKPT_MAX_STATE 1024

/* The fields up to model_hash keep their offsets across versions (8 and 16:
 * the version check and the model check read them first). */
typedef struct ckpt_header {
    char magic[8];
    uint32_t version, optim_kind;
    uint64_t model_hash;
    int64_t nparams, epoch, step, global, nsamples, batch, steps;
    uint64_t rng;
    double loss_sum;
    int64_t seen, optim_t, nvalues;
    int64_t table_bytes;
} ckpt_header;

/* A table entry: uint32 name length, the name's bytes (no NUL), int32
 * element type, int32 rank, uint32 flags, int64 dims[rank]. */
#define ENTRY_FIXED (4 + 4 + 4 + 4)
#define ENTRY_TRAINED 1u /* the optimizer's: its state follows the values */

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

/* ---- the parameter table ---- */

static int trained_value(const lt_ckpt_state *s, int i)
{
    for (int g = 0; g < s->n; g++)
        if (s->params[g] == s->values[i])
            return 1;
    return 0;
}

static void put_bytes(unsigned char **p, const void *src, size_t n)
{
    memcpy(*p, src, n);
    *p += n;
}

/* The table for the run's parameters, as it is (to be) stored. */
static lt_status build_table(const char *file, const lt_ckpt_state *s, unsigned char **out, size_t *len,
                             lt_err *err)
{
    size_t n = 0;
    for (int i = 0; i < s->nvalues; i++)
        n += ENTRY_FIXED + strlen(s->names[i]) + sizeof(int64_t) * (size_t)s->values[i]->rank;
    unsigned char *t = malloc(n ? n : 1), *p = t;
    if (!t)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory (%zu bytes for %s's parameter table)", n, file);
    for (int i = 0; i < s->nvalues; i++) {
        const lt_tensor *v = s->values[i];
        uint32_t nl = (uint32_t)strlen(s->names[i]), flags = trained_value(s, i) ? ENTRY_TRAINED : 0;
        int32_t dt = (int32_t)v->dtype, rank = (int32_t)v->rank;
        put_bytes(&p, &nl, sizeof nl);
        put_bytes(&p, s->names[i], nl);
        put_bytes(&p, &dt, sizeof dt);
        put_bytes(&p, &rank, sizeof rank);
        put_bytes(&p, &flags, sizeof flags);
        put_bytes(&p, v->dims, sizeof(int64_t) * (size_t)v->rank);
    }
    *out = t;
    *len = n;
    return LT_OK;
}

/* One parameter as the file describes it. */
typedef struct entry {
    const char *name; /* not NUL-terminated: name_len bytes in the file */
    uint32_t name_len;
    lt_dtype dtype;
    int rank;
    int64_t dims[LT_MAX_RANK];
    size_t bytes;
    int trained;
    const unsigned char *data; /* its values in the file */
    int param;                 /* the model parameter it goes to */
} entry;

static int take(const unsigned char **p, const unsigned char *end, void *dst, size_t n)
{
    if ((size_t)(end - *p) < n)
        return 0;
    memcpy(dst, *p, n);
    *p += n;
    return 1;
}

/* Reads n entries from exactly [p, end), checking every field; their data
 * pointers are filled in later. */
static lt_status parse_table(const char *file, const unsigned char *p, const unsigned char *end, int64_t n,
                             entry *e, lt_err *err)
{
    for (int64_t i = 0; i < n; i++) {
        entry *x = &e[i];
        int32_t dt, rank;
        uint32_t flags;
        if (!take(&p, end, &x->name_len, sizeof x->name_len) || x->name_len == 0 ||
            (size_t)(end - p) < x->name_len)
            return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (parameter table entry %lld)", file,
                           (long long)i);
        x->name = (const char *)p;
        p += x->name_len;
        if (!take(&p, end, &dt, sizeof dt) || !take(&p, end, &rank, sizeof rank) ||
            !take(&p, end, &flags, sizeof flags) || dt <= 0 || dt >= LT_DTYPE_COUNT || dt == LT_STRING ||
            lt_dtype_size((lt_dtype)dt) == 0 || rank < 0 || rank > LT_MAX_RANK || (flags & ~ENTRY_TRAINED) ||
            !take(&p, end, x->dims, sizeof(int64_t) * (size_t)rank))
            return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (parameter '%.*s' in the table)", file,
                           (int)x->name_len, x->name);
        int64_t numel = lt_shape_numel(rank, x->dims);
        size_t es = lt_dtype_size((lt_dtype)dt);
        if (numel < 0 || (uint64_t)numel > SIZE_MAX / 2 / es)
            return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (parameter '%.*s' has a bad shape)", file,
                           (int)x->name_len, x->name);
        x->dtype = (lt_dtype)dt;
        x->rank = rank;
        x->bytes = (size_t)numel * es;
        x->trained = (flags & ENTRY_TRAINED) != 0;
        x->param = -1;
    }
    if (p != end)
        return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (parameter table size)", file);
    return LT_OK;
}

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
    char file[PATH_MAX];
    path_of(dir, file, sizeof file);
    lt_status st = check_optim(file, s, err);
    if (st != LT_OK)
        return st;
    if (s->run && strlen(s->run) > CKPT_MAX_RUN_TEXT)
        return lt_errf(err, LT_ERR_INVALID, "%s: the run's options take more than %d bytes", file, CKPT_MAX_RUN_TEXT);
    unsigned char *table;
    size_t table_len;
    if ((st = build_table(file, s, &table, &table_len, err)) != LT_OK)
        return st;
    /* the previous checkpoint stays whole until the new one is */
    lt_atomic_file af;
    if ((st = lt_atomic_open(&af, file, err)) != LT_OK) {
        free(table);
        return st;
    }
    FILE *f = af.f;
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
    h.table_bytes = (int64_t)table_len;
    writer w = {f, FNV_START, 0};
    put(&w, &h, sizeof h);
    uint64_t run_len = s->run ? strlen(s->run) : 0;
    put(&w, &run_len, sizeof run_len);
    put(&w, s->run, (size_t)run_len);
    char writer_text[CKPT_MAX_WRITER + 1];
    snprintf(writer_text, sizeof writer_text, "lantern %s", lt_version());
    uint64_t writer_len = strlen(writer_text);
    put(&w, &writer_len, sizeof writer_len);
    put(&w, writer_text, (size_t)writer_len);
    int has_best = s->best && s->best_epoch > 0;
    char state[CKPT_MAX_STATE];
    snprintf(state, sizeof state, "best_epoch %lld\nbest_value %a\nsince_best %lld\nbest_values %d\n",
             (long long)s->best_epoch, s->best_value, (long long)s->since_best, has_best);
    uint64_t state_len = strlen(state);
    put(&w, &state_len, sizeof state_len);
    put(&w, state, (size_t)state_len);
    put(&w, table, table_len);
    free(table);
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
    for (int i = 0; has_best && i < s->nvalues; i++)
        put(&w, s->best[i]->data, param_bytes(s->best[i]));
    uint64_t sum = w.h;
    put(&w, &sum, sizeof sum);
    if (w.bad) {
        lt_atomic_abort(&af);
        return lt_errf(err, LT_ERR_IO, "%s: cannot write the checkpoint: %s", file, strerror(errno ? errno : EIO));
    }
    return lt_atomic_commit(&af, "the checkpoint", err);
}

/* ---- reading ---- */

static lt_status read_all(const char *file, unsigned char **buf, size_t *len, lt_err *err)
{
    struct stat sb;
    FILE *f = lt_fopen_read(file, &sb, err);
    if (!f)
        return LT_ERR_IO;
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

/* What comes before the parameter table: the header, (version 3) the run's
 * options, run_len bytes at run, and (version 4) the writer, writer_len
 * bytes at writer (neither NUL-terminated). */
typedef struct ckpt_head {
    uint32_t version;
    size_t bytes;
    const char *run;
    size_t run_len;
    const char *writer;
    size_t writer_len;
    /* version 5: validation's state (zero before) */
    int64_t best_epoch, since_best;
    double best_value;
    int has_best; /* the best epoch's values follow the optimizer state */
} ckpt_head;

/* A length-prefixed text at *at of buf[0..avail) (total: the file's size),
 * at most max bytes; moves *at past it. */
static lt_status text_field(const char *file, const unsigned char *buf, size_t avail, size_t total, size_t *at,
                            size_t max, const char *what, const char **text, size_t *len, lt_err *err)
{
    uint64_t n;
    if (avail < *at + sizeof n || total < *at + 2 * sizeof n)
        return lt_errf(err, LT_ERR_INVALID, "%s: truncated checkpoint (%zu bytes)", file, total);
    memcpy(&n, buf + *at, sizeof n);
    if (n > max)
        return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (%s take %llu bytes)", file, what,
                       (unsigned long long)n);
    /* the checksum's 8 bytes follow whatever comes next */
    if (n > total - *at - 2 * sizeof n || n > avail - *at - sizeof n)
        return lt_errf(err, LT_ERR_INVALID, "%s: truncated checkpoint (%zu bytes)", file, total);
    *text = (const char *)buf + *at + sizeof n;
    *len = (size_t)n;
    *at += sizeof n + (size_t)n;
    return LT_OK;
}

/* Checks what does not depend on the reader in the first avail bytes of a
 * checkpoint of total bytes: magic, version, a whole header, the texts that
 * follow it. */
static lt_status parse_head(const char *file, const unsigned char *buf, size_t avail, size_t total, ckpt_header *h,
                            ckpt_head *hd, lt_err *err)
{
    uint32_t version = 0;
    if (avail >= 12)
        memcpy(&version, buf + 8, sizeof version);
    memset(hd, 0, sizeof *hd);
    hd->version = version;
    hd->bytes = sizeof *h;
    if (avail < 8 || memcmp(buf, CKPT_MAGIC, 8) != 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: not a lantern checkpoint (bad magic)", file);
    if (avail >= 12 && (version < CKPT_OLDEST || version > CKPT_VERSION))
        return lt_errf(err, LT_ERR_INVALID, "%s: checkpoint version %u; this lantern (%s) reads versions %u to %u",
                       file, version, lt_version(), CKPT_OLDEST, CKPT_VERSION);
    if (avail < sizeof *h + sizeof(uint64_t) || total < sizeof *h + sizeof(uint64_t))
        return lt_errf(err, LT_ERR_INVALID, "%s: truncated checkpoint (%zu bytes, the header alone is %zu)", file,
                       total, sizeof *h);
    lt_status st = LT_OK;
    size_t at = sizeof *h;
    if (version >= 3)
        st = text_field(file, buf, avail, total, &at, CKPT_MAX_RUN_TEXT, "the run's options", &hd->run,
                        &hd->run_len, err);
    if (st == LT_OK && version >= 4)
        st = text_field(file, buf, avail, total, &at, CKPT_MAX_WRITER, "the writer's name", &hd->writer,
                        &hd->writer_len, err);
    const char *state = NULL;
    size_t state_len = 0;
    if (st == LT_OK && version >= 5)
        st = text_field(file, buf, avail, total, &at, CKPT_MAX_STATE, "the validation state", &state, &state_len,
                        err);
    if (st == LT_OK && state) {
        char text[CKPT_MAX_STATE + 1];
        long long be, sb;
        int hb, used = 0;
        memcpy(text, state, state_len);
        text[state_len] = 0;
        if (sscanf(text, "best_epoch %lld\nbest_value %la\nsince_best %lld\nbest_values %d\n%n", &be,
                   &hd->best_value, &sb, &hb, &used) != 4 || (size_t)used != state_len || be < 0 || sb < 0 ||
            (hb != 0 && hb != 1) || (hb && be == 0))
            return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (the validation state)", file);
        hd->best_epoch = be;
        hd->since_best = sb;
        hd->has_best = hb;
    }
    if (st != LT_OK)
        return st;
    hd->bytes = at;
    memcpy(h, buf, sizeof *h);
    return LT_OK;
}

/* Reads a checkpoint and checks its head (parse_head). On success the
 * caller frees *buf. */
static lt_status read_checked(const char *file, unsigned char **buf, size_t *len, ckpt_header *h, ckpt_head *hd,
                              lt_err *err)
{
    lt_status st = read_all(file, buf, len, err);
    if (st == LT_OK)
        st = parse_head(file, *buf, *len, *len, h, hd, err);
    if (st != LT_OK) {
        free(*buf);
        *buf = NULL;
    }
    return st;
}

/* The last 8 bytes are the checksum of all before them (len >= 8). */
static lt_status check_sum(const char *file, const unsigned char *buf, size_t len, lt_err *err)
{
    uint64_t sum;
    memcpy(&sum, buf + len - sizeof sum, sizeof sum);
    if (fnv1a(FNV_START, buf, len - sizeof sum) != sum)
        return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (checksum mismatch)", file);
    return LT_OK;
}

static lt_status check_size(const char *file, size_t len, size_t want, lt_err *err)
{
    if (len < want)
        return lt_errf(err, LT_ERR_INVALID, "%s: truncated checkpoint (%zu of %zu bytes)", file, len, want);
    if (len > want)
        return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (%zu bytes, expected %zu)", file, len, want);
    return LT_OK;
}

/* ---- resuming a run ---- */

static const char *const kind_names[] = {"sgd", "momentum", "nesterov", "adagrad", "adam", "adamw"};

/* The first line of a (name value) that differs from b, by name; 0 when
 * they agree. */
static int first_difference(const char *a, size_t alen, const char *b, char *name, size_t nlen, char *va,
                            size_t valen, char *vb, size_t vblen)
{
    const char *ae = a + alen, *be = b + strlen(b);
    while (a < ae || b < be) {
        const char *al = memchr(a, '\n', (size_t)(ae - a)), *bl = memchr(b, '\n', (size_t)(be - b));
        size_t an = al ? (size_t)(al - a) : (size_t)(ae - a), bn = bl ? (size_t)(bl - b) : (size_t)(be - b);
        if (an != bn || memcmp(a, b, an) != 0) {
            /* name: up to the first space of whichever line there is */
            const char *l = bn ? b : a;
            size_t ln = bn ? bn : an, k = 0;
            while (k < ln && l[k] != ' ')
                k++;
            snprintf(name, nlen, "%.*s", (int)k, l);
            size_t ka = 0, kb = 0;
            while (ka < an && a[ka] != ' ')
                ka++;
            while (kb < bn && b[kb] != ' ')
                kb++;
            snprintf(va, valen, "%.*s", ka < an ? (int)(an - ka - 1) : 0, ka < an ? a + ka + 1 : "");
            snprintf(vb, vblen, "%.*s", kb < bn ? (int)(bn - kb - 1) : 0, kb < bn ? b + kb + 1 : "");
            return 1;
        }
        a += an + (a + an < ae);
        b += bn + (b + bn < be);
    }
    return 0;
}

static lt_status check_run(const char *file, const ckpt_head *hd, const lt_ckpt_state *s, lt_err *err)
{
    if (!s->run || !hd->run)
        return LT_OK; /* a version 2 checkpoint, or a caller that does not say */
    char name[64], was[256], now[256];
    if (!first_difference(hd->run, hd->run_len, s->run, name, sizeof name, was, sizeof was, now, sizeof now))
        return LT_OK;
    return lt_errf(err, LT_ERR_INVALID,
                   "%s: the checkpoint was written with %s %s, this run has %s %s: --resume continues only the same "
                   "run",
                   file, name, *was ? was : "(none)", name, *now ? now : "(none)");
}

/* len: the file's bytes after the header (and the run's options). */
static lt_status check_header(const char *file, const ckpt_header *h, const ckpt_head *hd, size_t len,
                              size_t table_len, const lt_ckpt_state *s, lt_err *err)
{
    if (h->model_hash != s->model_hash || h->nparams != s->n || h->nvalues != s->nvalues ||
        h->table_bytes != (int64_t)table_len)
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
    /* the counters are checked against ranges before any arithmetic: a
     * crafted file with a good checksum must not overflow them (the trainer
     * keeps epochs in an int) */
    int64_t before;
    if (h->epoch < 1 || h->epoch >= INT_MAX || h->step < 0 || h->step > h->steps || h->global < 0 || h->seen < 0 ||
        (h->steps > 0 && h->seen > h->nsamples) || h->optim_t < 0 || h->optim_t > h->global ||
        __builtin_mul_overflow(h->epoch - 1, h->steps, &before) || before > INT64_MAX - h->step ||
        h->global != before + h->step)
        return lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (step counters out of range or inconsistent)",
                       file);
    size_t want = table_len + sizeof(int64_t) * (size_t)s->nsamples + sizeof(uint64_t);
    int k = nstate(s->opt->o.kind);
    for (int i = 0; i < s->nvalues; i++)
        want += param_bytes(s->values[i]);
    for (int i = 0; i < s->n; i++)
        want += param_bytes(s->params[i]) * (size_t)k;
    for (int i = 0; hd->has_best && i < s->nvalues; i++)
        want += param_bytes(s->values[i]);
    return check_size(file, len, want, err);
}

lt_status lt_ckpt_load(const char *dir, lt_ckpt_state *s, lt_err *err)
{
    char file[PATH_MAX];
    path_of(dir, file, sizeof file);
    lt_status st = check_optim(file, s, err);
    if (st != LT_OK)
        return st;
    unsigned char *table = NULL, *buf = NULL;
    size_t table_len = 0, len = 0;
    ckpt_header h;
    ckpt_head hd = {0};
    st = build_table(file, s, &table, &table_len, err);
    if (st == LT_OK)
        st = read_checked(file, &buf, &len, &h, &hd, err);
    /* the options first: a run with others (--limit, --val-split) would
     * also fail the shape checks below, less clearly */
    if (st == LT_OK)
        st = check_run(file, &hd, s, err);
    if (st == LT_OK)
        st = check_header(file, &h, &hd, len - hd.bytes, table_len, s, err);
    if (st == LT_OK)
        st = check_sum(file, buf, len, err);
    /* the hash already covers names and shapes; the table says it in words */
    if (st == LT_OK && memcmp(buf + hd.bytes, table, table_len) != 0)
        st = lt_errf(err, LT_ERR_INVALID, "%s: the checkpoint was written for a different model (its parameter "
                     "table differs)", file);
    free(table);
    if (st != LT_OK) {
        free(buf);
        return st;
    }
    const unsigned char *p = buf + hd.bytes + table_len;
    for (int64_t i = 0; st == LT_OK && i < s->nsamples; i++) {
        int64_t v;
        memcpy(&v, p + sizeof v * (size_t)i, sizeof v);
        if (v < 0 || v >= (s->order_max > 0 ? s->order_max : s->nsamples))
            st = lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (data order entry %lld)", file, (long long)v);
    }
    if (st != LT_OK) {
        free(buf);
        return st;
    }
    /* every check passed: only now overwrite the live state */
    if (s->nsamples > 0) /* a step-API trainer has no data order */
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
    for (int i = 0; hd.has_best && i < s->nvalues; i++) {
        if (s->best) /* a run without --save-best has no use for them */
            memcpy(s->best[i]->data, p, param_bytes(s->values[i]));
        p += param_bytes(s->values[i]);
    }
    s->best_epoch = hd.best_epoch;
    s->best_value = hd.best_value;
    s->since_best = hd.since_best;
    s->has_best = hd.has_best;
    s->opt->t = h.optim_t;
    s->epoch = h.epoch;
    s->step = h.step;
    s->global = h.global;
    s->rng = h.rng;
    s->loss_sum = h.loss_sum;
    s->seen = h.seen;
    snprintf(s->writer, sizeof s->writer, "%.*s", (int)hd.writer_len, hd.writer ? hd.writer : "");
    free(buf);
    return LT_OK;
}

/* ---- the parameters alone ---- */

/* "float32 [512,784]" */
static void describe(lt_dtype dt, int rank, const int64_t *dims, char *out, size_t len)
{
    size_t n = (size_t)snprintf(out, len, "%s [", lt_dtype_name(dt));
    for (int d = 0; d < rank && n < len; d++)
        n += (size_t)snprintf(out + n, len - n, "%s%lld", d ? "," : "", (long long)dims[d]);
    if (n < len)
        snprintf(out + n, len - n, "]");
}

/* Pairs every entry with the next unused model parameter of its name and
 * checks type and shape; then every model parameter must have been paired. */
static lt_status match_params(const char *file, entry *e, int64_t n, const lt_model *m, lt_err *err)
{
    char *used = calloc((size_t)m->nparams + 1, 1);
    if (!used)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status st = LT_OK;
    for (int64_t i = 0; i < n && st == LT_OK; i++) {
        int p = 0;
        for (; p < m->nparams; p++)
            if (!used[p] && m->params[p].name && strlen(m->params[p].name) == e[i].name_len &&
                memcmp(m->params[p].name, e[i].name, e[i].name_len) == 0)
                break;
        if (p == m->nparams) {
            st = lt_errf(err, LT_ERR_INVALID, "%s: parameter '%.*s' is not in %s: the checkpoint was written for a "
                         "different model", file, (int)e[i].name_len, e[i].name, m->path);
            break;
        }
        const lt_tensor *t = &m->params[p].data;
        int same = t->dtype == e[i].dtype && t->rank == e[i].rank;
        for (int d = 0; same && d < t->rank; d++)
            same = t->dims[d] == e[i].dims[d];
        if (!same) {
            char have[160], want[160];
            describe(e[i].dtype, e[i].rank, e[i].dims, have, sizeof have);
            describe(t->dtype, t->rank, t->dims, want, sizeof want);
            st = lt_errf(err, LT_ERR_INVALID, "%s: parameter '%s' is %s in the checkpoint but %s in %s: the checkpoint "
                         "was written for a different model", file, m->params[p].name, have, want, m->path);
            break;
        }
        used[p] = 1;
        e[i].param = p;
    }
    for (int p = 0; p < m->nparams && st == LT_OK; p++) {
        const lt_tensor *t = &m->params[p].data;
        if (!used[p] && t->dtype != LT_STRING && t->numel > 0)
            st = lt_errf(err, LT_ERR_INVALID, "%s: holds no parameter '%s' of %s: the checkpoint was written for a "
                         "different model", file, m->params[p].name, m->path);
    }
    free(used);
    return st;
}

/* A folder means the checkpoint in it. */
static void resolve(const char *path, char *file, size_t len)
{
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISDIR(sb.st_mode))
        path_of(path, file, len);
    else
        snprintf(file, len, "%s", path);
}

lt_status lt_ckpt_read_params(const char *ckpt_path_or_dir, lt_model *m, lt_err *err)
{
    char file[PATH_MAX];
    resolve(ckpt_path_or_dir, file, sizeof file);
    unsigned char *buf = NULL;
    size_t len = 0;
    ckpt_header h;
    ckpt_head hd;
    entry *e = NULL;
    lt_status st = read_checked(file, &buf, &len, &h, &hd, err);
    if (st != LT_OK)
        return st;
    /* the sizes: every count is checked against the file's length before it
     * is used, so that no sum can overflow */
    size_t rest = len - hd.bytes;
    if (h.nvalues < 0 || h.table_bytes < 0 || h.nsamples < 0 || h.optim_kind >= 6 ||
        (uint64_t)h.nvalues > (uint64_t)h.table_bytes / ENTRY_FIXED)
        st = lt_errf(err, LT_ERR_INVALID, "%s: corrupted checkpoint (header)", file);
    else if ((uint64_t)h.table_bytes > rest || (uint64_t)h.nsamples > rest / sizeof(int64_t))
        st = lt_errf(err, LT_ERR_INVALID, "%s: truncated checkpoint (%zu bytes)", file, len);
    if (st == LT_OK && !(e = calloc((size_t)h.nvalues + 1, sizeof *e)))
        st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    const unsigned char *table = buf + hd.bytes;
    if (st == LT_OK)
        st = parse_table(file, table, table + h.table_bytes, h.nvalues, e, err);
    if (st == LT_OK) {
        /* header, table, order, values, optimizer state, checksum */
        size_t want = hd.bytes + (size_t)h.table_bytes + sizeof(int64_t) * (size_t)h.nsamples, at = want;
        int k = nstate((lt_optim_kind)h.optim_kind), fits = 1;
        for (int64_t i = 0; i < h.nvalues && fits; i++) {
            size_t copies = 1 + (size_t)(e[i].trained ? k : 0) + (size_t)hd.has_best;
            fits = want <= len && e[i].bytes <= len / copies;
            if (!fits)
                break;
            e[i].data = buf + at;
            at += e[i].bytes;
            want += e[i].bytes * copies;
        }
        st = fits ? check_size(file, len, want + sizeof(uint64_t), err)
                  : lt_errf(err, LT_ERR_INVALID, "%s: truncated checkpoint (%zu bytes; its table names more)", file,
                            len);
    }
    if (st == LT_OK)
        st = check_sum(file, buf, len, err);
    if (st == LT_OK)
        st = match_params(file, e, h.nvalues, m, err);
    for (int64_t i = 0; st == LT_OK && i < h.nvalues; i++)
        if (e[i].bytes)
            memcpy(m->params[e[i].param].data.data, e[i].data, e[i].bytes);
    free(e);
    free(buf);
    return st;
}

lt_status lt_ckpt_read_info(const char *path_or_dir, lt_ckpt_info *info, lt_err *err)
{
    char file[PATH_MAX];
    resolve(path_or_dir, file, sizeof file);
    struct stat sb;
    FILE *f = lt_fopen_read(file, &sb, err);
    if (!f)
        return LT_ERR_IO;
    /* the head is at most the header and the two texts with their lengths */
    size_t want = sizeof(ckpt_header) + 3 * sizeof(uint64_t) + CKPT_MAX_RUN_TEXT + CKPT_MAX_WRITER + CKPT_MAX_STATE;
    size_t total = (size_t)sb.st_size, n = total < want ? total : want;
    unsigned char *buf = malloc(n ? n : 1);
    lt_status st = LT_OK;
    if (!buf)
        st = lt_errf(err, LT_ERR_NOMEM, "out of memory (%zu bytes for %s)", n, file);
    else if (fread(buf, 1, n, f) != n)
        st = lt_errf(err, LT_ERR_IO, "%s: cannot read the checkpoint", file);
    fclose(f);
    ckpt_header h;
    ckpt_head hd;
    if (st == LT_OK)
        st = parse_head(file, buf, n, total, &h, &hd, err);
    if (st == LT_OK) {
        memset(info, 0, sizeof *info);
        info->version = hd.version;
        snprintf(info->writer, sizeof info->writer, "%.*s", (int)hd.writer_len, hd.writer ? hd.writer : "");
        info->epoch = h.epoch;
        info->step = h.step;
        info->steps = h.steps;
        info->global = h.global;
    }
    free(buf);
    return st;
}

int lt_ckpt_is_checkpoint(const char *path)
{
    char file[PATH_MAX], magic[8];
    resolve(path, file, sizeof file);
    FILE *f = lt_fopen_read(file, NULL, NULL);
    if (!f)
        return 0;
    int yes = fread(magic, 1, 8, f) == 8 && memcmp(magic, CKPT_MAGIC, 8) == 0;
    fclose(f);
    return yes;
}

lt_status lt_model_load_checkpoint(lt_model *m, const char *checkpoint, lt_err *err)
{
    lt_status st = lt_ckpt_read_params(checkpoint, m, err);
    /* tensors the importer made copies of others (a gathered table's
     * folded form, a second folded transpose) are written from those */
    if (st == LT_OK)
        lt_ir_refresh_tied(m);
    return st;
}

int lt_is_checkpoint(const char *path) { return lt_ckpt_is_checkpoint(path); }

/* ---- the run's options and the folder's lock ---- */

char *lt_ckpt_run_text(const char *model_path, const lt_train_opts *o)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    static const char *const sched_names[] = {"constant", "step", "cosine"};
    const lt_optim_opts *op = &o->optim;
    const lt_schedule *sc = &o->schedule;
    fprintf(f, "model %s\n", model_path);
    fprintf(f, "--data %s\n", o->data && !o->train_set ? o->data : "(in memory)");
    fprintf(f, "--limit %lld\n--batch %lld\n--epochs %d\n", (long long)o->limit, (long long)o->batch, o->epochs);
    fprintf(f, "--optimizer %s\n", (unsigned)op->kind < 6 ? kind_names[op->kind] : "?");
    fprintf(f, "--lr %.17g\n--momentum %.17g\n--beta1 %.17g\n--beta2 %.17g\n--eps %.17g\n--weight-decay %.17g\n",
            sc->lr, op->momentum, op->beta1, op->beta2, op->eps, op->weight_decay);
    fprintf(f, "--schedule %s\n--warmup %lld\n--step-size %lld\n--gamma %.17g\n",
            (unsigned)sc->kind < 3 ? sched_names[sc->kind] : "?", (long long)sc->warmup, (long long)sc->step_size,
            sc->gamma);
    fprintf(f, "--clip-norm %.17g\n--loss %s\n--output %s\n", o->clip_norm, lt_loss_name(o->loss),
            o->output ? o->output : "(first)");
    fprintf(f, "--mean");
    for (int i = 0; i < o->norm.nmean; i++)
        fprintf(f, "%c%.17g", i ? ',' : ' ', o->norm.mean[i]);
    fprintf(f, "\n--std");
    for (int i = 0; i < o->norm.nstd; i++)
        fprintf(f, "%c%.17g", i ? ',' : ' ', o->norm.std[i]);
    fprintf(f, "\n--freeze");
    for (int i = 0; i < o->nfreeze; i++)
        fprintf(f, "%c%s", i ? ',' : ' ', o->freeze[i]);
    fprintf(f, "\n--seed %llu\n--shuffle %s\n--init %s\n", (unsigned long long)o->seed, o->no_shuffle ? "no" : "yes",
            o->init_random ? "random" : "keep");
    /* options added since: a line only where one is set, so that the
     * checkpoints of runs without them still match */
    if (o->norm.label_column)
        fprintf(f, "--label-column %s\n", o->norm.label_column);
    if (o->augment && *o->augment && strcmp(o->augment, "none") != 0)
        fprintf(f, "--augment %s\n", o->augment);
    if (o->labels)
        fprintf(f, "--labels %s\n", o->labels);
    for (int i = 0; i < o->nbatch_axes; i++)
        fprintf(f, "--batch-axis %s\n", o->batch_axes[i]);
    if (o->set_ignore_index)
        fprintf(f, "--ignore-index %lld\n", (long long)o->ignore_index);
    if (o->no_tie)
        fprintf(f, "--no-tie\n");
    if (o->train_constants)
        fprintf(f, "--train-constants\n");
    for (int i = 0; i < o->npadding; i++)
        fprintf(f, "--padding-idx %s=%lld\n", o->padding[i].param ? o->padding[i].param : "",
                (long long)o->padding[i].row);
    if (o->val_split > 0) {
        /* the shortest text that reads back as the same double */
        int digits = 15;
        char v[32];
        while (snprintf(v, sizeof v, "%.*g", digits, o->val_split), strtod(v, NULL) != o->val_split && digits < 17)
            digits++;
        fprintf(f, "--val-split %s\n", v);
    }
    if (o->save_best)
        fprintf(f, "--save-best yes\n");
    if (o->early_stop > 0)
        fprintf(f, "--early-stop %d\n", o->early_stop);
    if (fclose(f) != 0) {
        free(text);
        return NULL;
    }
    return text;
}

/* The temp files of checkpoint writes a killed run left in dir (named as
 * lt_atomic_open names them: LT_CKPT_FILE.tmp.XXXXXX, mkstemp's six
 * letters or digits). Only the lock's holder writes checkpoints there, so
 * once it holds the lock any such file is stale. Regular files only. */
static void remove_stale_temps(const char *dir)
{
    static const char prefix[] = LT_CKPT_FILE ".tmp.";
    const size_t pl = sizeof prefix - 1;
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *name = e->d_name;
        if (strncmp(name, prefix, pl) != 0 || strlen(name) != pl + 6)
            continue;
        int ours = 1;
        for (size_t i = pl; i < pl + 6; i++)
            ours &= isalnum((unsigned char)name[i]) != 0;
        struct stat st;
        if (ours && fstatat(dirfd(d), name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            unlinkat(dirfd(d), name, 0);
    }
    closedir(d);
}

lt_status lt_ckpt_lock(const char *dir, int *fd, lt_err *err)
{
    char file[PATH_MAX];
    *fd = -1;
    if (snprintf(file, sizeof file, "%s/checkpoint.lock", dir) >= (int)sizeof file)
        return lt_errf(err, LT_ERR_INVALID, "%s: checkpoint folder path too long", dir);
    int f = open(file, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, 0666);
    struct stat sb;
    if (f < 0 || fstat(f, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        lt_status st = lt_errf(err, LT_ERR_IO, "%s: cannot lock the checkpoint folder (%s): %s", dir, file,
                               f < 0 ? strerror(errno) : "not a regular file");
        if (f >= 0)
            close(f);
        return st;
    }
    if (flock(f, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        close(f);
        if (e == EWOULDBLOCK)
            return lt_errf(err, LT_ERR_IO,
                           "%s: the checkpoint folder is in use by another lantern run (one run per folder)", dir);
        return lt_errf(err, LT_ERR_IO, "%s: cannot lock the checkpoint folder: %s", dir, strerror(e));
    }
    *fd = f;
    remove_stale_temps(dir); /* a run killed while writing its checkpoint left them */
    return LT_OK;
}

void lt_ckpt_unlock(int fd)
{
    if (fd >= 0)
        close(fd); /* drops the flock */
}
