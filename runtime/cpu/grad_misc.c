/* CPU kernels: grad_misc family, the gradient ops of reductions under
 * broadcasting, softmax and its losses, gathers, Slice and Pad. The kernels
 * live in grad_misc_*.c; this file only registers them. */
#include "grad_misc_util.h"

void lt_cpu_register_grad_misc(lt_kernel_fn *tab)
{
    lt_cpu_register_grad_misc_sum(tab);
    lt_cpu_register_grad_misc_softmax(tab);
    lt_cpu_register_grad_misc_gather(tab);
    lt_cpu_register_grad_misc_shape(tab);
}
