/* Datasets: MNIST-style IDX files, gzip-compressed, read through zlib. Every
 * header field is checked against the data that follows it. */
#include "runtime.h"
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define LT_DEFAULT_FASHION_DIR "/usr/share/datasets/fashion-mnist"

struct lt_dataset {
    int64_t n, rows, cols;
    uint8_t *pixels; /* n * rows * cols */
    uint8_t *labels; /* n */
};

static lt_status gunzip_file(const char *path, uint8_t **out, size_t *len, lt_err *err)
{
    gzFile g = gzopen(path, "rb");
    if (!g)
        return lt_errf(err, LT_ERR_IO, "%s: cannot open", path);
    size_t cap = 1 << 20, n = 0;
    uint8_t *buf = malloc(cap);
    lt_status s = LT_OK;
    while (buf) {
        if (n == cap) {
            if (cap > ((size_t)1 << 32)) {
                s = lt_errf(err, LT_ERR_INVALID, "%s: decompresses to more than 4 GiB", path);
                break;
            }
            uint8_t *q = realloc(buf, cap * 2);
            if (!q)
                break;
            buf = q;
            cap *= 2;
        }
        int r = gzread(g, buf + n, (unsigned)(cap - n));
        if (r < 0) {
            int e;
            const char *msg = gzerror(g, &e);
            s = lt_errf(err, LT_ERR_INVALID, "%s: corrupt gzip data (%s)", path, msg);
            break;
        }
        if (r == 0) {
            /* a truncated stream ends without its trailer: zlib reports it */
            int e;
            gzerror(g, &e);
            if (e != Z_OK && e != Z_STREAM_END)
                s = lt_errf(err, LT_ERR_INVALID, "%s: truncated gzip data", path);
            break;
        }
        n += (size_t)r;
    }
    int ce = gzclose(g);
    if (s == LT_OK && ce == Z_BUF_ERROR)
        s = lt_errf(err, LT_ERR_INVALID, "%s: truncated gzip data", path);
    if (!buf && s == LT_OK)
        s = lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", path);
    if (s != LT_OK) {
        free(buf);
        return s;
    }
    *out = buf;
    *len = n;
    return LT_OK;
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }

/* Checks an IDX header of unsigned bytes with `ndim` dims; returns them. */
static lt_status idx_header(const char *path, const uint8_t *d, size_t len, int ndim, int64_t *dims, lt_err *err)
{
    if (len < 4 + 4 * (size_t)ndim || d[0] != 0 || d[1] != 0 || d[2] != 0x08 || d[3] != ndim)
        return lt_errf(err, LT_ERR_INVALID, "%s: not an IDX file of %d-D unsigned bytes (bad magic)", path, ndim);
    uint64_t total = 1;
    for (int i = 0; i < ndim; i++) {
        dims[i] = be32(d + 4 + 4 * i);
        total *= (uint64_t)dims[i];
        if (total > ((uint64_t)1 << 34))
            return lt_errf(err, LT_ERR_INVALID, "%s: IDX dims are implausibly large", path);
    }
    if (len - 4 - 4 * (size_t)ndim != total)
        return lt_errf(err, LT_ERR_INVALID, "%s: IDX header promises %llu bytes, the file holds %zu", path,
                       (unsigned long long)total, len - 4 - 4 * (size_t)ndim);
    return LT_OK;
}

