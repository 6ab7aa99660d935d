/* CIFAR-10, binary version: records of 1 label byte and 3072 pixel bytes
 * (the 32x32 red plane, then green, then blue), data_batch_1..5.bin for
 * training and test_batch.bin for testing, in DIR or in the
 * cifar-10-batches-bin/ folder the official archive unpacks to. */
#include "dataset_impl.h"
#include "../importer/open_read.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define CIFAR_PIXELS 3072
#define CIFAR_RECORD (1 + CIFAR_PIXELS)
#define CIFAR_CHUNK 512 /* records read at a time */

static int cifar_nfiles(int split) { return split ? 1 : 5; }

static void cifar_file(char *buf, size_t len, const char *base, int split, int k)
{
    if (split)
        snprintf(buf, len, "%s/test_batch.bin", base);
    else
        snprintf(buf, len, "%s/data_batch_%d.bin", base, k + 1);
}

/* DIR itself when it holds the split's first file, else the archive's
 * subfolder (whose absence the caller reports with the file it misses). */
static void cifar_base(char *buf, size_t len, const char *dir, int split)
{
    char p[4300];
    cifar_file(p, sizeof p, dir, split, 0);
    if (lt_ds_file_exists(p))
        snprintf(buf, len, "%s", dir);
    else
        snprintf(buf, len, "%s/cifar-10-batches-bin", dir);
}

int lt_ds_has_cifar(const char *dir, int split)
{
    char base[4200], p[4300];
    cifar_base(base, sizeof base, dir, split);
    for (int k = 0; k < cifar_nfiles(split); k++) {
        cifar_file(p, sizeof p, base, split, k);
        if (!lt_ds_file_exists(p))
            return 0;
    }
    return 1;
}

/* Appends the records of one file at d->n. */
static lt_status cifar_read(lt_dataset *d, const char *path, int64_t records, uint8_t *chunk, lt_err *err)
{
    FILE *f = lt_fopen_read(path, NULL, err);
    if (!f)
        return LT_ERR_IO;
    lt_status s = LT_OK;
    for (int64_t r = 0; r < records && s == LT_OK;) {
        int64_t k = records - r < CIFAR_CHUNK ? records - r : CIFAR_CHUNK;
        if (fread(chunk, CIFAR_RECORD, (size_t)k, f) != (size_t)k) {
            s = lt_errf(err, LT_ERR_IO, "%s: short read (the file changed while it was read?)", path);
            break;
        }
        for (int64_t i = 0; i < k; i++, r++) {
            const uint8_t *rec = chunk + i * CIFAR_RECORD;
            if (rec[0] > 9) {
                s = lt_errf(err, LT_ERR_INVALID, "%s: record %lld has label %d, outside 0..9", path, (long long)r,
                            rec[0]);
                break;
            }
            d->cls[d->n] = rec[0];
            memcpy(d->xu8 + d->n * CIFAR_PIXELS, rec + 1, CIFAR_PIXELS);
            d->n++;
        }
    }
    fclose(f);
    return s;
}

lt_status lt_ds_open_cifar(lt_dataset *d, const char *dir, int split, lt_err *err)
{
    char base[4200], paths[5][4300];
    int64_t records[5], total = 0;
    cifar_base(base, sizeof base, dir, split);
    int nf = cifar_nfiles(split);
    /* every file is sized before anything is allocated */
    for (int k = 0; k < nf; k++) {
        cifar_file(paths[k], sizeof paths[k], base, split, k);
        struct stat st;
        if (stat(paths[k], &st) != 0)
            return lt_errf(err, LT_ERR_IO, "%s: cannot open: %s (cifar10=DIR wants data_batch_1..5.bin and "
                           "test_batch.bin, in DIR or DIR/cifar-10-batches-bin)", paths[k], strerror(errno));
        if (!S_ISREG(st.st_mode) || st.st_size == 0 || st.st_size % CIFAR_RECORD != 0)
            return lt_errf(err, LT_ERR_INVALID,
                           "%s: %lld bytes is not a whole number of CIFAR-10 records (%d bytes each)", paths[k],
                           (long long)st.st_size, CIFAR_RECORD);
        records[k] = st.st_size / CIFAR_RECORD;
        total += records[k];
    }
    d->xu8 = malloc((size_t)total * CIFAR_PIXELS);
    d->cls = malloc(sizeof *d->cls * (size_t)total);
    uint8_t *chunk = malloc((size_t)CIFAR_CHUNK * CIFAR_RECORD);
    lt_status s = LT_OK;
    if (!d->xu8 || !d->cls || !chunk)
        s = lt_errf(err, LT_ERR_NOMEM, "%s: out of memory for %lld records", base, (long long)total);
    for (int k = 0; k < nf && s == LT_OK; k++)
        s = cifar_read(d, paths[k], records[k], chunk, err);
    free(chunk);
    if (s != LT_OK)
        return s;
    d->rank = 3;
    d->channels_first = 1;
    d->dims[0] = 3;
    d->dims[1] = 32;
    d->dims[2] = 32;
    d->numel = CIFAR_PIXELS;
    d->classes = 1;
    d->num_classes = 10;
    return LT_OK;
}
