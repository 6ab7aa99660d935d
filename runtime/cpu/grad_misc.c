/* CPU kernels: grad_misc family. */
#include "../runtime.h"

void lt_cpu_register_grad_misc(lt_kernel_fn *tab)
{
    (void)tab;
}
