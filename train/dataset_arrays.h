/* Named arrays of one split of an .npz (runtime/dataset_arrays.c): every
 * member NAME.npy of the training split (NAME_test.npy of the test split),
 * as stored, with NAME_splits (row splits) marking NAME ragged along its
 * first axis. The named-input feed (train_arrays.c) reads samples here. */
#ifndef LT_DATASET_ARRAYS_H
#define LT_DATASET_ARRAYS_H

#include "../runtime/runtime.h"

typedef struct lt_ds_array {
    char *name;      /* as a model input would be named ("x", also in the test split) */
    char *member;    /* as the archive names it, for messages ("x_test") */
    lt_tensor t;     /* the whole array; t.data is a malloc block owned here */
    int64_t *splits; /* ragged: samples + 1 row splits; NULL otherwise */
    int64_t n;       /* samples */
    bool shared;     /* a 0-d array: one value all samples share (a model's step count), fed whole every run */
} lt_ds_array;

typedef struct lt_arrays {
    char *path;
    int split;
    int n;
    lt_ds_array *a;
    int64_t samples;    /* the sample count every array shares */
    char listing[512];  /* the split's arrays, for messages */
} lt_arrays;

/* Reads every array of the split and checks the splits (integers, 0 first,
 * non-decreasing, ending at the array's length) and that all arrays hold
 * the same number of samples, but 0-d arrays (shared). */
lt_status lt_arrays_open(const char *path, int split, lt_arrays **out, lt_err *err);
void lt_arrays_free(lt_arrays *s);
/* The arrays of a dataset spec: npz=FILE (lt_arrays_open) or an npy pair
 * npy=X.npy,Y.npy[,X_TEST.npy,Y_TEST.npy] (arrays x and y, dataset_npy.c);
 * *out NULL (and LT_OK) for other kinds of data. */
lt_status lt_arrays_open_spec(const char *spec, int split, lt_arrays **out, lt_err *err);
lt_status lt_arrays_open_npy(const char *arg, int split, lt_arrays **out, lt_err *err);
/* 1 when spec is npz or npy data with arrays of that split. */
int lt_arrays_spec_has_split(const char *spec, int split);
/* 1 when the archive has arrays of that split (NAME_test members for 1). */
int lt_arrays_has_split(const char *path, int split);
const lt_ds_array *lt_arrays_find(const lt_arrays *s, const char *name);
/* The rank of one sample: the array's rank for ragged arrays (the first dim
 * varies), one less otherwise. */
int lt_ds_array_sample_rank(const lt_ds_array *a);
/* Sample i: its dims (sample rank of them) and its first element. */
const void *lt_ds_array_sample(const lt_ds_array *a, int64_t i, int64_t *dims);

#endif
