/* CPU kernels: image family. */
#include "../runtime.h"

void lt_cpu_register_image(lt_kernel_fn *tab)
{
    (void)tab;
}
