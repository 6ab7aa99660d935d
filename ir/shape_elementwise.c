/* Shape inference rules: elementwise family. */
#include "infer.h"

void lt_infer_register_elementwise(lt_infer_fn *tab)
{
    (void)tab;
}
