/* CPU kernels: index family. */
#include "../runtime.h"

void lt_cpu_register_index(lt_kernel_fn *tab)
{
    (void)tab;
}
