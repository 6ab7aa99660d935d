/* Shape inference rules: misc family. */
#include "infer.h"

void lt_infer_register_misc(lt_infer_fn *tab)
{
    (void)tab;
}
