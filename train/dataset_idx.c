/* Datasets in MNIST's IDX format (unsigned bytes), gzip-compressed or plain,
 * read through zlib. The header is read first so the payload is allocated
 * once at its exact size, and every header field is checked against the
 * data that follows it. */
#include "dataset_impl.h"
#include "../importer/open_read.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* deflate cannot expand data more than about 1032:1; a header promising
 * more than that from its file is refused before anything is allocated */
#define LT_IDX_MAX_RATIO 1100

/* "DIR/train-images-idx3-ubyte.gz", or the file without .gz when only that
 * exists. */
static void idx_path(char *buf, size_t len, const char *dir, int split, const char *what)
{
    snprintf(buf, len, "%s/%s-%s-ubyte.gz", dir, split ? "t10k" : "train", what);
    if (lt_ds_file_exists(buf))
        return;
    char plain[4200];
    snprintf(plain, sizeof plain, "%s/%s-%s-ubyte", dir, split ? "t10k" : "train", what);
    if (lt_ds_file_exists(plain))
        snprintf(buf, len, "%s", plain);
}

int lt_ds_has_idx(const char *dir, int split)
{
    char ip[4200], lp[4200];
    idx_path(ip, sizeof ip, dir, split, "images-idx3");
    idx_path(lp, sizeof lp, dir, split, "labels-idx1");
    return lt_ds_file_exists(ip) && lt_ds_file_exists(lp);
}

/* Why gzread came up short: corrupt or truncated compressed data, or
 * (no zlib error) a clean end of file. */
static lt_status gz_short(gzFile g, const char *path, const char *clean_msg, lt_err *err)
{
    int e;
    const char *msg = gzerror(g, &e);
    if (e == Z_BUF_ERROR)
        return lt_errf(err, LT_ERR_INVALID, "%s: truncated gzip data", path);
    if (e != Z_OK && e != Z_STREAM_END)
        return lt_errf(err, LT_ERR_INVALID, "%s: corrupt gzip data (%s)", path, msg);
    return lt_errf(err, LT_ERR_INVALID, "%s: %s", path, clean_msg);
}

/* Reads n bytes; *got says how many arrived (less at end of data). */
static bool gz_read(gzFile g, uint8_t *buf, size_t n, size_t *got)
{
    *got = 0;
    while (*got < n) {
        size_t want = n - *got > (1u << 30) ? (1u << 30) : n - *got;
        int r = gzread(g, buf + *got, (unsigned)want);
        if (r <= 0)
            return r == 0;
        *got += (size_t)r;
    }
    return true;
}

/* Reads an IDX file of unsigned bytes with ndim dims (0: any of 1..
 * LT_MAX_RANK): *data receives the payload alone. */
