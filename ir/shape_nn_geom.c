/* Sliding-window geometry (shape_nn.h): output sizes and pads of Conv,
 * ConvTranspose, the pools and Col2Im from strides, dilations, pads,
 * auto_pad, ceil_mode, output_padding and output_shape. Shared by the shape
 * rules and the CPU kernels so that both always agree. */
#include "shape_nn.h"
#include <stdio.h>
#include <string.h>

enum { PAD_NOTSET, PAD_SAME_UPPER, PAD_SAME_LOWER, PAD_VALID };

/* attributes beyond this are nonsense; keeping them small keeps every
 * product of two of them inside int64 */
#define ATTR_MAX ((int64_t)1 << 31)

static int auto_pad_mode(const lt_node *n)
{
    const char *s = lt_attr_str(n, "auto_pad", "NOTSET");
    if (!*s || !strcmp(s, "NOTSET"))
        return PAD_NOTSET;
    if (!strcmp(s, "SAME_UPPER"))
        return PAD_SAME_UPPER;
    if (!strcmp(s, "SAME_LOWER"))
        return PAD_SAME_LOWER;
    if (!strcmp(s, "VALID"))
        return PAD_VALID;
    return -1;
}

/* An ints attribute with `want` values, or dflt everywhere when absent (an
 * empty list counts as absent: some exporters write one). */
static bool ints_attr(const lt_node *n, const char *name, int want, int64_t dflt, int64_t lo, int64_t *out,
                      char *why, size_t len)
{
    int l;
    const int64_t *v = lt_attr_ints(n, name, &l);
    for (int i = 0; i < want; i++)
        out[i] = dflt;
    if (!v || l == 0)
        return true;
    if (l != want) {
        snprintf(why, len, "attribute %s has %d values, expected %d", name, l, want);
        return false;
    }
    for (int i = 0; i < want; i++) {
        if (v[i] < lo || v[i] > ATTR_MAX) {
            snprintf(why, len, "attribute %s has the out-of-range value %lld", name, (long long)v[i]);
            return false;
        }
        out[i] = v[i];
    }
    return true;
}

/* the common attributes: strides, dilations, pads, kernel */
static bool common(const lt_node *n, int nsp, const int64_t *kernel, lt_nn_geom *g, int64_t *pads, char *why,
                   size_t len)
{
    if (nsp < 1 || nsp > LT_MAX_RANK - 2) {
        snprintf(why, len, "%d spatial axes (the input needs rank 3 to %d)", nsp, LT_MAX_RANK);
        return false;
    }
    memset(g, 0, sizeof *g);
    g->nsp = nsp;
    for (int i = 0; i < nsp; i++) {
        if (kernel[i] < 1 || kernel[i] > ATTR_MAX) {
            snprintf(why, len, "kernel size %lld along spatial axis %d", (long long)kernel[i], i);
            return false;
        }
        g->k[i] = kernel[i];
    }
    return ints_attr(n, "strides", nsp, 1, 1, g->s, why, len) &&
           ints_attr(n, "dilations", nsp, 1, 1, g->d, why, len) &&
           ints_attr(n, "pads", 2 * nsp, 0, 0, pads, why, len);
}

/* floor(t / 2) for either sign */
static int64_t half_floor(int64_t t) { return t >= 0 ? t / 2 : -((-t + 1) / 2); }

