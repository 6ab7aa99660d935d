/* How many inputs and outputs a node of each standard op takes, per opset
 * version, and which must be present (op_arity.inc, from the ONNX schemas):
 * a node the checker would refuse for its arity is refused at import,
 * before a kernel or a gradient rule reads an input that is not there. */
#include "ir.h"
#include <string.h>

static const lt_op_arity table[] = {
#include "op_arity.inc"
};

const lt_op_arity *lt_op_arity_find(const char *name, int domain, int64_t version)
{
    size_t lo = 0, hi = sizeof table / sizeof table[0];
    while (lo < hi) { /* the first row of name */
        size_t mid = (lo + hi) / 2;
        if (strcmp(table[mid].name, name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    const lt_op_arity *best = NULL;
    for (size_t i = lo; i < sizeof table / sizeof table[0] && !strcmp(table[i].name, name); i++)
        if (table[i].domain == domain && table[i].since <= version)
            best = &table[i];
    return best;
}
