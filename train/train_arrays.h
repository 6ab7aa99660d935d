/* How named npz arrays feed a model (runtime/train_arrays.c): each model
 * input without a default takes the array of its name (x for a one-input
 * model) in the element type it declares, with the batch axis the model
 * shows; the loss's labels or targets come from y (or --labels). Ragged
 * arrays and models without a batch axis run one sample per program run.
 * Used by the training loop when the x / y feed (train_feed.c) does not fit
 * the data or the model. */
#ifndef LT_TRAIN_ARRAYS_H
#define LT_TRAIN_ARRAYS_H

#include "dataset_arrays.h"
#include "../runtime/runtime.h"

#define LT_AFEED_MAX 16

typedef struct lt_afeed_slot {
    const char *name;         /* the program's input ("labels" / "targets" for the loss's) */
    const lt_ds_array *src;   /* the array feeding it */
    lt_dtype dtype;           /* the element type the input takes */
    int rank;                 /* of the tensor fed */
    int axis;                 /* its batch axis; -1: one sample as it is; LT_AFEED_WHOLE: the whole array */
} lt_afeed_slot;

/* The axis of a slot fed a 0-d array, the same every run (a step count). */
#define LT_AFEED_WHOLE (-2)

typedef struct lt_afeed {
    const char *path; /* the model's file */
    const lt_arrays *data;
    lt_loss_kind loss;
    int out_index;     /* the forward model's output the loss reads */
    int nslot;         /* the model's inputs, then the loss's labels or targets */
    int target;        /* that last slot's index, -1 for --loss model */
    lt_afeed_slot slot[LT_AFEED_MAX + 1];
    bool batched;      /* the inputs have a batch axis */
    bool ragged;       /* some array is ragged */
    int64_t fixed_batch; /* > 0 when the model fixes its batch size */
    int64_t classes;   /* the output's class count (on class_axis) when known, else 0 */
    int class_axis;    /* softmax-cross-entropy, nll: 1 (scores [N, C, d1, ...]) or -1 (the last axis) */
    int64_t ignore_index;
} lt_afeed;

/* 1 when data and model need this feed (named inputs, other element types,
 * ragged arrays, a batch axis other than the first, labels with extra axes,
 * --labels or --batch-axis); 0 when the x / y feed takes them. */
int lt_afeed_wanted(const lt_model *m, const lt_arrays *a, const lt_train_opts *o);
/* Plans the feed of a into forward model m (not yet differentiated). */
lt_status lt_afeed_plan(const lt_model *m, const lt_arrays *a, const lt_train_opts *o, lt_afeed *f, lt_err *err);
/* For lantern eval and predict: where o->data's test split is an npz whose
 * arrays feed m by name, *a gets them (the caller's: lt_arrays_free) and
 * f the feed planned with loss and o's output and ignore index; *a stays
 * NULL where the data feeds otherwise. */
lt_status lt_afeed_for_eval(const lt_model *m, const lt_eval_opts *o, lt_loss_kind loss, lt_arrays **a, lt_afeed *f,
                            lt_err *err);
/* For training: where each program run takes one sample (ragged arrays, no
 * batch axis), each sample's loss is a mean over its own labels or targets,
 * and a sample with none (an empty ragged row, or only the ignore index)
 * makes it nan, which would stop training as a diverged loss: refused,
 * naming the sample. (Test figures are means over all samples' labels.) */
lt_status lt_afeed_check_samples(const lt_afeed *f, lt_err *err);
/* Samples one program run takes when a step has B: B when the inputs have
 * a batch axis and nothing is ragged, else 1 (steps then accumulate). */
int64_t lt_afeed_run_size(const lt_afeed *f, int64_t B);
/* The program's inputs for samples idx[0..k) (k == 1 unless batched):
 * names[i] and values[i] for i < f->nslot (the caller frees the values). */
lt_status lt_afeed_make(const lt_afeed *f, const int64_t *idx, int64_t k, const char **names, lt_value **values,
                        lt_err *err);
void lt_afeed_free_values(const lt_afeed *f, lt_value **values);
/* Test loss and accuracy of forward model m (session s) on f's data: the
 * mean over the labels counted (tokens, nodes; ignore_index skipped), over
 * target values for mse / bce-logits, over samples for --loss model. */
lt_status lt_afeed_evaluate(const lt_afeed *f, lt_session *s, lt_model *m, int64_t limit, lt_eval_result *r,
                            lt_err *err);
/* The same on samples sel[0..n) of f's data (sel NULL: the first n). */
lt_status lt_afeed_evaluate_sel(const lt_afeed *f, lt_session *s, lt_model *m, const int64_t *sel, int64_t n,
                                lt_eval_result *r, lt_err *err);

#endif
