/* Encoded image to pixels: the format told by its magic bytes, BMP and PNM
 * read here, the compressed formats through their libraries
 * (image_codecs.c), and the one conversion to RGB, BGR or grey that every
 * format shares. Every read is checked against the encoded length, so a
 * truncated or lying header is an error, never a crash. */
#include "image_decode.h"
#include "../ir/ir.h"
#include <stdlib.h>
#include <string.h>

/* pixels as stored: rows may run bottom-up (negative row step), colour may
 * be stored blue first */
typedef struct stored {
    int64_t h, w;
    const uint8_t *px; /* first byte of row 0 (the top row) */
    int64_t row;       /* bytes from one row to the next below it */
    int bpp;           /* bytes per stored pixel: 1 grey, 3 or 4 colour */
    bool bgr;
} stored;

const char *lt_image_format(const uint8_t *d, size_t n)
{
    if (n >= 2 && d[0] == 'B' && d[1] == 'M')
        return "BMP";
    if (n >= 2 && d[0] == 'P' && d[1] >= '1' && d[1] <= '6')
        return "PNM";
    if (n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff)
        return "JPEG";
    if (n >= 8 && !memcmp(d, "\x89PNG\r\n\x1a\n", 8))
        return "PNG";
    if (n >= 12 && !memcmp(d, "RIFF", 4) && !memcmp(d + 8, "WEBP", 4))
        return "WebP";
    if (n >= 4 && (!memcmp(d, "II*\0", 4) || !memcmp(d, "MM\0*", 4) || !memcmp(d, "II+\0", 4) ||
                   !memcmp(d, "MM\0+", 4)))
        return "TIFF";
    if ((n >= 12 && !memcmp(d, "\0\0\0\x0cjP  \r\n\x87\n", 12)) || (n >= 4 && !memcmp(d, "\xff\x4f\xff\x51", 4)))
        return "JPEG 2000";
    if (n >= 6 && (!memcmp(d, "GIF87a", 6) || !memcmp(d, "GIF89a", 6)))
        return "GIF";
    return NULL;
}

lt_status lt_image_raw_alloc(lt_image_raw *o, int64_t h, int64_t w, int bpp, const char *what, lt_err *err)
{
    if (h <= 0 || w <= 0 || h > LT_IMAGE_MAX_PIXELS || w > LT_IMAGE_MAX_PIXELS || h * w > LT_IMAGE_MAX_PIXELS)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "a %s of %lld x %lld pixels (lantern decodes up to %lld)", what,
                       (long long)w, (long long)h, (long long)LT_IMAGE_MAX_PIXELS);
    size_t bytes = (size_t)(h * w * bpp);
    o->px = malloc(bytes);
    if (!o->px)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory decoding a %s (%zu bytes)", what, bytes);
    o->h = h;
    o->w = w;
    o->bpp = bpp;
    return LT_OK;
}

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static lt_status bmp(const uint8_t *d, size_t n, stored *o, lt_err *err)
{
    if (n < 54)
        return lt_errf(err, LT_ERR_INVALID, "a BMP shorter than its headers");
    uint32_t off = le32(d + 10), hsz = le32(d + 14), comp = le32(d + 30);
    int32_t w = (int32_t)le32(d + 18), h = (int32_t)le32(d + 22);
    int bits = d[28] | d[29] << 8;
    if (hsz < 40 || (comp != 0 && !(comp == 3 && bits == 32)) || (bits != 24 && bits != 32))
        return lt_errf(err, LT_ERR_UNSUPPORTED, "a BMP that is not uncompressed 24- or 32-bit (lantern decodes those)");
    if (w <= 0 || h == 0 || w > 1 << 16 || h > 1 << 16 || h < -(1 << 16))
        return lt_errf(err, LT_ERR_INVALID, "a BMP of implausible size %d x %d", w, h);
    int64_t ah = h < 0 ? -(int64_t)h : h, stride = ((int64_t)w * bits / 8 + 3) / 4 * 4;
    if (off > n || (uint64_t)stride * (uint64_t)ah > n - off)
        return lt_errf(err, LT_ERR_INVALID, "a BMP whose pixels run past its end");
    o->h = ah;
    o->w = w;
    o->bpp = bits / 8;
    o->bgr = true;
    o->row = h > 0 ? -stride : stride; /* positive height: stored bottom-up */
    o->px = d + off + (h > 0 ? (ah - 1) * stride : 0);
    return LT_OK;
}

/* the next header number of a PNM (comments and white space skipped) */
static bool pnm_num(const uint8_t *d, size_t n, size_t *i, int64_t *v)
{
    while (*i < n && (d[*i] == ' ' || d[*i] == '\t' || d[*i] == '\n' || d[*i] == '\r' || d[*i] == '#')) {
        if (d[*i] == '#')
            while (*i < n && d[*i] != '\n')
                (*i)++;
        else
            (*i)++;
    }
    if (*i >= n || d[*i] < '0' || d[*i] > '9')
        return false;
    *v = 0;
    while (*i < n && d[*i] >= '0' && d[*i] <= '9' && *v < 1 << 20)
        *v = *v * 10 + (d[(*i)++] - '0');
    return true;
}

