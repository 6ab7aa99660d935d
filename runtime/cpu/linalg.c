/* CPU kernels: linalg family. */
#include "../runtime.h"

void lt_cpu_register_linalg(lt_kernel_fn *tab)
{
    (void)tab;
}
