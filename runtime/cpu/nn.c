/* CPU kernels: nn family. */
#include "../runtime.h"

void lt_cpu_register_nn(lt_kernel_fn *tab)
{
    (void)tab;
}
