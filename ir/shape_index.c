/* Shape inference rules: index family. */
#include "infer.h"

void lt_infer_register_index(lt_infer_fn *tab)
{
    (void)tab;
}
