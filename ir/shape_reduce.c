/* Shape inference rules: reduce family. */
#include "infer.h"

void lt_infer_register_reduce(lt_infer_fn *tab)
{
    (void)tab;
}
