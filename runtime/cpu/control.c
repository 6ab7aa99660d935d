/* CPU kernels: control family. */
#include "../runtime.h"

void lt_cpu_register_control(lt_kernel_fn *tab)
{
    (void)tab;
}
