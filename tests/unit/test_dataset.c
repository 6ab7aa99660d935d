/* Datasets in IDX (gzip) and CIFAR-10 form: gathered values against the
 * bytes written (/255, normalised), CIFAR's plane layout, the split checks,
 * lt_dataset_batch's contract, one clear line for every kind of broken file,
 * and the prefetch worker against plain gathers. */
#include "test_dataset.h"
#include "train/prefetch.h"

#define FASHION "/usr/share/datasets/fashion-mnist"

/* A small IDX dataset in dir (split 0: train-*, 1: t10k-*). */
static void write_idx_set(const char *dir, int split, int64_t n, int64_t r, int64_t c, uint64_t seed, uint8_t **pix,
                          uint8_t **lab)
{
    char p[4200];
    size_t len;
    *pix = td_bytes((size_t)(n * r * c), 256, seed);
    *lab = td_bytes((size_t)n, 10, seed + 1);
    int64_t idims[3] = {n, r, c};
    uint8_t *f = td_idx(3, idims, *pix, &len);
    snprintf(p, sizeof p, "%s/%s-images-idx3-ubyte.gz", dir, split ? "t10k" : "train");
    td_write_gz(p, f, len);
    free(f);
    f = td_idx(1, &n, *lab, &len);
    snprintf(p, sizeof p, "%s/%s-labels-idx1-ubyte.gz", dir, split ? "t10k" : "train");
    td_write_gz(p, f, len);
    free(f);
}

