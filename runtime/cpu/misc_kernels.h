/* Kernels of the misc family, registered by runtime/cpu/misc.c. Private to
 * runtime/cpu. */
#ifndef LT_CPU_MISC_KERNELS_H
#define LT_CPU_MISC_KERNELS_H

#include "../runtime.h"

lt_status lt_misc_non_max_suppression(lt_kctx *k); /* misc_nms.c */
lt_status lt_misc_tf_idf_vectorizer(lt_kctx *k);   /* misc_tfidf.c */
lt_status lt_misc_string_normalizer(lt_kctx *k);   /* misc_strnorm.c */
lt_status lt_misc_adagrad(lt_kctx *k);             /* misc_optim.c */
lt_status lt_misc_momentum(lt_kctx *k);
lt_status lt_misc_adam(lt_kctx *k);

#endif