lt_status lt_dataset_open(const char *spec, int split, lt_dataset **out, lt_err *err)
{
    *out = NULL;
    char name[64], dir[4096];
    const char *eq = strchr(spec, '=');
    size_t nl = eq ? (size_t)(eq - spec) : strlen(spec);
    if (nl >= sizeof name)
        return lt_errf(err, LT_ERR_INVALID, "unknown dataset '%s'", spec);
    memcpy(name, spec, nl);
    name[nl] = 0;
    if (strcmp(name, "fashion-mnist") != 0 && strcmp(name, "mnist") != 0)
        return lt_errf(err, LT_ERR_INVALID, "unknown dataset '%s' (this build reads fashion-mnist and mnist)", name);
    if (eq)
        snprintf(dir, sizeof dir, "%s", eq + 1);
    else if (strcmp(name, "fashion-mnist") == 0)
        snprintf(dir, sizeof dir, "%s", LT_DEFAULT_FASHION_DIR);
    else
        return lt_errf(err, LT_ERR_INVALID, "mnist needs a folder: --data mnist=DIR");
    const char *pre = split ? "t10k" : "train";
    char ip[4200], lp[4200];
    snprintf(ip, sizeof ip, "%s/%s-images-idx3-ubyte.gz", dir, pre);
    snprintf(lp, sizeof lp, "%s/%s-labels-idx1-ubyte.gz", dir, pre);
    uint8_t *img = NULL, *lab = NULL;
    size_t il, ll;
    int64_t idims[3] = {0}, ldims[1] = {0};
    lt_status s = gunzip_file(ip, &img, &il, err);
    if (s == LT_OK)
        s = gunzip_file(lp, &lab, &ll, err);
    if (s == LT_OK)
        s = idx_header(ip, img, il, 3, idims, err);
    if (s == LT_OK)
        s = idx_header(lp, lab, ll, 1, ldims, err);
    if (s == LT_OK && idims[0] != ldims[0])
        s = lt_errf(err, LT_ERR_INVALID, "%s: %lld images but %lld labels in %s", ip, (long long)idims[0],
                    (long long)ldims[0], lp);
    for (int64_t i = 0; s == LT_OK && i < ldims[0]; i++)
        if (lab[8 + i] > 9)
            s = lt_errf(err, LT_ERR_INVALID, "%s: label %lld is %d, outside 0..9", lp, (long long)i, lab[8 + i]);
    lt_dataset *d = s == LT_OK ? calloc(1, sizeof *d) : NULL;
    if (s == LT_OK && !d)
        s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (s != LT_OK) {
        free(img);
        free(lab);
        return s;
    }
    d->n = idims[0];
    d->rows = idims[1];
    d->cols = idims[2];
    memmove(img, img + 16, (size_t)(il - 16));
    memmove(lab, lab + 8, (size_t)(ll - 8));
    d->pixels = img;
    d->labels = lab;
    *out = d;
    return LT_OK;
}

void lt_dataset_free(lt_dataset *d)
{
    if (!d)
        return;
    free(d->pixels);
    free(d->labels);
    free(d);
}

int64_t lt_dataset_size(const lt_dataset *d) { return d->n; }

lt_status lt_dataset_batch(const lt_dataset *d, int64_t start, int64_t n, int rank, const int64_t *shape,
                           lt_value **x, lt_value **y, lt_err *err)
{
    if (start < 0 || n <= 0 || start + n > d->n)
        return lt_errf(err, LT_ERR_INVALID, "batch [%lld, %lld) is outside the dataset's %lld samples",
                       (long long)start, (long long)(start + n), (long long)d->n);
    int64_t per = d->rows * d->cols, inner = 1;
    if (rank < 1 || rank > LT_MAX_RANK)
        return lt_errf(err, LT_ERR_INVALID, "bad input rank %d", rank);
    for (int i = 1; i < rank; i++)
        inner *= shape[i];
    if (inner != per)
        return lt_errf(err, LT_ERR_INVALID, "the model's input holds %lld values per sample, the images have %lldx%lld",
                       (long long)inner, (long long)d->rows, (long long)d->cols);
    int64_t dims[LT_MAX_RANK];
    memcpy(dims, shape, sizeof *dims * rank);
    dims[0] = n;
    lt_value *xv = lt_value_new_tensor(), *yv = lt_value_new_tensor();
    lt_status s = xv && yv ? LT_OK : lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (s == LT_OK)
        s = lt_tensor_alloc(&xv->t, LT_F32, rank, dims, err);
    if (s == LT_OK)
        s = lt_tensor_alloc(&yv->t, LT_I64, 1, &n, err);
    if (s != LT_OK) {
        lt_value_free(xv);
        lt_value_free(yv);
        return s;
    }
    float *xp = xv->t.data;
    const uint8_t *src = d->pixels + start * per;
    for (int64_t i = 0; i < n * per; i++)
        xp[i] = src[i] * (1.0f / 255.0f);
    for (int64_t i = 0; i < n; i++)
        ((int64_t *)yv->t.data)[i] = d->labels[start + i];
    *x = xv;
    *y = yv;
    return LT_OK;
}
