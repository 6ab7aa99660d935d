/* Shape inference rules: grad_misc family. */
#include "infer.h"

void lt_infer_register_grad_misc(lt_infer_fn *tab)
{
    (void)tab;
}
