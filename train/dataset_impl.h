/* Datasets, private: the in-memory layout every format loads into and the
 * per-format openers (dataset_idx.c, dataset_cifar.c, dataset_npz.c,
 * dataset_pb.c) behind lt_dataset_open (dataset.c). */
#ifndef LT_DATASET_IMPL_H
#define LT_DATASET_IMPL_H

#include "../runtime/runtime.h"
#include "../importer/importer.h"
#include "augment.h"

#define LT_DS_MAX_CH 16 /* as lt_dataset_opts' mean[] / std[] */

/* Samples are kept either as bytes (8-bit pixels: x = b * mul[c] + add[c]
 * at gather time, which folds the 1/255 scale and mean/std in) or as float
 * (normalised once at open). The channel c is the first sample dim when
 * per-channel statistics are given, else there is one channel. */
struct lt_dataset {
    int64_t n;
    int rank; /* sample rank (0: scalar samples) */
    int64_t dims[LT_MAX_RANK];
    int64_t numel;
    uint8_t *xu8; /* n * numel bytes, or NULL */
    float *xf;    /* n * numel floats, or NULL */
    int nch;      /* channels mul/add cover (1 when not per-channel) */
    int64_t ch_len;
    float mul[LT_DS_MAX_CH], add[LT_DS_MAX_CH];
    float zero[LT_DS_MAX_CH]; /* a raw 0 (padding) after normalisation */
    int classes;          /* 1: cls holds class indices; 0: tgt holds float targets */
    int64_t num_classes;
    int64_t *cls;         /* n */
    int trank;            /* target rank per sample */
    int64_t tdims[LT_MAX_RANK];
    int64_t tnumel;
    float *tgt;           /* n * tnumel */
    char **class_names;   /* num_classes names (image folders), or NULL */
    int channels_first;   /* images [C,H,W] (folders, CIFAR): a channels-last model takes them transposed */
    /* the first negative class label of x/y arrays (an ignore index, which
     * the feed accepts or refuses by the loss): its sample and the labels'
     * file; neg_sample < 0 when there is none */
    int64_t neg_sample;
    char *label_src;
};

/* The first negative label other than except (lt_feed checks them against
 * its loss); false when there is none. */
bool lt_ds_negative_label(const lt_dataset *d, int64_t except, int64_t *sample, int64_t *value, const char **src);

/* Openers fill a zeroed dataset: n, sample shape, xu8 or xf, labels. They
 * leave normalisation to the caller. On failure the caller frees what was set. */
lt_status lt_ds_open_idx(lt_dataset *d, const char *dir, int split, lt_err *err);
lt_status lt_ds_open_cifar(lt_dataset *d, const char *dir, int split, lt_err *err);
lt_status lt_ds_open_npz(lt_dataset *d, const char *path, int split, lt_err *err);
lt_status lt_ds_open_pb(lt_dataset *d, const char *dir, int split, lt_err *err);
lt_status lt_ds_open_csv(lt_dataset *d, const char *arg, int split, const lt_dataset_opts *o, lt_err *err);
lt_status lt_ds_open_npy(lt_dataset *d, const char *arg, int split, lt_err *err);
lt_status lt_ds_open_images(lt_dataset *d, const char *arg, int split, const lt_dataset_opts *o, lt_err *err);
int lt_ds_has_csv(const char *arg, int split);
int lt_ds_has_npy(const char *arg, int split);
int lt_ds_has_images(const char *arg, int split);
int lt_ds_has_idx(const char *dir, int split);
int lt_ds_has_cifar(const char *dir, int split);
int lt_ds_has_npz(const char *path, int split);
int lt_ds_has_pb(const char *dir, int split);

/* x and y arrays of npz / onnx-pb (borrowed data: buf NULL) into d, checked
 * against each other; where names the pair in messages ("data.npz: x"). When
 * x_owned is x->data's malloc block and its type is stored as it is (uint8,
 * float32), d takes it over and sets *x_owned to NULL. */
lt_status lt_ds_from_arrays(lt_dataset *d, const lt_tensor *x, const lt_tensor *y, void **x_owned,
                            const char *xname, const char *yname, lt_err *err);


/* lt_dataset_gather with OpenMP allowed (parallel=1) or not: a thread other
 * than the one running the kernels must not start an OpenMP team. */
lt_status lt_ds_gather(const lt_dataset *d, const int64_t *idx, int64_t n, lt_tensor *x, lt_tensor *y, int parallel,
                       lt_err *err);

/* Augmentation of gathered samples (augment.h): the options, the run's
 * seed and the epoch the draws are for. */
typedef struct lt_ds_aug {
    lt_augment a;
    uint64_t seed;
    int64_t epoch;
} lt_ds_aug;
/* lt_ds_gather with each sample augmented (aug NULL: as lt_ds_gather). */
lt_status lt_ds_gather_aug(const lt_dataset *d, const int64_t *idx, int64_t n, lt_tensor *x, lt_tensor *y,
                           int parallel, const lt_ds_aug *aug, lt_err *err);
/* Whether d's samples are images augmentation can move: [H,W] or [C,H,W]
 * with C <= 4 (channels first); spec names the data in the message. */
lt_status lt_ds_aug_check(const lt_dataset *d, const lt_augment *a, const char *spec, lt_err *err);

/* An .npz archive read member by member: names in directory order; read
 * gives member i's array (header parsed, data checked against the shape)
 * with t->data at the front of *block, a malloc block the caller frees. */
typedef struct lt_npz lt_npz;
lt_status lt_npz_open(const char *path, lt_npz **out, lt_err *err);
void lt_npz_close(lt_npz *z);
int lt_npz_count(const lt_npz *z);
const char *lt_npz_name(const lt_npz *z, int i);
const char *lt_npz_listing(const lt_npz *z); /* "x.npy, y.npy" for messages */
lt_status lt_npz_read(lt_npz *z, int i, lt_tensor *t, void **block, lt_err *err);

/* npy=X.npy,Y.npy[,X_TEST.npy,Y_TEST.npy]: the 2 or 4 paths of arg. */
lt_status lt_npy_pair_paths(const char *arg, char paths[4][4096], int *n, lt_err *err);
/* A whole .npy file: t's data at the front of *block (the caller frees). */
lt_status lt_npy_load(const char *path, lt_tensor *t, void **block, lt_err *err);

/* "3x32x32", "784" or "scalars" into buf. */
void lt_ds_shape_str(int rank, const int64_t *dims, char *buf, size_t len);

int lt_ds_file_exists(const char *path);

#endif
