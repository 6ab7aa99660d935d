/* Shared by the rules_more*.c files: their registrars (all called from
 * lt_ad_register_more) and small builder helpers the builder lacks. */
#ifndef LT_AD_RULES_MORE_H
#define LT_AD_RULES_MORE_H

#include "ad_impl.h"

void lt_ad_register_more_tensor(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_more_norm(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_more_linalg(lt_ad_rule *tab, uint32_t *nondiff);

/* a string attribute on an emitted node (the builder has int, float, ints) */
void lt_ad_more_attr_str(lt_ad *c, lt_node *n, const char *name, const char *s);
/* float dtype of the backward values derived from v */
lt_dtype lt_ad_more_fdt(const lt_ival *v);
/* a node of op with the given inputs (all emitted already) and one output;
 * the caller adds attributes, then runs lt_ad_infer */
lt_node *lt_ad_more_node(lt_ad *c, lt_op op, int nin, lt_ival *const *ins);
/* v with size-1 axes inserted at the given (possibly negative) axes */
lt_ival *lt_ad_more_unsqueeze(lt_ad *c, lt_ival *v, int k, const int64_t *axes);
/* v cast to dtype to */
lt_ival *lt_ad_more_cast(lt_ad *c, lt_ival *v, lt_dtype to);

#endif