static void idx_values(void **state)
{
    (void)state;
    char dir[64], spec[128];
    td_tmpdir(dir, sizeof dir);
    uint8_t *pix, *lab;
    const uint64_t seed = 11;
    write_idx_set(dir, 0, 37, 5, 7, seed, &pix, &lab);
    snprintf(spec, sizeof spec, "mnist=%s", dir);
    assert_int_equal(lt_dataset_has_split(spec, 0), 1);
    assert_int_equal(lt_dataset_has_split(spec, 1), 0);
    lt_dataset *d;
    lt_err err;
    assert_int_equal(lt_dataset_open(spec, 0, &d, &err), LT_OK);
    assert_int_equal(lt_dataset_size(d), 37);
    int rank;
    int64_t dims[LT_MAX_RANK];
    lt_dataset_sample_shape(d, &rank, dims);
    assert_int_equal(rank, 2);
    assert_int_equal(dims[0], 5);
    assert_int_equal(dims[1], 7);
    assert_int_equal(lt_dataset_sample_numel(d), 35);
    assert_int_equal(lt_dataset_has_classes(d), 1);
    assert_int_equal(lt_dataset_num_classes(d), 10);
    lt_dataset_target_shape(d, &rank, dims);
    assert_int_equal(rank, 0);

    /* a shuffled batch with a repeat */
    int64_t idx[20];
    uint64_t s = seed;
    for (int i = 0; i < 20; i++)
        idx[i] = (int64_t)(td_next(&s) % 37);
    idx[19] = idx[0];
    lt_tensor x, y;
    td_batch_tensors(d, 20, &x, &y);
    lt_status gs = lt_dataset_gather(d, idx, 20, &x, &y, &err);
    if (gs != LT_OK)
        fail_msg("%s", err.msg);
    const float *xp = x.data;
    for (int i = 0; i < 20; i++) {
        assert_int_equal(((int64_t *)y.data)[i], lab[idx[i]]);
        for (int j = 0; j < 35; j++)
            assert_true(fabs(xp[i * 35 + j] - pix[idx[i] * 35 + j] / 255.0) < 1e-7);
    }
    lt_dataset_free(d);

    /* one mean and std for every value */
    lt_dataset_opts o = {.nmean = 1, .nstd = 1, .mean = {0.25}, .std = {0.5}};
    assert_int_equal(lt_dataset_open_opts(spec, 0, &o, &d, &err), LT_OK);
    assert_int_equal(lt_dataset_gather(d, idx, 20, &x, &y, &err), LT_OK);
    for (int i = 0; i < 20 * 35; i++)
        assert_true(fabs(xp[i] - (pix[idx[i / 35] * 35 + i % 35] / 255.0 - 0.25) / 0.5) < 1e-6);

    /* the batch: any shape holding one sample per row */
    lt_value *xv, *yv;
    int64_t shp[3] = {4, 5, 7}, bad[2] = {4, 10};
    assert_int_equal(lt_dataset_batch(d, 3, 4, 3, shp, &xv, &yv, &err), LT_OK);
    assert_int_equal(lt_value_tensor(xv)->rank, 3);
    for (int i = 0; i < 4 * 35; i++)
        assert_true(fabs(((float *)lt_value_tensor(xv)->data)[i] - (pix[3 * 35 + i] / 255.0 - 0.25) / 0.5) < 1e-6);
    for (int i = 0; i < 4; i++)
        assert_int_equal(((int64_t *)lt_value_tensor(yv)->data)[i], lab[3 + i]);
    lt_value_free(xv);
    lt_value_free(yv);
    td_fails(lt_dataset_batch(d, 3, 4, 2, bad, &xv, &yv, &err), LT_ERR_INVALID, &err,
             "holds 10 values per sample, the samples are 5x7", NULL);
    td_fails(lt_dataset_batch(d, 35, 4, 3, shp, &xv, &yv, &err), LT_ERR_INVALID, &err, "outside", NULL);
    lt_dataset_free(d);

    /* the test split is missing: the error names the file */
    td_open_fails(spec, 1, LT_ERR_IO, "t10k-images-idx3-ubyte");
    td_open_fails(spec, 2, LT_ERR_INVALID, "split 2");
    td_open_fails("mnist", 0, LT_ERR_INVALID, "mnist=DIR");
    td_open_fails("imagenet=/x", 0, LT_ERR_INVALID, "unknown dataset 'imagenet'");
    assert_int_equal(lt_dataset_has_split("imagenet=/x", 0), 0);

    /* an uncompressed IDX pair serves too */
    char p[4200];
    size_t len;
    int64_t idims[3] = {3, 2, 2}, n3 = 3;
    uint8_t px[12] = {0, 1, 2, 3, 250, 251, 252, 253, 254, 255, 9, 8}, lb[3] = {9, 0, 4};
    uint8_t *f = td_idx(3, idims, px, &len);
    snprintf(p, sizeof p, "%s/t10k-images-idx3-ubyte", dir);
    td_write(p, f, len);
    free(f);
    f = td_idx(1, &n3, lb, &len);
    snprintf(p, sizeof p, "%s/t10k-labels-idx1-ubyte", dir);
    td_write(p, f, len);
    free(f);
    assert_int_equal(lt_dataset_has_split(spec, 1), 1);
    assert_int_equal(lt_dataset_open(spec, 1, &d, &err), LT_OK);
    int64_t all[3] = {2, 1, 0};
    lt_tensor x3, y3;
    td_batch_tensors(d, 3, &x3, &y3);
    assert_int_equal(lt_dataset_gather(d, all, 3, &x3, &y3, &err), LT_OK);
    for (int i = 0; i < 12; i++)
        assert_true(fabs(((float *)x3.data)[i] - px[(2 - i / 4) * 4 + i % 4] / 255.0) < 1e-7);
    assert_int_equal(((int64_t *)y3.data)[0], 4);
    lt_tensor_release(&x3);
    lt_tensor_release(&y3);
    lt_dataset_free(d);

    lt_tensor_release(&x);
    lt_tensor_release(&y);
    free(pix);
    free(lab);
    td_rmtree(dir);
}

