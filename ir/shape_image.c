/* Shape inference rules: image family. */
#include "infer.h"

void lt_infer_register_image(lt_infer_fn *tab)
{
    (void)tab;
}
