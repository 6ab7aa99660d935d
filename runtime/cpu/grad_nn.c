/* CPU kernels: grad_nn family. */
#include "../runtime.h"

void lt_cpu_register_grad_nn(lt_kernel_fn *tab)
{
    (void)tab;
}
