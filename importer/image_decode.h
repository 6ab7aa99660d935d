/* Encoded images (BMP, PNM, JPEG, PNG, WebP, TIFF, JPEG 2000) to interleaved
 * 8-bit pixels, rows top first: what the ImageDecoder op and image datasets
 * share. The format is told by the bytes, never by a file name. */
#ifndef LT_IMAGE_DECODE_H
#define LT_IMAGE_DECODE_H

#include "lantern.h"
#include <stddef.h>
#include <stdint.h>

typedef enum lt_pixel_format {
    LT_PIXELS_RGB,  /* 3 channels, red first */
    LT_PIXELS_BGR,  /* 3 channels, blue first */
    LT_PIXELS_GRAY, /* 1 channel: ITU-R 601-2 luma of the colour image, as PIL's convert("L") rounds it */
} lt_pixel_format;

/* A decoded image: h * w * channels bytes at px (malloc'd; lt_image_free). */
typedef struct lt_image {
    int64_t h, w;
    int channels;
    uint8_t *px;
} lt_image;

/* The largest image decoded, in pixels (a hostile header cannot make
 * lantern allocate more than 3 bytes for each). */
#define LT_IMAGE_MAX_PIXELS ((int64_t)1 << 27)

/* Decodes bytes[0..n) into *out. Grey images give equal R, G and B; an
 * alpha channel is dropped (not composited), 16-bit samples keep their high
 * byte. Errors: LT_ERR_INVALID for a damaged or truncated image (the message
 * names the format and what is wrong), LT_ERR_UNSUPPORTED for a format or a
 * variant lantern does not decode, LT_ERR_NOMEM. *out is untouched on error. */
lt_status lt_image_decode(const uint8_t *bytes, size_t n, lt_pixel_format fmt, lt_image *out, lt_err *err);
void lt_image_free(lt_image *im);

/* The format's name from the first bytes ("JPEG", "PNG", ...), NULL when
 * none lantern knows. */
const char *lt_image_format(const uint8_t *bytes, size_t n);

/* ---- for the decoders (importer/image_codecs.c) ---- */
/* A decoder's result: h * w pixels of bpp bytes (1 grey, 3 RGB), malloc'd. */
typedef struct lt_image_raw {
    int64_t h, w;
    int bpp;
    uint8_t *px;
} lt_image_raw;
lt_status lt_image_decode_jpeg(const uint8_t *d, size_t n, lt_image_raw *o, lt_err *err);
lt_status lt_image_decode_png(const uint8_t *d, size_t n, lt_image_raw *o, lt_err *err);
lt_status lt_image_decode_webp(const uint8_t *d, size_t n, lt_image_raw *o, lt_err *err);
lt_status lt_image_decode_tiff(const uint8_t *d, size_t n, lt_image_raw *o, lt_err *err);
lt_status lt_image_decode_jp2(const uint8_t *d, size_t n, lt_image_raw *o, lt_err *err);
/* Checks h, w against LT_IMAGE_MAX_PIXELS and allocates o->px. */
lt_status lt_image_raw_alloc(lt_image_raw *o, int64_t h, int64_t w, int bpp, const char *what, lt_err *err);

#endif
