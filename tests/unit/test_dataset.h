/* Helpers shared by the dataset suites: a temp folder, seeded bytes, and
 * writers for the files the loaders read (gzip IDX, raw bytes, .npy, zip
 * archives with stored or raw-deflated members), all through zlib. */
#ifndef LT_TEST_DATASET_H
#define LT_TEST_DATASET_H

#include "testutil.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

static inline uint64_t td_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* n seeded bytes below mod (mod 256: any byte). */
static inline uint8_t *td_bytes(size_t n, unsigned mod, uint64_t seed)
{
    uint8_t *b = malloc(n ? n : 1);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(td_next(&seed) % mod);
    return b;
}

static inline double td_uniform(uint64_t *s, double lo, double hi)
{
    return lo + (hi - lo) * (double)(td_next(s) >> 11) / 9007199254740992.0;
}

static inline void td_tmpdir(char *buf, size_t len)
{
    snprintf(buf, len, "/tmp/lt_dataset_XXXXXX");
    assert_non_null(mkdtemp(buf));
}

/* Removes dir and everything below it. */
static inline void td_rmtree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        size_t n = strlen(dir) + strlen(e->d_name) + 2;
        char *p = malloc(n);
        assert_non_null(p);
        snprintf(p, n, "%s/%s", dir, e->d_name);
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            td_rmtree(p);
        else
            unlink(p);
        free(p);
    }
    closedir(d);
    rmdir(dir);
}

static inline void td_write(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

static inline uint8_t *td_read(const char *path, size_t *len) { return tu_slurp(path, len); }

static inline void td_write_gz(const char *path, const void *data, size_t len)
{
    gzFile g = gzopen(path, "wb");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, data, (unsigned)len), (int)len);
    assert_int_equal(gzclose(g), Z_OK);
}

/* An IDX file of unsigned bytes: magic, big-endian dims, payload. */
static inline uint8_t *td_idx(int ndim, const int64_t *dims, const uint8_t *payload, size_t *len)
{
    size_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= (size_t)dims[i];
    *len = 4 + 4 * (size_t)ndim + n;
    uint8_t *b = malloc(*len);
    assert_non_null(b);
    b[0] = b[1] = 0;
    b[2] = 0x08;
    b[3] = (uint8_t)ndim;
    for (int i = 0; i < ndim; i++)
        for (int k = 0; k < 4; k++)
            b[4 + 4 * i + k] = (uint8_t)(dims[i] >> (24 - 8 * k));
    memcpy(b + 4 + 4 * ndim, payload, n);
    return b;
}

/* A .npy file: header dict padded so the data starts at a multiple of 64. */
static inline uint8_t *td_npy(const char *descr, int fortran, int rank, const int64_t *dims, const void *data,
                              size_t nbytes, size_t *len)
{
    char shape[256] = "", dict[512];
    size_t at = 0;
    for (int i = 0; i < rank; i++)
        at += (size_t)snprintf(shape + at, sizeof shape - at, "%lld,%s", (long long)dims[i], i + 1 < rank ? " " : "");
    if (rank > 1)
        shape[at - 1] = 0; /* (a, b) but (a,) */
    int hl = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }", descr,
                      fortran ? "True" : "False", shape);
    int total = (10 + hl + 1 + 63) / 64 * 64;
    *len = (size_t)total + nbytes;
    uint8_t *b = malloc(*len);
    assert_non_null(b);
    memcpy(b, "\x93NUMPY\x01\x00", 8);
    b[8] = (uint8_t)((total - 10) & 0xff);
    b[9] = (uint8_t)((total - 10) >> 8);
    memcpy(b + 10, dict, (size_t)hl);
    memset(b + 10 + hl, ' ', (size_t)(total - 10 - hl));
    b[total - 1] = '\n';
    memcpy(b + total, data, nbytes);
    return b;
}

typedef struct td_member {
    const char *name;
    const uint8_t *data;
    size_t len;
    int method; /* 0 stored, 8 deflated (raw, windowBits -15), other: written stored under that number */
} td_member;

