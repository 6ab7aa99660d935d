/* Shape inference rules: nn family. */
#include "infer.h"

void lt_infer_register_nn(lt_infer_fn *tab)
{
    (void)tab;
}
