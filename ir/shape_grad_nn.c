/* Shape inference rules: grad_nn family. */
#include "infer.h"

void lt_infer_register_grad_nn(lt_infer_fn *tab)
{
    (void)tab;
}
