/* CPU kernels: norm family. */
#include "../runtime.h"

void lt_cpu_register_norm(lt_kernel_fn *tab)
{
    (void)tab;
}
