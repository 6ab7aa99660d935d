/* Shape inference rules: grad_rnn family. */
#include "infer.h"

void lt_infer_register_grad_rnn(lt_infer_fn *tab)
{
    (void)tab;
}
