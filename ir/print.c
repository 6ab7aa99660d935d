/* The IR's text form. */
#include "ir.h"

void lt_ir_print(const lt_module *m, FILE *f)
{
    (void)m;
    (void)f;
}
