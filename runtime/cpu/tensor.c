/* CPU kernels: tensor family. */
#include "../runtime.h"

void lt_cpu_register_tensor(lt_kernel_fn *tab)
{
    (void)tab;
}
