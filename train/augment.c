/* --augment: parsing and the per-sample draws (augment.h); the pixels move
 * in the dataset's gather (dataset.c). */
#include "augment.h"
#include <stdlib.h>
#include <string.h>

#define LT_AUG_MAX_PAD 1024

static uint64_t mix(uint64_t x)
{
    uint64_t z = x + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

bool lt_augment_on(const lt_augment *a) { return a && (a->flip || a->crop > 0); }

void lt_augment_draw(const lt_augment *a, uint64_t seed, int64_t epoch, int64_t sample, lt_aug_draw *d)
{
    uint64_t k = mix(mix(mix(seed ^ 0x6175676d656e7421ull) ^ (uint64_t)epoch) ^ (uint64_t)sample);
    /* splitmix64's stream from state k: the i-th number is mix(k + i * golden) */
    uint64_t r1 = mix(k), r2 = mix(k + 0x9e3779b97f4a7c15ull), r3 = mix(k + 2 * 0x9e3779b97f4a7c15ull);
    uint64_t span = (uint64_t)(2 * a->crop + 1);
    d->flip = a->flip && (r1 >> 63);
    d->dy = a->crop > 0 ? (int)(r2 % span) : 0;
    d->dx = a->crop > 0 ? (int)(r3 % span) : 0;
}

lt_status lt_augment_parse(const char *spec, lt_augment *a, lt_err *err)
{
    memset(a, 0, sizeof *a);
    if (!spec || !*spec || !strcmp(spec, "none"))
        return LT_OK;
    char shown[256];
    lt_str_printable(spec, shown, sizeof shown);
    const char *p = spec;
    bool seen_crop = false;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        if (n == 4 && !strncmp(p, "flip", 4) && !a->flip) {
            a->flip = true;
        } else if (n > 5 && !strncmp(p, "crop:", 5) && !seen_crop) {
            char *end;
            long v = strtol(p + 5, &end, 10);
            if (end != p + n || v < 1 || v > LT_AUG_MAX_PAD)
                return lt_errf(err, LT_ERR_INVALID, "--augment %s: crop:P wants a padding P of 1..%d pixels", shown,
                               LT_AUG_MAX_PAD);
            a->crop = (int)v;
            seen_crop = true;
        } else {
            return lt_errf(err, LT_ERR_INVALID, "--augment %s: give flip, crop:P or both, comma-separated, each once "
                           "(e.g. flip,crop:4)", shown);
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    return LT_OK;
}
