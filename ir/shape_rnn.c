/* Shape inference rules: rnn family. */
#include "infer.h"

void lt_infer_register_rnn(lt_infer_fn *tab)
{
    (void)tab;
}