static lt_status pnm(const uint8_t *d, size_t n, stored *o, lt_err *err)
{
    if (d[1] != '5' && d[1] != '6')
        return lt_errf(err, LT_ERR_UNSUPPORTED, "a PNM of kind P%c (lantern decodes binary P5 and P6)", d[1]);
    size_t i = 2;
    int64_t w, h, mx;
    if (!pnm_num(d, n, &i, &w) || !pnm_num(d, n, &i, &h) || !pnm_num(d, n, &i, &mx) || i >= n)
        return lt_errf(err, LT_ERR_INVALID, "a PNM with a broken header");
    if (mx != 255)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "a PNM that is not 8 bits per sample (maxval %lld)", (long long)mx);
    if (w <= 0 || h <= 0 || w > 1 << 16 || h > 1 << 16)
        return lt_errf(err, LT_ERR_INVALID, "a PNM of implausible size %lld x %lld", (long long)w, (long long)h);
    i++; /* the one white-space byte before the pixels */
    o->bpp = d[1] == '6' ? 3 : 1;
    if ((uint64_t)(w * h * o->bpp) > n - i)
        return lt_errf(err, LT_ERR_INVALID, "a PNM whose pixels run past its end");
    o->h = h;
    o->w = w;
    o->row = w * o->bpp;
    o->px = d + i;
    o->bgr = false;
    return LT_OK;
}

/* stored pixels to the format asked for, into a new buffer */
static lt_status convert(const stored *s, lt_pixel_format fmt, lt_image *out, lt_err *err)
{
    int ch = fmt == LT_PIXELS_GRAY ? 1 : 3;
    if (s->h <= 0 || s->w <= 0 || s->h * s->w > LT_IMAGE_MAX_PIXELS)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "an image of %lld x %lld pixels (lantern decodes up to %lld)",
                       (long long)s->w, (long long)s->h, (long long)LT_IMAGE_MAX_PIXELS);
    uint8_t *px = malloc((size_t)(s->h * s->w * ch));
    if (!px)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory for a %lld x %lld image", (long long)s->w, (long long)s->h);
    bool bgr = fmt == LT_PIXELS_BGR;
    for (int64_t r = 0; r < s->h; r++) {
        const uint8_t *p = s->px + r * s->row;
        uint8_t *q = px + r * s->w * ch;
        for (int64_t c = 0; c < s->w; c++, p += s->bpp, q += ch) {
            uint8_t rgb[3];
            if (s->bpp == 1) {
                rgb[0] = rgb[1] = rgb[2] = p[0];
            } else {
                rgb[0] = p[s->bgr ? 2 : 0];
                rgb[1] = p[1];
                rgb[2] = p[s->bgr ? 0 : 2];
            }
            if (ch == 1) /* the weights sum to 65536: a grey pixel stays itself */
                q[0] = (uint8_t)((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u + 0x8000u) >> 16);
            else if (bgr) {
                q[0] = rgb[2];
                q[1] = rgb[1];
                q[2] = rgb[0];
            } else {
                memcpy(q, rgb, 3);
            }
        }
    }
    out->h = s->h;
    out->w = s->w;
    out->channels = ch;
    out->px = px;
    return LT_OK;
}

lt_status lt_image_decode(const uint8_t *d, size_t n, lt_pixel_format fmt, lt_image *out, lt_err *err)
{
    const char *name = lt_image_format(d, n);
    if (!name)
        return lt_errf(err, LT_ERR_UNSUPPORTED,
                       "an image in a format lantern does not know (it decodes BMP, PNM, JPEG, PNG, WebP, TIFF "
                       "and JPEG 2000)");
    stored s = {0};
    lt_image_raw raw = {0};
    lt_status st;
    if (!strcmp(name, "BMP"))
        st = bmp(d, n, &s, err);
    else if (!strcmp(name, "PNM"))
        st = pnm(d, n, &s, err);
    else if (!strcmp(name, "JPEG"))
        st = lt_image_decode_jpeg(d, n, &raw, err);
    else if (!strcmp(name, "PNG"))
        st = lt_image_decode_png(d, n, &raw, err);
    else if (!strcmp(name, "WebP"))
        st = lt_image_decode_webp(d, n, &raw, err);
    else if (!strcmp(name, "TIFF"))
        st = lt_image_decode_tiff(d, n, &raw, err);
    else if (!strcmp(name, "JPEG 2000"))
        st = lt_image_decode_jp2(d, n, &raw, err);
    else
        st = lt_errf(err, LT_ERR_UNSUPPORTED, "a %s image (lantern decodes BMP, PNM, JPEG, PNG, WebP, TIFF and "
                     "JPEG 2000)", name);
    if (st == LT_OK && raw.px) {
        s.h = raw.h;
        s.w = raw.w;
        s.px = raw.px;
        s.bpp = raw.bpp;
        s.row = raw.w * raw.bpp;
        s.bgr = false;
    }
    if (st == LT_OK)
        st = convert(&s, fmt, out, err);
    free(raw.px);
    return st;
}

void lt_image_free(lt_image *im)
{
    if (im) {
        free(im->px);
        im->px = NULL;
    }
}