/* gather refuses tensors that do not fit and indices outside the set */
static void gather_contract(void **state)
{
    (void)state;
    char dir[64], spec[128];
    td_tmpdir(dir, sizeof dir);
    uint8_t *pix, *lab;
    write_idx_set(dir, 0, 9, 3, 4, 5, &pix, &lab);
    snprintf(spec, sizeof spec, "mnist=%s", dir);
    lt_dataset *d;
    lt_err err;
    assert_int_equal(lt_dataset_open(spec, 0, &d, &err), LT_OK);
    lt_tensor x, y, xd, yf;
    td_batch_tensors(d, 2, &x, &y);
    int64_t good[2] = {8, 0}, neg[2] = {1, -1}, past[2] = {9, 1}, d2[2] = {2, 12}, one = 2;
    assert_int_equal(lt_dataset_gather(d, good, 2, &x, &y, &err), LT_OK);
    td_fails(lt_dataset_gather(d, neg, 2, &x, &y, &err), LT_ERR_INVALID, &err, "index -1", "9 samples", NULL);
    td_fails(lt_dataset_gather(d, past, 2, &x, &y, &err), LT_ERR_INVALID, &err, "index 9", NULL);
    td_fails(lt_dataset_gather(d, good, 1, &x, &y, &err), LT_ERR_INVALID, &err, "x must be float32 with 12 values",
             NULL);
    assert_int_equal(lt_tensor_alloc(&xd, LT_F64, 2, d2, &err), LT_OK);
    td_fails(lt_dataset_gather(d, good, 2, &xd, &y, &err), LT_ERR_INVALID, &err, "x must be float32", NULL);
    assert_int_equal(lt_tensor_alloc(&yf, LT_F32, 1, &one, &err), LT_OK);
    td_fails(lt_dataset_gather(d, good, 2, &x, &yf, &err), LT_ERR_INVALID, &err, "y must be int64", NULL);
    lt_tensor_release(&x);
    lt_tensor_release(&y);
    lt_tensor_release(&xd);
    lt_tensor_release(&yf);
    lt_dataset_free(d);
    free(pix);
    free(lab);
    td_rmtree(dir);
}

/* Rewrites dir's train pair from images / labels (IDX bytes, gzip unless
 * raw_images: those bytes are written as they are). */
static void put_pair(const char *dir, const uint8_t *img, size_t il, int raw_images, const uint8_t *lab, size_t ll)
{
    char p[4200];
    snprintf(p, sizeof p, "%s/train-images-idx3-ubyte.gz", dir);
    if (raw_images)
        td_write(p, img, il);
    else
        td_write_gz(p, img, il);
    snprintf(p, sizeof p, "%s/train-labels-idx1-ubyte.gz", dir);
    td_write_gz(p, lab, ll);
}

static void idx_bad_files(void **state)
{
    (void)state;
    char dir[64], spec[128];
    td_tmpdir(dir, sizeof dir);
    snprintf(spec, sizeof spec, "mnist=%s", dir);
    const char *imgf = "train-images-idx3-ubyte.gz", *labf = "train-labels-idx1-ubyte.gz";
    int64_t idims[3] = {6, 4, 4}, n6 = 6, n5 = 5;
    uint8_t *pix = td_bytes(96, 256, 3), *lab = td_bytes(6, 10, 4);
    size_t il, ll, l5;
    uint8_t *img = td_idx(3, idims, pix, &il), *labs = td_idx(1, &n6, lab, &ll), *lab5 = td_idx(1, &n5, lab, &l5);
    put_pair(dir, img, il, 0, labs, ll);
    lt_dataset *d;
    lt_err err;
    assert_int_equal(lt_dataset_open(spec, 0, &d, &err), LT_OK);
    lt_dataset_free(d);

    /* gzip data cut in the middle, and cut just before its trailer */
    char p[4200];
    snprintf(p, sizeof p, "%s/%s", dir, imgf);
    size_t gl;
    uint8_t *gz = td_read(p, &gl);
    put_pair(dir, gz, gl / 2, 1, labs, ll);
    td_open_fails(spec, 0, LT_ERR_INVALID, imgf, "truncated");
    put_pair(dir, gz, gl - 4, 1, labs, ll);
    td_open_fails(spec, 0, LT_ERR_INVALID, imgf, "truncated");
    /* a flipped byte in the deflate stream (corrupt data or a CRC mismatch) */
    gz[gl / 2] ^= 0x55;
    put_pair(dir, gz, gl, 1, labs, ll);
    td_open_fails(spec, 0, LT_ERR_INVALID, imgf);
    free(gz);

    /* wrong magic: float IDX data, and a 2-D label file */
    img[2] = 0x0d;
    put_pair(dir, img, il, 0, labs, ll);
    td_open_fails(spec, 0, LT_ERR_INVALID, imgf, "bad magic", "0d");
    img[2] = 0x08;
    labs[3] = 2;
    put_pair(dir, img, il, 0, labs, ll);
    td_open_fails(spec, 0, LT_ERR_INVALID, labf, "1-D");
    labs[3] = 1;

    /* the header promises more data than follows, or less */
    put_pair(dir, img, il - 5, 0, labs, ll);
    td_open_fails(spec, 0, LT_ERR_INVALID, imgf, "promises 96 data bytes, the file holds 91");
    uint8_t *longer = calloc(1, il + 3);
    memcpy(longer, img, il);
    put_pair(dir, longer, il + 3, 0, labs, ll);
    td_open_fails(spec, 0, LT_ERR_INVALID, imgf, "holds more");
    free(longer);
    put_pair(dir, img, 10, 0, labs, ll);
    td_open_fails(spec, 0, LT_ERR_INVALID, imgf, "truncated IDX header");

    /* images and labels disagree; a label past 9 */
    put_pair(dir, img, il, 0, lab5, l5);
    td_open_fails(spec, 0, LT_ERR_INVALID, imgf, "6 images but 5 labels", labf);
    labs[8 + 4] = 10;
    put_pair(dir, img, il, 0, labs, ll);
    td_open_fails(spec, 0, LT_ERR_INVALID, labf, "label 4 is 10");

    /* a missing file */
    snprintf(p, sizeof p, "%s/%s", dir, labf);
    unlink(p);
    assert_int_equal(lt_dataset_has_split(spec, 0), 0);
    td_open_fails(spec, 0, LT_ERR_IO, labf);

    free(img);
    free(labs);
    free(lab5);
    free(pix);
    free(lab);
    td_rmtree(dir);
}

