/* Shape inference rules: norm family. */
#include "infer.h"

void lt_infer_register_norm(lt_infer_fn *tab)
{
    (void)tab;
}