static lt_status idx_read(const char *path, int want_ndim, int *ndim, int64_t *dims, uint8_t **data, lt_err *err)
{
    *data = NULL;
    struct stat st;
    int fd = lt_open_read(path, &st, err);
    if (fd < 0)
        return LT_ERR_IO;
    gzFile g = gzdopen(fd, "rb");
    if (!g) {
        close(fd);
        return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory opening it", path);
    }
    gzbuffer(g, 1 << 18);
    uint8_t hdr[4 * (LT_MAX_RANK + 1)], extra;
    uint8_t *buf = NULL;
    size_t got;
    uint64_t total = 1;
    int nd = 0;
    lt_status s = LT_OK;
    if (!gz_read(g, hdr, 4, &got) || got < 4) {
        s = gz_short(g, path, "too short for an IDX header", err);
        goto done;
    }
    nd = hdr[3];
    if (hdr[0] != 0 || hdr[1] != 0 || hdr[2] != 0x08 || nd < 1 || nd > LT_MAX_RANK ||
        (want_ndim && nd != want_ndim)) {
        s = lt_errf(err, LT_ERR_INVALID,
                    "%s: not an IDX file of %s unsigned bytes (bad magic %02x %02x %02x %02x)", path,
                    want_ndim == 1 ? "1-D" : "1-D to 8-D", hdr[0], hdr[1], hdr[2], hdr[3]);
        goto done;
    }
    if (!gz_read(g, hdr + 4, 4 * (size_t)nd, &got) || got < 4 * (size_t)nd) {
        s = gz_short(g, path, "truncated IDX header", err);
        goto done;
    }
    for (int i = 0; i < nd; i++) {
        const uint8_t *p = hdr + 4 + 4 * i;
        dims[i] = (int64_t)((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]);
        total *= (uint64_t)dims[i];
        if (total > (uint64_t)st.st_size * LT_IDX_MAX_RATIO + 4096) {
            s = lt_errf(err, LT_ERR_INVALID, "%s: IDX dims promise more data than a %lld-byte file can hold", path,
                        (long long)st.st_size);
            goto done;
        }
    }
    if (total == 0) {
        s = lt_errf(err, LT_ERR_INVALID, "%s: IDX dims hold no data", path);
        goto done;
    }
    if (!(buf = malloc((size_t)total))) {
        s = lt_errf(err, LT_ERR_NOMEM, "%s: out of memory for %llu bytes", path, (unsigned long long)total);
        goto done;
    }
    char msg[160];
    bool ok = gz_read(g, buf, (size_t)total, &got);
    if (!ok || got < total) {
        snprintf(msg, sizeof msg, "IDX header promises %llu data bytes, the file holds %zu", (unsigned long long)total,
                 got);
        s = gz_short(g, path, msg, err);
        goto done;
    }
    /* the end of the data must be the end of the file (and of a complete
     * gzip stream, whose CRC gzread checks there) */
    ok = gz_read(g, &extra, 1, &got);
    if (ok && got) {
        s = lt_errf(err, LT_ERR_INVALID, "%s: IDX header promises %llu data bytes, the file holds more", path,
                    (unsigned long long)total);
        goto done;
    }
    if (!ok)
        s = gz_short(g, path, "read error", err);
done:
    if (gzclose(g) == Z_BUF_ERROR && s == LT_OK)
        s = lt_errf(err, LT_ERR_INVALID, "%s: truncated gzip data", path);
    if (s != LT_OK) {
        free(buf);
        return s;
    }
    *ndim = nd;
    *data = buf;
    return LT_OK;
}

lt_status lt_ds_open_idx(lt_dataset *d, const char *dir, int split, lt_err *err)
{
    char ip[4200], lp[4200];
    idx_path(ip, sizeof ip, dir, split, "images-idx3");
    idx_path(lp, sizeof lp, dir, split, "labels-idx1");
    int64_t idims[LT_MAX_RANK], ldims[1];
    int ind, lnd;
    uint8_t *lab = NULL;
    lt_status s = idx_read(ip, 0, &ind, idims, &d->xu8, err);
    if (s == LT_OK)
        s = idx_read(lp, 1, &lnd, ldims, &lab, err);
    if (s == LT_OK && idims[0] != ldims[0])
        s = lt_errf(err, LT_ERR_INVALID, "%s: %lld images but %lld labels in %s", ip, (long long)idims[0],
                    (long long)ldims[0], lp);
    if (s == LT_OK && !(d->cls = malloc(sizeof *d->cls * (size_t)ldims[0])))
        s = lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", lp);
    for (int64_t i = 0; s == LT_OK && i < ldims[0]; i++) {
        if (lab[i] > 9)
            s = lt_errf(err, LT_ERR_INVALID, "%s: label %lld is %d, outside 0..9", lp, (long long)i, lab[i]);
        else
            d->cls[i] = lab[i];
    }
    free(lab);
    if (s != LT_OK)
        return s;
    d->n = idims[0];
    d->rank = ind - 1;
    memcpy(d->dims, idims + 1, sizeof *d->dims * (size_t)d->rank);
    d->numel = lt_shape_numel(d->rank, d->dims);
    d->classes = 1;
    d->num_classes = 10;
    return LT_OK;
}