/* ---- CIFAR-10 ---- */

/* Writes a batch file of n records from HWC images (n x 32 x 32 x 3) and labels. */
static void write_cifar(const char *path, int n, const uint8_t *hwc, const uint8_t *lab)
{
    uint8_t *rec = malloc((size_t)n * 3073);
    for (int i = 0; i < n; i++) {
        rec[i * 3073] = lab[i];
        for (int h = 0; h < 32; h++)
            for (int w = 0; w < 32; w++)
                for (int c = 0; c < 3; c++)
                    rec[i * 3073 + 1 + c * 1024 + h * 32 + w] = hwc[((i * 32 + h) * 32 + w) * 3 + c];
    }
    td_write(path, rec, (size_t)n * 3073);
    free(rec);
}

static const char *cifar_files[6] = {"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin",
                                     "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"};
static const int cifar_counts[6] = {3, 1, 2, 4, 2, 3};

/* 12 training images and 3 test images under base; returns HWC pixels and labels. */
static void write_cifar_set(const char *base, uint8_t **hwc, uint8_t **lab)
{
    *hwc = td_bytes(15 * 3072, 256, 21);
    *lab = td_bytes(15, 10, 22);
    char p[4200];
    for (int k = 0, at = 0; k < 6; at += cifar_counts[k], k++) {
        snprintf(p, sizeof p, "%s/%s", base, cifar_files[k]);
        write_cifar(p, cifar_counts[k], *hwc + at * 3072, *lab + at);
    }
}

