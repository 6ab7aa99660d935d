/* NumPy .npz datasets: a zip archive whose members (x.npy, y.npy,
 * x_test.npy, y_test.npy, or any named arrays) are stored or deflated; the
 * members are read one by one through lt_npz_* (dataset_arrays.c reads named
 * arrays that way), the x / y pair by lt_ds_open_npz. The central directory is
 * the authority on sizes (numpy writes zip64 local headers whose sizes are
 * placeholders); every offset and size is checked against the file before
 * it is used, and every member's CRC-32 against its data. */
#include "dataset_impl.h"
#include "../importer/open_read.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#define ZIP_EOCD_LEN 22
#define ZIP_MAX_COMMENT 65535
#define ZIP_MAX_CD ((uint64_t)1 << 26) /* npz archives list a handful of members */
#define ZIP_MAX_RATIO 1100              /* deflate expands at most about 1032:1 */
#define ZIP_CHUNK ((size_t)1 << 20)

#define ZIP_MAX_MEMBERS 4096

typedef struct zip_member {
    char *name; /* NUL-terminated copy */
    int method, flags;
    uint32_t crc;
    uint64_t csize, usize, lho; /* lho: offset of the local header */
} zip_member;

typedef struct zip_dir {
    const char *path;
    FILE *f;
    uint64_t fsize, cd_off; /* member data lies before the central directory */
    int nm;
    zip_member *m;
    char listing[256]; /* the archive's members, for messages */
} zip_dir;

struct lt_npz {
    zip_dir z;
};

static void zip_close(zip_dir *z)
{
    if (z->f)
        fclose(z->f);
    for (int i = 0; i < z->nm; i++)
        free(z->m[i].name);
    free(z->m);
    z->f = NULL;
    z->m = NULL;
    z->nm = 0;
}

/* the member of that name, or -1 */
static int zip_find(const zip_dir *z, const char *name)
{
    for (int i = 0; i < z->nm; i++)
        if (!strcmp(z->m[i].name, name))
            return i;
    return -1;
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

static bool read_at(FILE *f, uint64_t off, void *buf, size_t n)
{
    return fseeko(f, (off_t)off, SEEK_SET) == 0 && fread(buf, 1, n, f) == n;
}

/* The zip64 end-of-central-directory record, found through the locator
 * just before the classic record at eocd. */
static lt_status zip64_eocd(zip_dir *z, uint64_t eocd, uint64_t *entries, uint64_t *cd_size, uint64_t *cd_off,
                            uint64_t *cd_end, lt_err *err)
{
    uint8_t loc[20], rec[56];
    if (eocd < 20 || !read_at(z->f, eocd - 20, loc, 20) || le32(loc) != 0x07064b50)
        return lt_errf(err, LT_ERR_INVALID, "%s: zip64 archive without its end-of-central-directory locator", z->path);
    uint64_t at = le64(loc + 8);
    if (at > eocd - 20 || eocd - 20 - at < 56 || !read_at(z->f, at, rec, 56) || le32(rec) != 0x06064b50)
        return lt_errf(err, LT_ERR_INVALID, "%s: bad zip64 end-of-central-directory record", z->path);
    *entries = le64(rec + 32);
    *cd_size = le64(rec + 40);
    *cd_off = le64(rec + 48);
    *cd_end = at;
    return LT_OK;
}

/* Reads the fields of a zip64 extra block (id 1) that the 32-bit fields
 * defer to it, in their fixed order. */
static bool zip64_extra(const uint8_t *ex, size_t len, zip_member *m, uint32_t usize32, uint32_t csize32,
                        uint32_t lho32)
{
    while (len >= 4) {
        uint16_t id = le16(ex), sz = le16(ex + 2);
        if ((size_t)sz > len - 4)
            return false;
        if (id == 1) {
            const uint8_t *p = ex + 4, *end = ex + 4 + sz;
            uint64_t *fields[3] = {&m->usize, &m->csize, &m->lho};
            uint32_t v32[3] = {usize32, csize32, lho32};
            for (int k = 0; k < 3; k++) {
                if (v32[k] != 0xffffffffu)
                    continue;
                if (end - p < 8)
                    return false;
                *fields[k] = le64(p);
                p += 8;
            }
            return true;
        }
        ex += 4 + sz;
        len -= 4 + (size_t)sz;
    }
    return usize32 != 0xffffffffu && csize32 != 0xffffffffu && lho32 != 0xffffffffu;
}

static lt_status parse_cd(zip_dir *z, const uint8_t *cd, uint64_t size, uint64_t entries, lt_err *err)
{
    uint64_t at = 0;
    size_t ll = 0;
    if (entries > ZIP_MAX_MEMBERS)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %llu zip members; at most %d are read", z->path,
                       (unsigned long long)entries, ZIP_MAX_MEMBERS);
    if (!(z->m = calloc(entries ? entries : 1, sizeof *z->m)))
        return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", z->path);
    for (uint64_t e = 0; e < entries; e++) {
        if (size - at < 46 || le32(cd + at) != 0x02014b50)
            return lt_errf(err, LT_ERR_INVALID, "%s: corrupt zip central directory (entry %llu)", z->path,
                           (unsigned long long)e);
        const uint8_t *h = cd + at;
        size_t nl = le16(h + 28), xl = le16(h + 30), cl = le16(h + 32);
        if (size - at - 46 < nl + xl + cl)
            return lt_errf(err, LT_ERR_INVALID, "%s: corrupt zip central directory (entry %llu overruns it)", z->path,
                           (unsigned long long)e);
        const char *name = (const char *)h + 46;
        /* names are bytes; lt_errf keeps the message printable */
        if (ll + nl + 3 < sizeof z->listing)
            ll += (size_t)snprintf(z->listing + ll, sizeof z->listing - ll, "%s%.*s", ll ? ", " : "", (int)nl, name);
        zip_member *m = &z->m[z->nm];
        if (!(m->name = malloc(nl + 1)))
            return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", z->path);
        memcpy(m->name, name, nl);
        m->name[nl] = 0;
        z->nm++;
        m->flags = le16(h + 8);
        m->method = le16(h + 10);
        m->crc = le32(h + 16);
        m->csize = le32(h + 20);
        m->usize = le32(h + 24);
        m->lho = le32(h + 42);
        /* a NUL inside a name would make it read as another member's */
        if (strlen(m->name) != nl)
            return lt_errf(err, LT_ERR_INVALID, "%s: a member name holds a NUL byte", z->path);
        if (!zip64_extra(h + 46 + nl, xl, m, le32(h + 24), le32(h + 20), le32(h + 42)))
            return lt_errf(err, LT_ERR_INVALID, "%s: member %s: bad zip64 extra field", z->path, m->name);
        at += 46 + nl + xl + cl;
    }
    return LT_OK;
}

