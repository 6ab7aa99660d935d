/* Private to the training-mode pass (ir/train_mode.c) and its users: the
 * running statistics of BatchNormalization in a training program. */
#ifndef LT_TRAIN_MODE_H
#define LT_TRAIN_MODE_H

#include "ir.h"
#include "lantern.h"

/* Suffixes of the program results that carry running statistics: the sum
 * of the updated values and how many batch norms ran. */
#define LT_RUNNING_SUM "_running_sum"
#define LT_RUNNING_COUNT "_running_count"

/* Run after lt_model_grad on a module that went through lt_ir_set_training
 * (which gave every parameter holding a running statistic two accumulation
 * cells; the AD returns them after the loss and the gradients as
 * "<param>_running_sum" and "<param>_running_count"): *n gets how many
 * statistics the program returns. */
lt_status lt_ir_expose_running_stats(lt_module *tm, int *n, lt_err *err);

/* How many parameters serve as BatchNormalization running statistics
 * anywhere in the module (subgraphs and functions too); run before the AD.
 * A smaller count from lt_ir_expose_running_stats means some statistics
 * are not updated (the trainer says so). */
int lt_ir_count_running_stats(const lt_module *m);

/* Sets every parameter with a "<param>_running_sum" output among
 * out[0 .. nout) to sum / count (left as it is when count is 0: no batch
 * norm of it ran); a NULL sum is one the caller stored itself. */
lt_status lt_ir_store_running_stats(lt_module *tm, int nout, lt_value *const *out, lt_err *err);

#endif
