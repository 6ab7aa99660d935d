/* Background batch gathering: one worker thread fills the next batch from a
 * dataset while the current training step runs on the calling thread. */
#ifndef LT_PREFETCH_H
#define LT_PREFETCH_H

#include "../runtime/runtime.h"

typedef struct lt_prefetch lt_prefetch;

/* A worker for dataset d (which must outlive it). */
lt_status lt_prefetch_new(const lt_dataset *d, lt_prefetch **out, lt_err *err);
/* Starts gathering idx[0..n) into x, y in the background, as
 * lt_dataset_gather does (idx, x, y stay valid until wait). One batch at a
 * time: submitting again before lt_prefetch_wait is an error. */
lt_status lt_prefetch_submit(lt_prefetch *p, const int64_t *idx, int64_t n, lt_tensor *x, lt_tensor *y,
                             lt_err *err);
/* lt_prefetch_submit with each sample augmented as aug says (copied; NULL:
 * none): dataset_impl.h's lt_ds_aug. */
struct lt_ds_aug;
lt_status lt_prefetch_submit_aug(lt_prefetch *p, const int64_t *idx, int64_t n, lt_tensor *x, lt_tensor *y,
                                 const struct lt_ds_aug *aug, lt_err *err);
/* Waits for the last submit and returns its status (its message into err);
 * LT_OK at once when nothing is outstanding. */
lt_status lt_prefetch_wait(lt_prefetch *p, lt_err *err);
/* Waits for an outstanding batch, stops and joins the worker. NULL is fine. */
void lt_prefetch_free(lt_prefetch *p);

#endif
