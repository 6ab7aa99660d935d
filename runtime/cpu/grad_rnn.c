/* CPU kernels: grad_rnn family. */
#include "../runtime.h"

void lt_cpu_register_grad_rnn(lt_kernel_fn *tab)
{
    (void)tab;
}