static void cifar_layout(void **state)
{
    (void)state;
    char dir[64], sub[128], spec[128];
    td_tmpdir(dir, sizeof dir);
    /* as the official archive unpacks: DIR/cifar-10-batches-bin/ */
    snprintf(sub, sizeof sub, "%s/cifar-10-batches-bin", dir);
    assert_int_equal(mkdir(sub, 0700), 0);
    uint8_t *hwc, *lab;
    write_cifar_set(sub, &hwc, &lab);
    snprintf(spec, sizeof spec, "cifar10=%s", dir);
    assert_int_equal(lt_dataset_has_split(spec, 0), 1);
    assert_int_equal(lt_dataset_has_split(spec, 1), 1);
    const double mean[3] = {0.49, 0.48, 0.45}, sd[3] = {0.25, 0.24, 0.26};
    lt_dataset_opts o = {.nmean = 3, .nstd = 3};
    memcpy(o.mean, mean, sizeof mean);
    memcpy(o.std, sd, sizeof sd);
    for (int split = 0; split < 2; split++) {
        for (int norm = 0; norm < 2; norm++) {
            lt_dataset *d;
            lt_err err;
            assert_int_equal(lt_dataset_open_opts(spec, split, norm ? &o : NULL, &d, &err), LT_OK);
            int64_t n = split ? 3 : 12, base = split ? 12 : 0;
            assert_int_equal(lt_dataset_size(d), n);
            int rank;
            int64_t dims[LT_MAX_RANK];
            lt_dataset_sample_shape(d, &rank, dims);
            assert_int_equal(rank, 3);
            assert_true(dims[0] == 3 && dims[1] == 32 && dims[2] == 32);
            assert_int_equal(lt_dataset_num_classes(d), 10);
            int64_t idx[12];
            for (int i = 0; i < n; i++)
                idx[i] = n - 1 - i;
            lt_tensor x, y;
            td_batch_tensors(d, n, &x, &y);
            assert_int_equal(lt_dataset_gather(d, idx, n, &x, &y, &err), LT_OK);
            const float *xp = x.data;
            for (int i = 0; i < n; i++) {
                int64_t s = base + idx[i];
                assert_int_equal(((int64_t *)y.data)[i], lab[s]);
                for (int c = 0; c < 3; c++)
                    for (int h = 0; h < 32; h++)
                        for (int w = 0; w < 32; w++) {
                            double v = hwc[((s * 32 + h) * 32 + w) * 3 + c] / 255.0;
                            if (norm)
                                v = (v - mean[c]) / sd[c];
                            assert_true(fabs(xp[i * 3072 + c * 1024 + h * 32 + w] - v) < 1e-6);
                        }
            }
            lt_tensor_release(&x);
            lt_tensor_release(&y);
            lt_dataset_free(d);
        }
    }
    /* statistics that do not fit the 3 channels */
    lt_dataset *d;
    lt_err err;
    lt_dataset_opts two = {.nmean = 2, .mean = {0.5, 0.5}};
    td_fails(lt_dataset_open_opts(spec, 1, &two, &d, &err), LT_ERR_INVALID, &err, "2 mean values", "3x32x32",
             "3 channels", NULL);
    lt_dataset_opts zero = {.nmean = 1, .mean = {0.5}, .nstd = 3, .std = {0.2, 0, 0.2}};
    td_fails(lt_dataset_open_opts(spec, 1, &zero, &d, &err), LT_ERR_INVALID, &err, "channel 1 has mean 0.5, std 0",
             "std > 0", NULL);
    lt_dataset_opts many = {.nmean = 17};
    td_fails(lt_dataset_open_opts(spec, 1, &many, &d, &err), LT_ERR_INVALID, &err, "17 mean", NULL);

    /* the batch names the sample shape when the model does not fit it */
    lt_value *xv, *yv;
    int64_t shp[2] = {2, 784};
    assert_int_equal(lt_dataset_open(spec, 1, &d, &err), LT_OK);
    td_fails(lt_dataset_batch(d, 0, 2, 2, shp, &xv, &yv, &err), LT_ERR_INVALID, &err,
             "the model's input holds 784 values per sample, the samples are 3x32x32", NULL);
    lt_dataset_free(d);

    /* the batches directly in DIR serve too */
    char p[4200], q[4200];
    for (int k = 0; k < 6; k++) {
        snprintf(p, sizeof p, "%s/%s", sub, cifar_files[k]);
        snprintf(q, sizeof q, "%s/%s", dir, cifar_files[k]);
        assert_int_equal(rename(p, q), 0);
    }
    assert_int_equal(lt_dataset_open(spec, 0, &d, &err), LT_OK);
    assert_int_equal(lt_dataset_size(d), 12);
    lt_dataset_free(d);
    free(hwc);
    free(lab);
    td_rmtree(dir);
}

