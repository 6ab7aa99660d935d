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

/* Run after lt_model_grad on a module that went through lt_ir_set_training:
 * appends each BatchNormalization's updated running mean and variance to the
 * program's outputs (after the loss and the gradients) as "<param>_running",
 * where <param> is the parameter holding them; *n gets how many. */
lt_status lt_ir_expose_running_stats(lt_module *tm, int *n, lt_err *err);

/* How many parameters serve as BatchNormalization running statistics
 * anywhere in the module (subgraphs and functions too); run before the AD.
 * lt_ir_expose_running_stats reaches those of the main block only, so a
 * smaller count from it means some statistics are not updated. */
int lt_ir_count_running_stats(const lt_module *m);

/* Copies every output named "<param>_running" among out[0 .. nout) (in the
 * order of the program's outputs) into that parameter's data. */
lt_status lt_ir_store_running_stats(lt_module *tm, int nout, lt_value *const *out, lt_err *err);

#endif