static lt_status zip_open(zip_dir *z, const char *path, lt_err *err)
{
    memset(z, 0, sizeof *z);
    z->path = path;
    struct stat st;
    if (!(z->f = lt_fopen_read(path, &st, err)))
        return LT_ERR_IO;
    z->fsize = (uint64_t)st.st_size;
    size_t tail = z->fsize < ZIP_EOCD_LEN + ZIP_MAX_COMMENT ? (size_t)z->fsize : ZIP_EOCD_LEN + ZIP_MAX_COMMENT;
    uint8_t *buf = malloc(tail ? tail : 1), *cd = NULL;
    lt_status s = LT_OK;
    if (!buf)
        return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", path);
    if (!read_at(z->f, z->fsize - tail, buf, tail)) {
        s = lt_errf(err, LT_ERR_IO, "%s: read error", path);
        goto done;
    }
    /* the record whose comment runs exactly to the end of the file */
    int64_t pos = -1;
    for (int64_t i = (int64_t)tail - ZIP_EOCD_LEN; i >= 0 && pos < 0; i--)
        if (le32(buf + i) == 0x06054b50 && (size_t)i + ZIP_EOCD_LEN + le16(buf + i + 20) == tail)
            pos = i;
    if (pos < 0) {
        s = lt_errf(err, LT_ERR_INVALID,
                    "%s: not a zip archive (.npz), or truncated: no end-of-central-directory record", path);
        goto done;
    }
    const uint8_t *r = buf + pos;
    uint64_t eocd = z->fsize - tail + (uint64_t)pos, cd_end = eocd;
    uint64_t entries = le16(r + 10), cd_size = le32(r + 12), cd_off = le32(r + 16);
    if (le16(r + 4) != 0 || le16(r + 6) != 0) {
        s = lt_errf(err, LT_ERR_UNSUPPORTED, "%s: multi-disk zip archives are not supported", path);
        goto done;
    }
    if (entries == 0xffff || cd_size == 0xffffffffu || cd_off == 0xffffffffu)
        s = zip64_eocd(z, eocd, &entries, &cd_size, &cd_off, &cd_end, err);
    if (s == LT_OK && (cd_off > cd_end || cd_size > cd_end - cd_off || cd_size > ZIP_MAX_CD))
        s = lt_errf(err, LT_ERR_INVALID,
                    "%s: zip central directory (%llu bytes at %llu) lies outside the file, or truncated", path,
                    (unsigned long long)cd_size, (unsigned long long)cd_off);
    if (s != LT_OK)
        goto done;
    z->cd_off = cd_off;
    if (!(cd = malloc(cd_size ? cd_size : 1))) {
        s = lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    if (!read_at(z->f, cd_off, cd, cd_size))
        s = lt_errf(err, LT_ERR_IO, "%s: read error", path);
    else
        s = parse_cd(z, cd, cd_size, entries, err);
done:
    free(buf);
    free(cd);
    if (s != LT_OK)
        zip_close(z);
    return s;
}

/* Inflates csize raw-deflate bytes at off into out[0..usize). */
static lt_status inflate_member(zip_dir *z, const char *name, uint64_t off, const zip_member *m, uint8_t *out,
                                lt_err *err)
{
    uint8_t *in = malloc(ZIP_CHUNK);
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (!in || inflateInit2(&zs, -15) != Z_OK) {
        free(in);
        return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", z->path);
    }
    lt_status s = LT_OK;
    uint64_t left = m->csize, produced = 0;
    int r = Z_OK;
    if (fseeko(z->f, (off_t)off, SEEK_SET) != 0)
        s = lt_errf(err, LT_ERR_IO, "%s: member %s: seek failed", z->path, name);
    while (s == LT_OK && r != Z_STREAM_END) {
        if (zs.avail_in == 0) {
            if (left == 0) {
                s = lt_errf(err, LT_ERR_INVALID, "%s: member %s: deflate data ends early", z->path, name);
                break;
            }
            size_t k = left < ZIP_CHUNK ? (size_t)left : ZIP_CHUNK;
            if (fread(in, 1, k, z->f) != k) {
                s = lt_errf(err, LT_ERR_IO, "%s: member %s: short read", z->path, name);
                break;
            }
            left -= k;
            zs.next_in = in;
            zs.avail_in = (uInt)k;
        }
        uint64_t room = m->usize - produced;
        zs.next_out = out + produced;
        zs.avail_out = room > (1u << 30) ? (1u << 30) : (uInt)room;
        uInt before = zs.avail_out;
        r = inflate(&zs, Z_NO_FLUSH);
        produced += before - zs.avail_out;
        if (r == Z_BUF_ERROR && before == 0)
            s = lt_errf(err, LT_ERR_INVALID, "%s: member %s inflates to more than its %llu bytes", z->path, name,
                        (unsigned long long)m->usize);
        else if (r != Z_OK && r != Z_STREAM_END && r != Z_BUF_ERROR)
            s = lt_errf(err, LT_ERR_INVALID, "%s: member %s: corrupt deflate data (%s)", z->path, name,
                        zs.msg ? zs.msg : "inflate failed");
    }
    if (s == LT_OK && produced != m->usize)
        s = lt_errf(err, LT_ERR_INVALID, "%s: member %s inflates to %llu bytes, the directory says %llu", z->path, name,
                    (unsigned long long)produced, (unsigned long long)m->usize);
    inflateEnd(&zs);
    free(in);
    return s;
}

/* Member k's uncompressed bytes, CRC-checked, into a new malloc block. */
static lt_status zip_extract(zip_dir *z, int k, uint8_t **out, size_t *len, lt_err *err)
{
    const zip_member *m = &z->m[k];
    const char *name = m->name;
    uint8_t lh[30];
    *out = NULL;
    if (m->flags & 1)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: member %s is encrypted", z->path, name);
    if (m->method != 0 && m->method != 8)
        return lt_errf(err, LT_ERR_UNSUPPORTED,
                       "%s: member %s uses compression method %d; only stored (0) and deflated (8) are supported",
                       z->path, name, m->method);
    if (m->lho > z->cd_off || z->cd_off - m->lho < 30 || !read_at(z->f, m->lho, lh, 30) || le32(lh) != 0x04034b50)
        return lt_errf(err, LT_ERR_INVALID, "%s: member %s: no local header at offset %llu", z->path, name,
                       (unsigned long long)m->lho);
    uint64_t data = m->lho + 30 + le16(lh + 26) + le16(lh + 28);
    if (data > z->cd_off || m->csize > z->cd_off - data)
        return lt_errf(err, LT_ERR_INVALID, "%s: member %s: %llu bytes at offset %llu run past the member data",
                       z->path, name, (unsigned long long)m->csize, (unsigned long long)data);
    if ((m->method == 0 && m->usize != m->csize) ||
        (m->method == 8 && m->usize > m->csize * ZIP_MAX_RATIO + 4096))
        return lt_errf(err, LT_ERR_INVALID, "%s: member %s: implausible sizes (%llu bytes from %llu)", z->path, name,
                       (unsigned long long)m->usize, (unsigned long long)m->csize);
    uint8_t *buf = malloc(m->usize ? m->usize : 1);
    if (!buf)
        return lt_errf(err, LT_ERR_NOMEM, "%s: member %s: out of memory for %llu bytes", z->path, name,
                       (unsigned long long)m->usize);
    lt_status s = LT_OK;
    if (m->method == 0 && !read_at(z->f, data, buf, m->usize))
        s = lt_errf(err, LT_ERR_IO, "%s: member %s: short read", z->path, name);
    else if (m->method == 8)
        s = inflate_member(z, name, data, m, buf, err);
    if (s == LT_OK) {
        uLong crc = crc32(0L, Z_NULL, 0);
        for (uint64_t at = 0; at < m->usize; at += 1u << 30) {
            uint64_t k2 = m->usize - at < (1u << 30) ? m->usize - at : (1u << 30);
            crc = crc32(crc, buf + at, (uInt)k2);
        }
        if ((uint32_t)crc != m->crc)
            s = lt_errf(err, LT_ERR_INVALID, "%s: member %s: CRC-32 mismatch (directory %08x, data %08x)", z->path,
                        name, m->crc, (uint32_t)crc);
    }
    if (s != LT_OK) {
        free(buf);
        return s;
    }
    *out = buf;
    *len = (size_t)m->usize;
    return LT_OK;
}

/* ---- members one by one ---- */

lt_status lt_npz_open(const char *path, lt_npz **out, lt_err *err)
{
    *out = calloc(1, sizeof **out);
    if (!*out)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status s = zip_open(&(*out)->z, path, err);
    if (s != LT_OK) {
        free(*out);
        *out = NULL;
    }
    return s;
}

void lt_npz_close(lt_npz *z)
{
    if (!z)
        return;
    zip_close(&z->z);
    free(z);
}

int lt_npz_count(const lt_npz *z) { return z->z.nm; }
const char *lt_npz_name(const lt_npz *z, int i) { return z->z.m[i].name; }
const char *lt_npz_listing(const lt_npz *z) { return z->z.listing[0] ? z->z.listing : "nothing"; }

lt_status lt_npz_read(lt_npz *npz, int i, lt_tensor *t, void **block, lt_err *err)
{
    zip_dir *z = &npz->z;
    uint8_t *buf = NULL;
    size_t len = 0, off = 0;
    char what[4400];
    snprintf(what, sizeof what, "%s: %s", z->path, z->m[i].name);
    *block = NULL;
    lt_status s = zip_extract(z, i, &buf, &len, err);
    if (s == LT_OK)
        s = lt_npy_header(what, buf, len, t, &off, err);
    if (s != LT_OK) {
        free(buf);
        return s;
    }
    /* to the front: aligned for its type */
    memmove(buf, buf + off, len - off);
    t->data = buf;
    *block = buf;
    return LT_OK;
}

/* ---- the x / y pair ---- */

int lt_ds_has_npz(const char *path, int split)
{
    zip_dir z;
    lt_err err;
    if (zip_open(&z, path, &err) != LT_OK)
        return 0;
    int has = zip_find(&z, split ? "x_test.npy" : "x.npy") >= 0 && zip_find(&z, split ? "y_test.npy" : "y.npy") >= 0;
    zip_close(&z);
    return has;
}

lt_status lt_ds_open_npz(lt_dataset *d, const char *path, int split, lt_err *err)
{
    zip_dir z;
    lt_status s = zip_open(&z, path, err);
    if (s != LT_OK)
        return s;
    const char *want[2] = {split ? "x_test.npy" : "x.npy", split ? "y_test.npy" : "y.npy"};
    uint8_t *buf[2] = {NULL, NULL};
    lt_tensor t[2];
    char what[2][4400];
    for (int i = 0; i < 2 && s == LT_OK; i++) {
        const char *mn = want[i];
        int k = zip_find(&z, mn);
        snprintf(what[i], sizeof what[i], "%s: %s", path, mn);
        if (k < 0) {
            s = lt_errf(err, LT_ERR_INVALID, "%s: no array '%.*s' (member %s; the archive holds %s)", path,
                        (int)(strlen(mn) - 4), mn, mn, z.listing[0] ? z.listing : "nothing");
            break;
        }
        size_t len = 0, off = 0;
        s = zip_extract(&z, k, &buf[i], &len, err);
        if (s == LT_OK)
            s = lt_npy_header(what[i], buf[i], len, &t[i], &off, err);
        if (s == LT_OK) {
            /* to the front: aligned for its type, and a block d can adopt */
            memmove(buf[i], buf[i] + off, len - off);
            t[i].data = buf[i];
        }
    }
    zip_close(&z);
    if (s == LT_OK)
        s = lt_ds_from_arrays(d, &t[0], &t[1], (void **)&buf[0], what[0], what[1], err);
    free(buf[0]);
    free(buf[1]);
    return s;
}
