/* Stored-member zip + .npy header parsing for the benchmarks (see npz_read.h).
 * Zip layout (PKWARE APPNOTE): the end of central directory record (signature
 * 0x06054b50) gives the central directory; each central header (0x02014b50)
 * gives a member's method, sizes and local header offset; the data follows
 * the local header (0x04034b50, 30 bytes + name + extra). ZIP64 sizes are
 * taken from the central header's extra field when the 32-bit fields are
 * saturated. */
#include "npz_read.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t rd16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t rd32(const unsigned char *p) { return rd16(p) | rd16(p + 2) << 16; }
static uint64_t rd64(const unsigned char *p) { return rd32(p) | (uint64_t)rd32(p + 4) << 32; }

static int fail(char *err, size_t len, const char *path, const char *what)
{
    snprintf(err, len, "%s: %s", path, what);
    return -1;
}

/* The .npy at b[0..n) into t (data borrowed). */
static int parse_npy(const unsigned char *b, uint64_t n, lt_tensor *t)
{
    if (n < 10 || memcmp(b, "\x93NUMPY", 6) != 0)
        return -1;
    uint64_t hl, off;
    if (b[6] == 1) {
        hl = rd16(b + 8);
        off = 10;
    } else {
        if (n < 12)
            return -1;
        hl = rd32(b + 8);
        off = 12;
    }
    if (off + hl > n || hl > 4096)
        return -1;
    char h[4097];
    memcpy(h, b + off, hl);
    h[hl] = 0;
    const char *d = strstr(h, "'descr'");
    const char *f = strstr(h, "'fortran_order'");
    const char *s = strstr(h, "'shape'");
    if (!d || !f || !s)
        return -1;
    d = strchr(d + 7, '\'');
    if (!d)
        return -1;
    static const struct {
        const char *descr;
        lt_dtype dt;
    } types[] = {{"'<f4'", LT_F32}, {"'<f8'", LT_F64}, {"'<i8'", LT_I64}, {"'<i4'", LT_I32},
                 {"'|u1'", LT_U8},  {"'|b1'", LT_BOOL}};
    t->dtype = LT_UNDEFINED;
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++)
        if (!strncmp(d, types[k].descr, strlen(types[k].descr)))
            t->dtype = types[k].dt;
    if (t->dtype == LT_UNDEFINED || strncmp(strchr(f, ':') + 1, " False", 6) != 0)
        return -1;
    const char *p = strchr(s, '(');
    if (!p)
        return -1;
    p++;
    t->rank = 0;
    t->numel = 1;
    while (*p && *p != ')') {
        char *e;
        long long v = strtoll(p, &e, 10);
        if (e == p) {
            p++;
            continue;
        }
        if (t->rank == LT_MAX_RANK || v < 0)
            return -1;
        t->dims[t->rank++] = v;
        t->numel *= v;
        p = e;
    }
    if (off + hl + (uint64_t)t->numel * lt_dtype_size(t->dtype) > n)
        return -1;
    t->data = (void *)(b + off + hl);
    t->buf = NULL;
    return 0;
}

int bench_npz_open(const char *path, bench_npz *z, char *err, size_t errlen)
{
    memset(z, 0, sizeof *z);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return fail(err, errlen, path, "cannot open");
    long size = -1;
    if (fseek(fp, 0, SEEK_END) == 0)
        size = ftell(fp);
    if (size < 22 || fseek(fp, 0, SEEK_SET) != 0 || !(z->buf = malloc((size_t)size)) ||
        fread(z->buf, 1, (size_t)size, fp) != (size_t)size) {
        fclose(fp);
        bench_npz_close(z);
        return fail(err, errlen, path, "cannot read");
    }
    fclose(fp);
    const unsigned char *b = z->buf;
    long e = size - 22;
    while (e >= 0 && rd32(b + e) != 0x06054b50)
        e--;
    if (e < 0) {
        bench_npz_close(z);
        return fail(err, errlen, path, "not a zip archive");
    }
    uint32_t count = rd16(b + e + 10);
    uint64_t cd = rd32(b + e + 16);
    z->a = calloc(count ? count : 1, sizeof *z->a);
    if (!z->a) {
        bench_npz_close(z);
        return fail(err, errlen, path, "out of memory");
    }
    for (uint32_t i = 0; i < count; i++) {
        if (cd + 46 > (uint64_t)size || rd32(b + cd) != 0x02014b50)
            break;
        uint32_t method = rd16(b + cd + 10);
        uint64_t csize = rd32(b + cd + 20), usize = rd32(b + cd + 24);
        uint32_t nl = rd16(b + cd + 28), xl = rd16(b + cd + 30), cl = rd16(b + cd + 32);
        uint64_t loc = rd32(b + cd + 42);
        if (cd + 46 + nl + xl > (uint64_t)size)
            break;
        /* ZIP64 extra field (id 1): the saturated fields in order usize, csize, offset */
        for (uint64_t x = cd + 46 + nl; x + 4 <= cd + 46 + nl + xl;) {
            uint32_t id = rd16(b + x), len = rd16(b + x + 2);
            if (id == 1) {
                uint64_t q = x + 4;
                if (usize == 0xffffffffu && q + 8 <= x + 4 + len)
                    usize = rd64(b + q), q += 8;
                if (csize == 0xffffffffu && q + 8 <= x + 4 + len)
                    csize = rd64(b + q), q += 8;
                if (loc == 0xffffffffu && q + 8 <= x + 4 + len)
                    loc = rd64(b + q);
            }
            x += 4 + len;
        }
        bench_array *a = &z->a[z->n];
        size_t keep = nl < sizeof a->name ? nl : sizeof a->name - 1;
        memcpy(a->name, b + cd + 46, keep);
        a->name[keep] = 0;
        char *dot = strstr(a->name, ".npy");
        if (dot && dot[4] == 0)
            *dot = 0;
        if (method != 0 || csize != usize || loc + 30 > (uint64_t)size || rd32(b + loc) != 0x04034b50) {
            snprintf(err, errlen, "%s: member %s is compressed or damaged (write it with numpy.savez)", path,
                     a->name);
            bench_npz_close(z);
            return -1;
        }
        uint64_t data = loc + 30 + rd16(b + loc + 26) + rd16(b + loc + 28);
        if (data + csize > (uint64_t)size || parse_npy(b + data, csize, &a->t) != 0) {
            snprintf(err, errlen, "%s: member %s is not a little-endian C-order .npy of a supported type", path,
                     a->name);
            bench_npz_close(z);
            return -1;
        }
        z->n++;
        cd += 46 + nl + xl + cl;
    }
    if ((uint32_t)z->n != count) {
        bench_npz_close(z);
        return fail(err, errlen, path, "damaged central directory");
    }
    return 0;
}

void bench_npz_close(bench_npz *z)
{
    free(z->buf);
    free(z->a);
    memset(z, 0, sizeof *z);
}

const bench_array *bench_npz_find(const bench_npz *z, const char *name)
{
    for (int i = 0; i < z->n; i++)
        if (!strcmp(z->a[i].name, name))
            return &z->a[i];
    return NULL;
}
