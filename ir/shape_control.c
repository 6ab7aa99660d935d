/* Shape inference rules: control family. */
#include "infer.h"

void lt_infer_register_control(lt_infer_fn *tab)
{
    (void)tab;
}
