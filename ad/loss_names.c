/* The losses' names (--loss on the command line, messages). */
#include "lantern.h"
#include <string.h>

static const struct {
    const char *name;
    lt_loss_kind kind;
} LOSSES[] = {
    {"sum", LT_LOSS_SUM},
    {"mean", LT_LOSS_MEAN},
    {"softmax-cross-entropy", LT_LOSS_SOFTMAX_CROSS_ENTROPY},
    {"nll", LT_LOSS_NLL},
    {"mse", LT_LOSS_MSE},
    {"bce-logits", LT_LOSS_BCE_LOGITS},
    {"model", LT_LOSS_MODEL},
};

int lt_loss_parse(const char *s, lt_loss_kind *out)
{
    if (!s || !out)
        return 0;
    for (size_t i = 0; i < sizeof LOSSES / sizeof *LOSSES; i++)
        if (!strcmp(s, LOSSES[i].name)) {
            *out = LOSSES[i].kind;
            return 1;
        }
    return 0;
}

const char *lt_loss_name(lt_loss_kind k)
{
    for (size_t i = 0; i < sizeof LOSSES / sizeof *LOSSES; i++)
        if (LOSSES[i].kind == k)
            return LOSSES[i].name;
    return "?";
}