static inline void td_put16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void td_put32(uint8_t *p, uint32_t v)
{
    td_put16(p, v & 0xffff);
    td_put16(p + 2, v >> 16);
}
static inline void td_put64(uint8_t *p, uint64_t v)
{
    td_put32(p, (uint32_t)v);
    td_put32(p + 4, (uint32_t)(v >> 32));
}

static inline uint8_t *td_deflate_raw(const uint8_t *d, size_t n, size_t *out_len)
{
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&zs, (uLong)n);
    uint8_t *o = malloc(cap);
    assert_non_null(o);
    zs.next_in = (Bytef *)d;
    zs.avail_in = (uInt)n;
    zs.next_out = o;
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    *out_len = zs.total_out;
    deflateEnd(&zs);
    return o;
}

/* A zip archive of the members. zip64: every member's sizes and offset go
 * to a zip64 extra field (central and local, as numpy writes them), and the
 * end record defers to a zip64 end record. */
static inline uint8_t *td_zip(const td_member *m, int n, int zip64, size_t *len)
{
    size_t cap = 1024;
    for (int i = 0; i < n; i++)
        cap += 2 * (m[i].len + 200) + 64;
    uint8_t *z = calloc(1, cap), *cd = calloc(1, 200 * (size_t)n + 1);
    assert_non_null(z);
    assert_non_null(cd);
    size_t at = 0, cl = 0;
    for (int i = 0; i < n; i++) {
        size_t clen = m[i].len, nl = strlen(m[i].name);
        uint8_t *comp = NULL;
        const uint8_t *payload = m[i].data;
        if (m[i].method == 8)
            payload = comp = td_deflate_raw(m[i].data, m[i].len, &clen);
        uint32_t crc = (uint32_t)crc32(crc32(0L, Z_NULL, 0), m[i].data, (uInt)m[i].len);
        uint32_t c32 = zip64 ? 0xffffffffu : (uint32_t)clen, u32 = zip64 ? 0xffffffffu : (uint32_t)m[i].len;
        uint8_t *l = z + at;
        td_put32(l, 0x04034b50);
        td_put16(l + 4, zip64 ? 45 : 20);
        td_put16(l + 8, (unsigned)m[i].method);
        td_put16(l + 12, 0x21);
        td_put32(l + 14, crc);
        td_put32(l + 18, c32);
        td_put32(l + 22, u32);
        td_put16(l + 26, (unsigned)nl);
        td_put16(l + 28, zip64 ? 20 : 0);
        memcpy(l + 30, m[i].name, nl);
        if (zip64) {
            td_put16(l + 30 + nl, 1);
            td_put16(l + 32 + nl, 16);
            td_put64(l + 34 + nl, m[i].len);
            td_put64(l + 42 + nl, clen);
        }
        size_t lho = at;
        at += 30 + nl + (zip64 ? 20 : 0);
        memcpy(z + at, payload, clen);
        at += clen;
        uint8_t *c = cd + cl;
        td_put32(c, 0x02014b50);
        td_put16(c + 4, 45);
        td_put16(c + 6, zip64 ? 45 : 20);
        td_put16(c + 10, (unsigned)m[i].method);
        td_put16(c + 14, 0x21);
        td_put32(c + 16, crc);
        td_put32(c + 20, c32);
        td_put32(c + 24, u32);
        td_put16(c + 28, (unsigned)nl);
        td_put16(c + 30, zip64 ? 28 : 0);
        td_put32(c + 42, zip64 ? 0xffffffffu : (uint32_t)lho);
        memcpy(c + 46, m[i].name, nl);
        if (zip64) {
            td_put16(c + 46 + nl, 1);
            td_put16(c + 48 + nl, 24);
            td_put64(c + 50 + nl, m[i].len);
            td_put64(c + 58 + nl, clen);
            td_put64(c + 66 + nl, lho);
        }
        cl += 46 + nl + (zip64 ? 28 : 0);
        free(comp);
    }
    size_t cd_off = at;
    memcpy(z + at, cd, cl);
    at += cl;
    free(cd);
    if (zip64) {
        uint8_t *r = z + at;
        td_put32(r, 0x06064b50);
        td_put64(r + 4, 44);
        td_put16(r + 12, 45);
        td_put16(r + 14, 45);
        td_put64(r + 24, (uint64_t)n);
        td_put64(r + 32, (uint64_t)n);
        td_put64(r + 40, cl);
        td_put64(r + 48, cd_off);
        uint8_t *loc = r + 56;
        td_put32(loc, 0x07064b50);
        td_put64(loc + 8, at);
        td_put32(loc + 16, 1);
        at += 76;
    }
    uint8_t *e = z + at;
    td_put32(e, 0x06054b50);
    td_put16(e + 8, zip64 ? 0xffff : (unsigned)n);
    td_put16(e + 10, zip64 ? 0xffff : (unsigned)n);
    td_put32(e + 12, zip64 ? 0xffffffffu : (uint32_t)cl);
    td_put32(e + 16, zip64 ? 0xffffffffu : (uint32_t)cd_off);
    at += 22;
    *len = at;
    return z;
}