bool lt_nn_window(const lt_node *n, int nsp, const int64_t *img, const int64_t *kernel, bool ceil_mode,
                  lt_nn_geom *g, char *why, size_t len)
{
    int64_t pads[2 * LT_MAX_RANK];
    if (!common(n, nsp, kernel, g, pads, why, len))
        return false;
    int mode = auto_pad_mode(n);
    if (mode < 0) {
        snprintf(why, len, "unknown auto_pad '%s'", lt_attr_str(n, "auto_pad", ""));
        return false;
    }
    for (int i = 0; i < nsp; i++) {
        int64_t dk = (g->k[i] - 1) * g->d[i] + 1, in = img[i];
        g->img[i] = in;
        g->pb[i] = mode == PAD_NOTSET ? pads[i] : 0;
        g->pe[i] = mode == PAD_NOTSET ? pads[nsp + i] : 0;
        if (in < 0) {
            g->grid[i] = -1;
            continue;
        }
        if (mode == PAD_SAME_UPPER || mode == PAD_SAME_LOWER) {
            g->grid[i] = (in + g->s[i] - 1) / g->s[i];
            int64_t total = (g->grid[i] - 1) * g->s[i] + dk - in;
            if (total < 0)
                total = 0;
            g->pb[i] = mode == PAD_SAME_UPPER ? total / 2 : total - total / 2;
            g->pe[i] = total - g->pb[i];
            continue;
        }
        int64_t span = in + g->pb[i] + g->pe[i] - dk;
        if (span < 0) {
            snprintf(why, len, "the window (%lld with dilation) is larger than the padded input (%lld) along spatial axis %d",
                     (long long)dk, (long long)(in + g->pb[i] + g->pe[i]), i);
            return false;
        }
        g->grid[i] = span / g->s[i] + 1;
        if (ceil_mode && span % g->s[i]) {
            g->grid[i]++;
            /* the last window must start inside the input or the left padding */
            if ((g->grid[i] - 1) * g->s[i] >= in + g->pb[i])
                g->grid[i]--;
        }
    }
    return true;
}

bool lt_nn_window_transpose(const lt_node *n, int nsp, const int64_t *grid, const int64_t *kernel, lt_nn_geom *g,
                            char *why, size_t len)
{
    int64_t pads[2 * LT_MAX_RANK], opad[LT_MAX_RANK], oshape[LT_MAX_RANK + 2];
    if (!common(n, nsp, kernel, g, pads, why, len) ||
        !ints_attr(n, "output_padding", nsp, 0, 0, opad, why, len))
        return false;
    int mode = auto_pad_mode(n);
    if (mode < 0) {
        snprintf(why, len, "unknown auto_pad '%s'", lt_attr_str(n, "auto_pad", ""));
        return false;
    }
    int nos;
    const int64_t *os = lt_attr_ints(n, "output_shape", &nos);
    if (os && nos > 0) {
        /* either the spatial sizes or the full shape */
        if (nos != nsp && nos != nsp + 2) {
            snprintf(why, len, "output_shape has %d values for %d spatial axes", nos, nsp);
            return false;
        }
        for (int i = 0; i < nsp; i++) {
            oshape[i] = os[nos - nsp + i];
            if (oshape[i] < 0 || oshape[i] > ((int64_t)1 << 40)) {
                snprintf(why, len, "output_shape value %lld", (long long)oshape[i]);
                return false;
            }
        }
    } else {
        os = NULL;
    }
    for (int i = 0; i < nsp; i++) {
        int64_t dk = (g->k[i] - 1) * g->d[i] + 1, in = grid[i];
        g->grid[i] = in;
        g->pb[i] = mode == PAD_NOTSET ? pads[i] : 0;
        g->pe[i] = mode == PAD_NOTSET ? pads[nsp + i] : 0;
        if (in < 0) {
            g->img[i] = os ? oshape[i] : -1;
            continue;
        }
        int64_t full = g->s[i] * (in - 1) + opad[i] + dk;
        if (os || mode == PAD_SAME_UPPER || mode == PAD_SAME_LOWER) {
            g->img[i] = os ? oshape[i] : in * g->s[i];
            int64_t total = full - g->img[i];
            /* split as the spec's formulas do (floor division): a negative
             * total means the output reaches beyond every contribution */
            if (mode == PAD_SAME_UPPER) {
                g->pb[i] = half_floor(total);
                g->pe[i] = total - g->pb[i];
            } else {
                g->pe[i] = half_floor(total);
                g->pb[i] = total - g->pe[i];
            }
            continue;
        }
        g->img[i] = full - g->pb[i] - g->pe[i];
        if (g->img[i] < 0) {
            snprintf(why, len, "pads leave a negative output size along spatial axis %d", i);
            return false;
        }
    }
    return true;
}

int64_t lt_nn_prod(int n, const int64_t *v)
{
    int64_t p = 1;
    for (int i = 0; i < n; i++) {
        if (v[i] < 0 || (v[i] > 0 && p > INT64_MAX / v[i]))
            return -1;
        p *= v[i];
    }
    return p;
}