static void cifar_bad_files(void **state)
{
    (void)state;
    char dir[64], spec[128], p[4200];
    td_tmpdir(dir, sizeof dir);
    uint8_t *hwc, *lab;
    write_cifar_set(dir, &hwc, &lab);
    snprintf(spec, sizeof spec, "cifar10=%s", dir);
    size_t len;

    /* a size that is not a whole number of records */
    snprintf(p, sizeof p, "%s/data_batch_3.bin", dir);
    uint8_t *f = td_read(p, &len), *g = calloc(1, len + 5);
    memcpy(g, f, len);
    td_write(p, g, len + 5);
    td_open_fails(spec, 0, LT_ERR_INVALID, "data_batch_3.bin", "3073");
    td_write(p, f, 0);
    td_open_fails(spec, 0, LT_ERR_INVALID, "data_batch_3.bin", "3073");
    td_write(p, f, len);
    free(g);
    free(f);

    /* a label past 9 in the test batch's second record */
    snprintf(p, sizeof p, "%s/test_batch.bin", dir);
    f = td_read(p, &len);
    f[3073] = 10;
    td_write(p, f, len);
    td_open_fails(spec, 1, LT_ERR_INVALID, "test_batch.bin", "record 1 has label 10");
    free(f);

    /* a batch missing */
    snprintf(p, sizeof p, "%s/data_batch_4.bin", dir);
    unlink(p);
    assert_int_equal(lt_dataset_has_split(spec, 0), 0);
    td_open_fails(spec, 0, LT_ERR_IO, "data_batch_4.bin");
    td_open_fails("cifar10", 0, LT_ERR_INVALID, "cifar10=DIR");
    free(hwc);
    free(lab);
    td_rmtree(dir);
}

/* ---- the real Fashion-MNIST test split ---- */

static void fashion_mnist(void **state)
{
    (void)state;
    if (!lt_dataset_has_split("fashion-mnist", 1))
        skip();
    lt_dataset *d;
    lt_err err;
    assert_int_equal(lt_dataset_has_split("fashion-mnist=" FASHION, 0), 1);
    assert_int_equal(lt_dataset_open("fashion-mnist", 1, &d, &err), LT_OK);
    assert_int_equal(lt_dataset_size(d), 10000);
    int rank;
    int64_t dims[LT_MAX_RANK];
    lt_dataset_sample_shape(d, &rank, dims);
    assert_true(rank == 2 && dims[0] == 28 && dims[1] == 28);
    /* reference: the raw bytes read here with zlib */
    gzFile gi = gzopen(FASHION "/t10k-images-idx3-ubyte.gz", "rb");
    gzFile gl = gzopen(FASHION "/t10k-labels-idx1-ubyte.gz", "rb");
    assert_non_null(gi);
    assert_non_null(gl);
    uint8_t *img = malloc(16 + 10000 * 784), lab[8 + 10000];
    assert_int_equal(gzread(gi, img, 16 + 10000 * 784), 16 + 10000 * 784);
    assert_int_equal(gzread(gl, lab, sizeof lab), (int)sizeof lab);
    gzclose(gi);
    gzclose(gl);
    int64_t idx[64];
    uint64_t s = 77;
    for (int i = 0; i < 64; i++)
        idx[i] = (int64_t)(td_next(&s) % 10000);
    idx[0] = 9999;
    lt_tensor x, y;
    td_batch_tensors(d, 64, &x, &y);
    assert_int_equal(lt_dataset_gather(d, idx, 64, &x, &y, &err), LT_OK);
    for (int i = 0; i < 64; i++) {
        assert_int_equal(((int64_t *)y.data)[i], lab[8 + idx[i]]);
        for (int j = 0; j < 784; j++)
            assert_true(((float *)x.data)[i * 784 + j] == img[16 + idx[i] * 784 + j] * (1.0f / 255.0f));
    }
    free(img);
    lt_tensor_release(&x);
    lt_tensor_release(&y);
    lt_dataset_free(d);
}

/* ---- prefetch ---- */

