/* Training checkpoints (runtime/checkpoint.c): what lt_train needs to
 * continue a run bit-exactly, written atomically and validated on load; and
 * the parameters alone, by name, for `lantern export CHECKPOINT`. */
#ifndef LT_CHECKPOINT_H
#define LT_CHECKPOINT_H

#include "../runtime/runtime.h"

#define LT_CKPT_FILE "checkpoint.ltck"

typedef struct lt_ckpt_state {
    /* given by the caller on save and load */
    uint64_t model_hash;      /* from lt_ckpt_model_hash: every parameter, and which are trained */
    int nvalues;              /* every parameter the run can change (running statistics too) */
    lt_tensor *const *values; /* their tensors (loaded in place) */
    const char *const *names; /* their names, stored in the checkpoint's table */
    int n;                    /* trained parameters: the optimizer's */
    lt_tensor *const *params;
    lt_optim *opt;            /* its state is saved / loaded in place */
    int64_t nsamples, batch, steps; /* the run's shape; a checkpoint must match */
    const char *run;          /* the run's options ("name value" lines, lt_ckpt_run_text); a
                                 checkpoint that records others is refused by name; NULL: none */
    int64_t *order;           /* nsamples entries: the shuffled data order */
    int64_t order_max;        /* the order's entries lie in [0, order_max) (0: nsamples; more where
                                 validation samples are held out) */
    /* saved, and filled in by a load */
    int64_t epoch;            /* 1-based epoch the position lies in */
    int64_t step;             /* steps done in that epoch (steps: the epoch is over) */
    int64_t global;           /* steps done in the run */
    uint64_t rng;             /* the shuffling generator's state */
    double loss_sum;          /* the epoch's training loss so far (weighted by samples) */
    int64_t seen;             /* the epoch's samples so far */
    /* validation (lt_train_opts.val_split; version 5): the best epoch so far
     * (0: none), its figure, the epochs since it; best (NULL or nvalues
     * tensors shaped like values): that epoch's values, saved when
     * best_epoch > 0 and loaded in place when the file holds them */
    int64_t best_epoch, since_best;
    double best_value;
    lt_tensor *const *best;
    int has_best;             /* filled in by a load: the file held best values */
    /* filled in by a load: the lantern that wrote the checkpoint ("lantern
     * 0.7.0"); "" for a checkpoint from before version 4, which did not say */
    char writer[64];
} lt_ckpt_state;

/* What a checkpoint says about itself, from its head alone (no checksum:
 * a load checks the whole file). */
typedef struct lt_ckpt_info {
    unsigned version; /* of the file format */
    char writer[64];  /* as lt_ckpt_state.writer */
    int64_t epoch, step, steps, global;
} lt_ckpt_info;

/* Reads the head of a checkpoint (the .ltck file, or the folder holding
 * LT_CKPT_FILE): magic, version, header and writer. */
lt_status lt_ckpt_read_info(const char *path_or_dir, lt_ckpt_info *info, lt_err *err);

/* The options that decide a run, one "name value" line each in a fixed
 * order (model, data, limit, batch, epochs, optimizer and its
 * hyperparameters, schedule, clipping, loss, output, normalization, frozen
 * parameters, seed, shuffling, init), malloc'ed; NULL when out of memory. */
char *lt_ckpt_run_text(const char *model_path, const lt_train_opts *o);

/* Takes dir/checkpoint.lock (flock, exclusive, not waiting) for the run:
 * *fd receives the descriptor to hand to lt_ckpt_unlock. A folder another
 * run holds is an error naming it. */
lt_status lt_ckpt_lock(const char *dir, int *fd, lt_err *err);
void lt_ckpt_unlock(int fd);

/* Hash of the parameters' names, element types and shapes. */
uint64_t lt_ckpt_model_hash(int n, const char *const *names, const lt_tensor *const *params);

/* Writes dir/LT_CKPT_FILE atomically (temp file in dir, fsync, rename). */
lt_status lt_ckpt_save(const char *dir, const lt_ckpt_state *s, lt_err *err);

/* Reads dir/LT_CKPT_FILE into s (parameters, optimizer state and order in
 * place) after checking magic, version, model hash, run shape, size and
 * checksum; nothing is changed when a check fails. */
lt_status lt_ckpt_load(const char *dir, lt_ckpt_state *s, lt_err *err);

/* Sets every parameter of m from the checkpoint (the .ltck file or the
 * folder holding LT_CKPT_FILE), matched by name (the k-th of a name to the
 * k-th) with the same element type and shape. The checkpoint must hold
 * exactly m's parameters (string and empty ones aside); any mismatch, and a
 * truncated or corrupted file, is an error naming both files, and m is only
 * changed once every check has passed. */
lt_status lt_ckpt_read_params(const char *ckpt_path_or_dir, lt_model *m, lt_err *err);

/* 1 when path is a checkpoint file (by its magic) or a folder holding one. */
int lt_ckpt_is_checkpoint(const char *path);

#endif
