/* The step-level trainer (runtime/trainer.c): a model turned into its
 * training program, the forward copy that receives its parameters, the
 * optimizer. lt_train's loop drives one; so can a program through the
 * public lt_trainer_* API. */
#ifndef LT_TRAINER_H
#define LT_TRAINER_H

#include "../runtime/backend.h"
#include "../runtime/runtime.h"
#include "checkpoint.h"
#include "thread_gov.h"

struct lt_trainer {
    const lt_train_opts *o;
    lt_train_opts own_opts; /* the copy o points at for lt_trainer_new */
    const char *path;
    lt_model *tm, *em; /* training program; forward model for evaluation */
    lt_session *ts, *es;
    int ngrad;
    int *grad_param;    /* module parameter of gradient output 1 + i */
    lt_tensor **params; /* the training model's parameters being updated */
    const lt_tensor **grads;
    lt_optim *opt;
    bool em_stale;      /* the forward copy lags the training program's parameters */
    int64_t steps;      /* steps taken (for checkpoints of the step API) */
    lt_tensor *acc;     /* ngrad gradient sums of lt_trainer_accum_in, or NULL */
    int64_t nacc;       /* runs summed in acc since the last step */
    lt_copy_stats copies; /* summed over the training program's runs */
    int64_t runs;
    lt_thread_gov gov; /* threads per run (LANTERN_THREAD_GOV=0: always all) */
    /* On a device backend (the training session's, when it has the
     * training hooks of backend.h): every float parameter of tm lives in
     * its memory (dparam[p], bound to the session), gradients stay there
     * and the optimizer's state and step too; tm's host data is a mirror
     * brought up to date by lt_trainer_pull (checkpoints, the forward copy,
     * export) and sent back by lt_trainer_push. */
    const lt_backend *dev;
    lt_tensor *dparam;     /* tm->nparams; buf NULL: not bound (strings, integers, empty) */
    lt_tensor **dparams;   /* ngrad: the trained ones, as params is */
    bool host_stale;       /* tm's host data lags dparam */
    int nstat, *stat_param; /* running statistics: parameters the program's stat results update */
    bool *stat_result;      /* per result: a running-statistic sum or count (brought to the host) */
    /* set by the caller before lt_trainer_init where the data is known: the
     * labels' dims (the batch first; -1 where they vary), from which a
     * class axis of 0 (lt_train_opts.class_axis) is taken */
    int hint_rank;
    int64_t hint_dims[LT_MAX_RANK + 1];
    int class_axis; /* the class axis the training program reads: 1, or -1 (the last) */
};

/* splitmix64: the trainer's seeded generator (shuffling, initialization). */
uint64_t lt_train_rand(uint64_t *state);

/* Loads the model twice, freezes, re-initializes, turns one copy into its
 * training program (loss o->loss at o->output) and makes the optimizer and
 * both sessions. t is zeroed by the caller; free with lt_trainer_fini. */
lt_status lt_trainer_init(struct lt_trainer *t, const char *path, const lt_train_opts *o, lt_err *err);
void lt_trainer_fini(struct lt_trainer *t);
/* The rewrites lt_trainer_init makes to a training program after the AD:
 * accumulation cells into sums, MaxPool gradients' plane sums, with cpu the
 * transposes, scales and attention heads folded into the matrix products,
 * and with fuse the elementwise chains fused. */
lt_status lt_trainer_rewrite(lt_model *tm, bool cpu, bool fuse, lt_err *err);
/* One optimizer step; names/inputs are what the training program takes. */
lt_status lt_trainer_step_in(struct lt_trainer *t, double lr, int n, const char *const *names,
                             lt_value *const *inputs, double *loss, lt_err *err);
/* Gradient accumulation: accum_in runs the program on one batch (or one
 * sample) and adds its gradients to the trainer's sums (*loss gets its
 * loss); apply_in then makes one optimizer step with their mean over the
 * runs (clipped as a step's gradients are) and clears them. */
lt_status lt_trainer_accum_in(struct lt_trainer *t, int n, const char *const *names, lt_value *const *inputs,
                              double *loss, lt_err *err);
lt_status lt_trainer_apply_in(struct lt_trainer *t, double lr, lt_err *err);
/* Copies the training program's parameters into the forward copy. */
lt_status lt_trainer_sync(struct lt_trainer *t, lt_err *err);
/* On a device: the parameters and optimizer state to tm's host data and
 * the optimizer's host state (before they are read or saved), and back
 * (after they were loaded or set). No-ops on the host. */
lt_status lt_trainer_pull(struct lt_trainer *t, lt_err *err);
lt_status lt_trainer_push(struct lt_trainer *t, lt_err *err);
/* The checkpoint's view of the trainer (position fields left to the caller):
 * every parameter's values and the optimizer of the trained ones; c->values
 * (which holds c->names too) is the caller's to free. */
lt_status lt_trainer_ckpt_state(struct lt_trainer *t, int64_t n, int64_t B, int64_t steps, lt_ckpt_state *c,
                                lt_err *err);

#endif