static void prefetch_matches_gather(void **state)
{
    (void)state;
    char dir[64], sub[128], spec[128];
    td_tmpdir(dir, sizeof dir);
    snprintf(sub, sizeof sub, "%s", dir);
    uint8_t *hwc, *lab;
    write_cifar_set(sub, &hwc, &lab);
    snprintf(spec, sizeof spec, "cifar10=%s", dir);
    lt_dataset_opts o = {.nmean = 3, .nstd = 1, .mean = {0.4, 0.5, 0.6}, .std = {0.3}};
    lt_dataset *d;
    lt_prefetch *p;
    lt_err err;
    assert_int_equal(lt_dataset_open_opts(spec, 0, &o, &d, &err), LT_OK);
    assert_int_equal(lt_prefetch_new(d, &p, &err), LT_OK);
    assert_int_equal(lt_prefetch_wait(p, &err), LT_OK); /* nothing outstanding */
    /* double buffering, as a trainer runs it: batch k+1 fills while k is used */
    lt_tensor x[2], y[2], rx, ry;
    int64_t idx[2][16];
    for (int b = 0; b < 2; b++)
        td_batch_tensors(d, 16, &x[b], &y[b]);
    td_batch_tensors(d, 16, &rx, &ry);
    uint64_t s = 99;
    for (int i = 0; i < 16; i++)
        idx[0][i] = (int64_t)(td_next(&s) % 12);
    assert_int_equal(lt_prefetch_submit(p, idx[0], 16, &x[0], &y[0], &err), LT_OK);
    for (int k = 0; k < 6; k++) {
        int cur = k & 1, nxt = cur ^ 1;
        assert_int_equal(lt_prefetch_wait(p, &err), LT_OK);
        for (int i = 0; i < 16; i++)
            idx[nxt][i] = (int64_t)(td_next(&s) % 12);
        assert_int_equal(lt_prefetch_submit(p, idx[nxt], 16, &x[nxt], &y[nxt], &err), LT_OK);
        assert_int_equal(lt_dataset_gather(d, idx[cur], 16, &rx, &ry, &err), LT_OK);
        assert_memory_equal(x[cur].data, rx.data, 16 * 3072 * sizeof(float));
        assert_memory_equal(y[cur].data, ry.data, 16 * sizeof(int64_t));
    }
    assert_int_equal(lt_prefetch_wait(p, &err), LT_OK);
    /* one batch at a time */
    assert_int_equal(lt_prefetch_submit(p, idx[0], 16, &x[0], &y[0], &err), LT_OK);
    td_fails(lt_prefetch_submit(p, idx[1], 16, &x[1], &y[1], &err), LT_ERR_INTERNAL, &err, "waited", NULL);
    assert_int_equal(lt_prefetch_wait(p, &err), LT_OK);
    /* a failing gather reports through wait, and the worker carries on */
    idx[1][5] = 12;
    assert_int_equal(lt_prefetch_submit(p, idx[1], 16, &x[1], &y[1], &err), LT_OK);
    td_fails(lt_prefetch_wait(p, &err), LT_ERR_INVALID, &err, "index 12", NULL);
    assert_int_equal(lt_prefetch_submit(p, idx[0], 16, &x[0], &y[0], &err), LT_OK);
    assert_int_equal(lt_prefetch_wait(p, &err), LT_OK);
    td_fails(lt_prefetch_submit(p, idx[0], 15, &x[0], &y[0], &err) == LT_OK ? lt_prefetch_wait(p, &err) : LT_OK,
             LT_ERR_INVALID, &err, "x must be float32", NULL);
    /* freed with a batch in flight */
    assert_int_equal(lt_prefetch_submit(p, idx[0], 16, &x[0], &y[0], &err), LT_OK);
    lt_prefetch_free(p);
    lt_prefetch_free(NULL);
    for (int b = 0; b < 2; b++) {
        lt_tensor_release(&x[b]);
        lt_tensor_release(&y[b]);
    }
    lt_tensor_release(&rx);
    lt_tensor_release(&ry);
    lt_dataset_free(d);
    free(hwc);
    free(lab);
    td_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(idx_values),     cmocka_unit_test(gather_contract),
        cmocka_unit_test(idx_bad_files),  cmocka_unit_test(cifar_layout),
        cmocka_unit_test(cifar_bad_files), cmocka_unit_test(fashion_mnist),
        cmocka_unit_test(prefetch_matches_gather),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
