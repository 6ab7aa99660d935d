/* Private interface of the grad_nn kernel family (runtime/cpu/grad_nn*.c):
 * the registrars of its files and the small helpers they share. */
#ifndef LT_CPU_GRAD_NN_UTIL_H
#define LT_CPU_GRAD_NN_UTIL_H

#include "nn_util.h"

/* Registrars of the family's files, called by lt_cpu_register_grad_nn. */
void lt_gnn_register_conv(lt_kernel_fn *tab);
void lt_gnn_register_pool(lt_kernel_fn *tab);
void lt_gnn_register_resize(lt_kernel_fn *tab);
void lt_gnn_register_norm(lt_kernel_fn *tab);
void lt_gnn_register_layer(lt_kernel_fn *tab);

/* Input i, failing the kernel with "needs <what>" when it is omitted. */
const lt_tensor *lt_gnn_need(lt_kctx *k, int i, const char *what);

/* Fails unless t has exactly the given shape; what names t in the message. */
lt_status lt_gnn_same_shape(lt_kctx *k, const lt_tensor *t, const char *what, int rank, const int64_t *dims);

/* Fails unless t is float16, bfloat16, float32 or float64. */
lt_status lt_gnn_float(lt_kctx *k, const lt_tensor *t, const char *what);

#endif
