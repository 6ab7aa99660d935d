/* CPU kernels: misc family. NonMaxSuppression (misc_nms.c), TfIdfVectorizer
 * (misc_tfidf.c), StringNormalizer (misc_strnorm.c), the preview-training
 * optimizer ops Adagrad, Momentum and Adam (misc_optim.c), and the string
 * side of Cast (misc_string.c, called by the Cast kernel). */
#include "misc_kernels.h"

void lt_cpu_register_misc(lt_kernel_fn *tab)
{
    tab[LT_OP_NON_MAX_SUPPRESSION] = lt_misc_non_max_suppression;
    tab[LT_OP_TF_IDF_VECTORIZER] = lt_misc_tf_idf_vectorizer;
    tab[LT_OP_STRING_NORMALIZER] = lt_misc_string_normalizer;
    tab[LT_OP_ADAGRAD] = lt_misc_adagrad;
    tab[LT_OP_MOMENTUM] = lt_misc_momentum;
    tab[LT_OP_ADAM] = lt_misc_adam;
}
