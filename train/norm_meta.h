/* The normalisation a model carries (train/norm_meta.c; lt_model_norm and
 * lt_model_set_norm in lantern.h). */
#ifndef LT_NORM_META_H
#define LT_NORM_META_H

#include "../runtime/runtime.h"

/* Fills what norm does not give (no mean, no std) from the model's stored
 * lantern.mean / lantern.std; the given ones stay. */
lt_status lt_norm_fill_from_model(const lt_model *m, lt_dataset_opts *norm, lt_err *err);

#endif
