/* CPU kernels: rnn family. */
#include "../runtime.h"

void lt_cpu_register_rnn(lt_kernel_fn *tab)
{
    (void)tab;
}
