/* CPU kernel: ImageDecoder (opset 20) for the formats lantern decodes
 * itself: uncompressed BMP (24 and 32 bits per pixel) and binary PNM (P5
 * grey, P6 colour, 8 bits). Other formats (JPEG, PNG, TIFF, WebP, JPEG
 * 2000) are refused by name. Every read is checked against the encoded
 * length, so a truncated or lying header is an error, never a crash. */
#include "../runtime.h"
#include <string.h>

typedef struct img {
    int64_t h, w;
    const uint8_t *px; /* first byte of row 0 as stored */
    int64_t row;       /* bytes from one stored row to the next (negative: bottom-up) */
    int bpp;           /* bytes per stored pixel: 1 grey, 3 or 4 colour */
    bool bgr;          /* stored blue first */
} img;

static uint32_t le32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }

static const char *bmp(const uint8_t *d, size_t n, img *o)
{
    if (n < 54)
        return "a BMP shorter than its headers";
    uint32_t off = le32(d + 10), hsz = le32(d + 14), comp = le32(d + 30);
    int32_t w = (int32_t)le32(d + 18), h = (int32_t)le32(d + 22);
    int bits = d[28] | d[29] << 8;
    if (hsz < 40 || (comp != 0 && !(comp == 3 && bits == 32)) || (bits != 24 && bits != 32))
        return "a BMP that is not uncompressed 24- or 32-bit";
    if (w <= 0 || h == 0 || w > 1 << 16 || h > 1 << 16 || h < -(1 << 16))
        return "a BMP of implausible size";
    int64_t ah = h < 0 ? -(int64_t)h : h, stride = ((int64_t)w * bits / 8 + 3) / 4 * 4;
    if (off > n || (uint64_t)stride * (uint64_t)ah > n - off)
        return "a BMP whose pixels run past its end";
    o->h = ah;
    o->w = w;
    o->bpp = bits / 8;
    o->bgr = true;
    o->row = h > 0 ? -stride : stride; /* positive height: stored bottom-up */
    o->px = d + off + (h > 0 ? (ah - 1) * stride : 0);
    return NULL;
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

static const char *pnm(const uint8_t *d, size_t n, img *o)
{
    size_t i = 2;
    int64_t w, h, mx;
    if (!pnm_num(d, n, &i, &w) || !pnm_num(d, n, &i, &h) || !pnm_num(d, n, &i, &mx) || i >= n)
        return "a PNM with a broken header";
    if (mx != 255)
        return "a PNM that is not 8 bits per sample";
    if (w <= 0 || h <= 0 || w > 1 << 16 || h > 1 << 16)
        return "a PNM of implausible size";
    i++; /* the one white-space byte before the pixels */
    o->bpp = d[1] == '6' ? 3 : 1;
    if ((uint64_t)(w * h * o->bpp) > n - i)
        return "a PNM whose pixels run past its end";
    o->h = h;
    o->w = w;
    o->row = w * o->bpp;
    o->px = d + i;
    o->bgr = false;
    return NULL;
}

static lt_status image_decoder(lt_kctx *k)
{
    const lt_tensor *e = lt_k_in(k, 0);
    if (!e || e->dtype != LT_U8 || e->rank != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "encoded_stream must be a 1-D uint8 tensor");
    const char *fmt = lt_attr_str(k->node, "pixel_format", "RGB");
    int ch = !strcmp(fmt, "Grayscale") ? 1 : 3;
    if (ch == 3 && strcmp(fmt, "RGB") && strcmp(fmt, "BGR"))
        return lt_k_fail(k, LT_ERR_RUNTIME, "pixel_format '%s' (expected RGB, BGR or Grayscale)", fmt);
    const uint8_t *d = e->data;
    size_t n = (size_t)e->numel;
    img im = {0};
    const char *why;
    if (n >= 2 && d[0] == 'B' && d[1] == 'M')
        why = bmp(d, n, &im);
    else if (n >= 2 && d[0] == 'P' && (d[1] == '5' || d[1] == '6'))
        why = pnm(d, n, &im);
    else if (n >= 3 && d[0] == 0xff && d[1] == 0xd8)
        why = "JPEG";
    else if (n >= 4 && d[0] == 0x89 && d[1] == 'P' && d[2] == 'N' && d[3] == 'G')
        why = "PNG";
    else
        why = "in a format lantern does not know";
    if (why)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "the image is %s; lantern decodes uncompressed BMP and binary PNM only",
                         why);
    int64_t dims[3] = {im.h, im.w, ch};
    lt_tensor *y;
    lt_status st = lt_k_out(k, 0, LT_U8, 3, dims, &y);
    if (st != LT_OK)
        return st;
    uint8_t *out = y->data;
    bool want_bgr = !strcmp(fmt, "BGR");
    for (int64_t r = 0; r < im.h; r++) {
        const uint8_t *p = im.px + r * im.row;
        for (int64_t c = 0; c < im.w; c++, p += im.bpp) {
            uint8_t rgb[3];
            if (im.bpp == 1) {
                rgb[0] = rgb[1] = rgb[2] = p[0];
            } else {
                rgb[0] = p[im.bgr ? 2 : 0];
                rgb[1] = p[1];
                rgb[2] = p[im.bgr ? 0 : 2];
            }
            uint8_t *q = out + (r * im.w + c) * ch;
            if (ch == 1) /* ITU-R 601-2 luma, as PIL's convert("L") rounds it */
                q[0] = (uint8_t)((rgb[0] * 19595u + rgb[1] * 38470u + rgb[2] * 7471u + 0x8000u) >> 16);
            else if (want_bgr) {
                q[0] = rgb[2];
                q[1] = rgb[1];
                q[2] = rgb[0];
            } else {
                memcpy(q, rgb, 3);
            }
        }
    }
    return LT_OK;
}

void lt_cpu_register_image_decoder(lt_kernel_fn *tab) { tab[LT_OP_IMAGE_DECODER] = image_decoder; }
