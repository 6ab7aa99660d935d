/* --mean / --std on the command line, and the line eval and predict print
 * about the normalisation they apply. */
#include "options.h"
#include <stdlib.h>
#include <string.h>

/* --mean / --std: one number or one per channel, comma-separated. */
int lt_cli_norm_arg(const char *opt, const char *s, int *n, double *v, int max)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == max) {
            fprintf(stderr, "lantern: %s takes at most %d values\n", opt, max);
            return 0;
        }
        if (!lt_cli_num(opt, tok, -1e30, 1e30, &v[*n]))
            return 0;
        (*n)++;
    }
    if (!*n) {
        fprintf(stderr, "lantern: %s wants a number or a comma-separated list\n", opt);
        return 0;
    }
    return 1;
}

void lt_cli_print_norm(const lt_dataset_opts *n, int stored, const char *model)
{
    if (!n->nmean && !n->nstd)
        return;
    char shown[512];
    printf("normalisation: (x - mean) / std with mean ");
    for (int i = 0; i < n->nmean; i++)
        printf("%s%g", i ? "," : "", n->mean[i]);
    if (!n->nmean)
        printf("0");
    printf(", std ");
    for (int i = 0; i < n->nstd; i++)
        printf("%s%g", i ? "," : "", n->std[i]);
    if (!n->nstd)
        printf("1");
    printf("%s%s%s\n", stored ? " (stored in " : "", stored ? lt_str_printable(model, shown, sizeof shown) : "",
           stored ? "; --no-model-norm ignores it)" : "");
}
