/* Shape inference rules: linalg family. */
#include "infer.h"

void lt_infer_register_linalg(lt_infer_fn *tab)
{
    (void)tab;
}
