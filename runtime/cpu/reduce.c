/* CPU kernels: reduce family. */
#include "../runtime.h"

void lt_cpu_register_reduce(lt_kernel_fn *tab)
{
    (void)tab;
}
