/* How a dataset feeds a model (runtime/train_feed.c): which input takes the
 * samples and in what shape, what the loss compares the output with, and
 * the scoring of a forward output (test loss and accuracy). Shared by the
 * training loop and lantern eval. */
#ifndef LT_TRAIN_FEED_H
#define LT_TRAIN_FEED_H

#include "../runtime/runtime.h"

typedef enum lt_target_kind {
    LT_TARGET_NONE = 0, /* nothing fed besides the samples */
    LT_TARGET_LABELS,   /* int64 class indices [n] */
    LT_TARGET_VALUES,   /* the data's float targets as they are */
    LT_TARGET_ONEHOT,   /* class indices as one-hot float rows [n, classes] */
    LT_TARGET_CLASS     /* class index as a float value, [n] or [n, 1] */
} lt_target_kind;

typedef struct lt_feed {
    const char *path;   /* the model's file, for messages */
    lt_loss_kind loss;
    /* the samples */
    const char *x_name;
    int x_rank;
    int64_t x_shape[LT_MAX_RANK]; /* x_shape[0] is the batch */
    int64_t fixed_batch;          /* > 0 when the model fixes its batch size */
    lt_dtype x_dtype;             /* the model's: float32, or float64 (the batch widened) */
    int x_channels_last;          /* images [C,H,W] fed to a model taking [N,H,W,C]: transposed */
    /* what the loss compares with; y_name is "labels" / "targets" for the
     * losses lantern attaches, the model's own input for --loss model */
    const char *y_name;
    lt_target_kind y_kind;
    int y_rank;
    int64_t y_shape[LT_MAX_RANK]; /* y_shape[0] is the batch */
    lt_dtype y_dtype;             /* of float targets and one-hot rows: the type the model compares them in */
    int classes;                  /* the data has class labels */
    int64_t ignore_index;         /* softmax-cross-entropy, nll: the label that counts for nothing */
    /* the forward model's output the loss reads */
    int out_index;
} lt_feed;

/* "float32[N,784]": t as messages show it. */
void lt_feed_type_text(const lt_model *m, const lt_type *t, char *buf, size_t len);

/* The channels an image folder should give the model's sample input (its
 * first input without a default): C of [N,C,H,W] (or of a channels-last
 * [N,H,W,C]) when C is 1 or 3, 1 for [N,H,W]; 0 when the model does not say. */
int lt_feed_image_channels(const lt_model *m);

/* Plans the feed of dataset d into forward model m (not yet differentiated);
 * labels equal to ignore_index count for nothing under softmax-cross-entropy
 * and nll (any other negative label, or one under another loss, is an
 * error naming the sample). */
lt_status lt_feed_plan(const lt_model *m, const lt_dataset *d, lt_loss_kind loss, const char *output,
                       int64_t ignore_index, lt_feed *f, lt_err *err);

/* Batch buffers for n samples: x as the model takes it, raw the data's
 * labels (int64 [n]) or targets, y what the program is fed besides x: NULL
 * for class indices (raw is fed), a view of raw's storage for float targets,
 * its own tensor for one-hot rows and class values. */
typedef struct lt_feed_batch {
    int64_t n;
    lt_value *x, *raw, *y;
    lt_value *xin, *yin; /* x and y as a float64 or channels-last model takes them, else NULL */
} lt_feed_batch;

lt_status lt_feed_batch_new(const lt_feed *f, const lt_dataset *d, int64_t n, lt_feed_batch *b, lt_err *err);
void lt_feed_batch_free(lt_feed_batch *b);
/* Converts b->raw into b->y (one-hot rows, class values); a label outside
 * the output's classes is an error. */
lt_status lt_feed_targets(const lt_feed *f, lt_feed_batch *b, lt_err *err);
/* What the program is fed for the batch: in[0] the samples, in[1] y or raw,
 * widened to float64 where the model takes float64 and the samples moved
 * channels last where it takes them so (after lt_feed_targets). */
void lt_feed_inputs(const lt_feed *f, lt_feed_batch *b, lt_value *in[2]);

/* Adds the batch's loss (summed over samples, so that dividing by the
 * samples counted gives the training loss's mean), correct predictions and
 * the samples counted (all but those labelled ignore_index). */
lt_status lt_feed_score(const lt_feed *f, const lt_value *out, const lt_feed_batch *b, double *loss_sum,
                        int64_t *correct, int64_t *counted, lt_err *err);

/* Evaluates forward model m (session s) on d. */
lt_status lt_feed_evaluate(const lt_feed *f, lt_session *s, lt_model *m, const lt_dataset *d, int64_t limit,
                           lt_eval_result *r, lt_err *err);
/* The same on samples sel[0..n) of d (sel NULL: the first n), e.g. the
 * validation samples held out of the training split. */
lt_status lt_feed_evaluate_sel(const lt_feed *f, lt_session *s, lt_model *m, const lt_dataset *d, const int64_t *sel,
                               int64_t n, lt_eval_result *r, lt_err *err);

#endif
