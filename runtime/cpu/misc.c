/* CPU kernels: misc family. */
#include "../runtime.h"

void lt_cpu_register_misc(lt_kernel_fn *tab)
{
    (void)tab;
}