/* One array of an npz td_write_npz writes: member name (NAME.npy), npy
 * descr, shape and nbytes of data. */
typedef struct td_array {
    const char *name, *descr;
    int rank;
    const int64_t *dims;
    const void *data;
    size_t nbytes;
} td_array;

/* An .npz of n arrays at path (stored and deflated alternately). */
static inline void td_write_npz(const char *path, const td_array *a, int n)
{
    td_member m[16];
    assert_true(n <= 16);
    for (int i = 0; i < n; i++) {
        m[i] = (td_member){a[i].name, NULL, 0, i % 2 ? 8 : 0};
        m[i].data = td_npy(a[i].descr, 0, a[i].rank, a[i].dims, a[i].data, a[i].nbytes, &m[i].len);
    }
    size_t len;
    uint8_t *z = td_zip(m, n, 0, &len);
    td_write(path, z, len);
    free(z);
    for (int i = 0; i < n; i++)
        free((void *)m[i].data);
}

/* Asserts a one-line failure with the given status whose message holds
 * every given fragment (NULL-terminated). */
static inline void td_fails(lt_status got, lt_status want, const lt_err *err, const char *frag, ...)
{
    if (got != want)
        fail_msg("status %d (want %d): %s", got, want, got == LT_OK ? "(ok)" : err->msg);
    assert_null(strchr(err->msg, '\n'));
    va_list ap;
    va_start(ap, frag);
    for (const char *f = frag; f; f = va_arg(ap, const char *))
        if (!strstr(err->msg, f))
            fail_msg("message '%s' lacks '%s'", err->msg, f);
    va_end(ap);
}

/* Opens spec's split and asserts it fails as td_fails describes. */
#define td_open_fails(spec, split, want, ...)                                                                          \
    do {                                                                                                               \
        lt_dataset *d_ = (lt_dataset *)0x1;                                                                            \
        lt_err e_;                                                                                                     \
        lt_status s_ = lt_dataset_open(spec, split, &d_, &e_);                                                         \
        if (s_ == LT_OK)                                                                                               \
            lt_dataset_free(d_);                                                                                       \
        else                                                                                                           \
            assert_null(d_);                                                                                           \
        td_fails(s_, want, &e_, __VA_ARGS__, NULL);                                                                    \
    } while (0)

/* x (float32 [n, numel]) and y (int64 [n] or float32 [n, tnumel]) for a
 * gather of n samples from d. */
static inline void td_batch_tensors(const lt_dataset *d, int64_t n, lt_tensor *x, lt_tensor *y)
{
    lt_err err;
    int64_t xd[2] = {n, lt_dataset_sample_numel(d)};
    assert_int_equal(lt_tensor_alloc(x, LT_F32, 2, xd, &err), LT_OK);
    int tr;
    int64_t td[LT_MAX_RANK], yd[2] = {n, 1};
    lt_dataset_target_shape(d, &tr, td);
    for (int i = 0; i < tr; i++)
        yd[1] *= td[i];
    if (lt_dataset_has_classes(d))
        assert_int_equal(lt_tensor_alloc(y, LT_I64, 1, yd, &err), LT_OK);
    else
        assert_int_equal(lt_tensor_alloc(y, LT_F32, 2, yd, &err), LT_OK);
}

#endif
