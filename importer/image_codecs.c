/* The compressed image formats through their Debian libraries: JPEG
 * (libjpeg-turbo), PNG (libpng), WebP (libwebp), TIFF (libtiff) and JPEG 2000
 * (OpenJPEG), each read from memory into grey or RGB bytes. The libraries'
 * messages become the error's text and nothing is printed; a truncated
 * stream is an error, not rows of filler. */
#include "image_decode.h"
#include "../ir/ir.h"
#include <jpeglib.h>
#include <jerror.h>
#include <openjpeg.h>
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tiffio.h>
#include <webp/decode.h>

/* ---- JPEG ---- */
typedef struct jpeg_fail {
    struct jpeg_error_mgr mgr;
    jmp_buf jb;
    char msg[JMSG_LENGTH_MAX];
} jpeg_fail;

static void jpeg_exit(j_common_ptr c)
{
    jpeg_fail *f = (jpeg_fail *)c->err;
    c->err->format_message(c, f->msg);
    longjmp(f->jb, 1);
}

/* warnings are silent, except the data ending early: libjpeg would fill the
 * missing rows with grey */
static void jpeg_emit(j_common_ptr c, int level)
{
    if (level < 0 && c->err->msg_code == JWRN_JPEG_EOF)
        jpeg_exit(c);
}

typedef struct jpeg_state {
    struct jpeg_decompress_struct ci;
    jpeg_fail fail;
    lt_image_raw *o;
    JSAMPROW cmyk; /* one row of 4-byte pixels */
} jpeg_state;

/* everything that changes after setjmp lives in *s, not in this frame */
static lt_status jpeg_run(jpeg_state *s, const uint8_t *d, size_t n, lt_err *err)
{
    if (setjmp(s->fail.jb))
        return lt_errf(err, LT_ERR_INVALID, "a damaged JPEG: %s", s->fail.msg);
    jpeg_create_decompress(&s->ci);
    jpeg_mem_src(&s->ci, d, (unsigned long)n);
    jpeg_read_header(&s->ci, TRUE);
    bool cmyk = s->ci.jpeg_color_space == JCS_CMYK || s->ci.jpeg_color_space == JCS_YCCK;
    s->ci.out_color_space = cmyk ? JCS_CMYK : s->ci.num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_start_decompress(&s->ci);
    int bpp = s->ci.out_color_space == JCS_GRAYSCALE ? 1 : 3;
    lt_status st = lt_image_raw_alloc(s->o, s->ci.output_height, s->ci.output_width, bpp, "JPEG", err);
    if (st != LT_OK)
        return st;
    if (cmyk)
        s->cmyk = (*s->ci.mem->alloc_sarray)((j_common_ptr)&s->ci, JPOOL_IMAGE, s->ci.output_width * 4, 1)[0];
    bool inverted = s->ci.saw_Adobe_marker; /* Adobe writes CMYK with 0 meaning full ink */
    while (s->ci.output_scanline < s->ci.output_height) {
        uint8_t *q = s->o->px + (size_t)s->ci.output_scanline * s->ci.output_width * bpp;
        JSAMPROW row = cmyk ? s->cmyk : q;
        jpeg_read_scanlines(&s->ci, &row, 1);
        for (JDIMENSION x = 0; cmyk && x < s->ci.output_width; x++) {
            const uint8_t *p = s->cmyk + 4 * x;
            unsigned k = inverted ? p[3] : 255u - p[3];
            for (int c = 0; c < 3; c++) {
                unsigned v = inverted ? p[c] : 255u - p[c];
                q[3 * x + c] = (uint8_t)((v * k + 127) / 255);
            }
        }
    }
    jpeg_finish_decompress(&s->ci);
    return LT_OK;
}

lt_status lt_image_decode_jpeg(const uint8_t *d, size_t n, lt_image_raw *o, lt_err *err)
{
    jpeg_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.ci.err = jpeg_std_error(&s.fail.mgr);
    s.fail.mgr.error_exit = jpeg_exit;
    s.fail.mgr.emit_message = jpeg_emit;
    lt_status st = jpeg_run(&s, d, n, err);
    jpeg_destroy_decompress(&s.ci);
    if (st != LT_OK) {
        free(o->px);
        o->px = NULL;
    }
    return st;
}

/* ---- PNG ---- */
typedef struct png_state {
    const uint8_t *d;
    size_t n, at;
    char msg[256];
    png_structp png;
    png_infop info;
    png_bytep *rows;
    lt_image_raw *o;
} png_state;

static void png_fail(png_structp p, png_const_charp msg)
{
    png_state *s = png_get_error_ptr(p);
    snprintf(s->msg, sizeof s->msg, "%s", msg);
    png_longjmp(p, 1);
}

static void png_quiet(png_structp p, png_const_charp msg) { (void)p, (void)msg; }

static void png_src(png_structp p, png_bytep out, size_t len)
{
    png_state *s = png_get_io_ptr(p);
    if (len > s->n - s->at)
        png_error(p, "the data ends early");
    memcpy(out, s->d + s->at, len);
    s->at += len;
}

static lt_status png_run(png_state *s, lt_err *err)
{
    if (setjmp(png_jmpbuf(s->png)))
        return lt_errf(err, LT_ERR_INVALID, "a damaged PNG: %s", s->msg);
    png_set_read_fn(s->png, s, png_src);
    png_read_info(s->png, s->info);
    png_uint_32 w, h;
    int depth, type, interlace;
    png_get_IHDR(s->png, s->info, &w, &h, &depth, &type, &interlace, NULL, NULL);
    if (type == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(s->png);
    if ((type & ~PNG_COLOR_MASK_ALPHA) == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(s->png);
    if (depth == 16)
        png_set_strip_16(s->png); /* the high byte */
    if (type & PNG_COLOR_MASK_ALPHA)
        png_set_strip_alpha(s->png);
    png_set_interlace_handling(s->png);
    png_read_update_info(s->png, s->info);
    int bpp = png_get_channels(s->png, s->info);
    if (bpp != 1 && bpp != 3)
        return lt_errf(err, LT_ERR_INTERNAL, "a PNG decoded to %d channels", bpp);
    lt_status st = lt_image_raw_alloc(s->o, h, w, bpp, "PNG", err);
    if (st != LT_OK)
        return st;
    s->rows = malloc(sizeof *s->rows * h);
    if (!s->rows)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory decoding a PNG");
    for (png_uint_32 r = 0; r < h; r++)
        s->rows[r] = s->o->px + (size_t)r * w * bpp;
    png_read_image(s->png, s->rows);
    png_read_end(s->png, NULL);
    return LT_OK;
}

lt_status lt_image_decode_png(const uint8_t *d, size_t n, lt_image_raw *o, lt_err *err)
{
    png_state s = {.d = d, .n = n, .o = o};
    s.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &s, png_fail, png_quiet);
    s.info = s.png ? png_create_info_struct(s.png) : NULL;
    lt_status st = s.info ? png_run(&s, err) : lt_errf(err, LT_ERR_NOMEM, "out of memory decoding a PNG");
    png_destroy_read_struct(s.png ? &s.png : NULL, s.info ? &s.info : NULL, NULL);
    free(s.rows);
    if (st != LT_OK) {
        free(o->px);
        o->px = NULL;
    }
    return st;
}

/* ---- WebP ---- */
lt_status lt_image_decode_webp(const uint8_t *d, size_t n, lt_image_raw *o, lt_err *err)
{
    WebPBitstreamFeatures f;
    if (WebPGetFeatures(d, n, &f) != VP8_STATUS_OK)
        return lt_errf(err, LT_ERR_INVALID, "a damaged WebP (its headers do not parse)");
    if (f.has_animation)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "an animated WebP (lantern decodes still images)");
    lt_status st = lt_image_raw_alloc(o, f.height, f.width, 3, "WebP", err);
    if (st != LT_OK)
        return st;
    size_t bytes = (size_t)o->h * o->w * 3;
    if (!WebPDecodeRGBInto(d, n, o->px, bytes, (int)o->w * 3)) {
        free(o->px);
        o->px = NULL;
        return lt_errf(err, LT_ERR_INVALID, "a damaged or truncated WebP");
    }
    return LT_OK;
}

/* ---- TIFF ---- */
typedef struct tiff_src {
    const uint8_t *d;
    size_t n, at;
    char msg[256];
} tiff_src;

static tmsize_t tiff_read(thandle_t h, void *buf, tmsize_t len)
{
    tiff_src *s = h;
    size_t k = len < 0 ? 0 : (size_t)len;
    if (s->at >= s->n)
        return 0;
    if (k > s->n - s->at)
        k = s->n - s->at;
    memcpy(buf, s->d + s->at, k);
    s->at += k;
    return (tmsize_t)k;
}

static tmsize_t tiff_write(thandle_t h, void *buf, tmsize_t len) { return -1; }

static toff_t tiff_seek(thandle_t h, toff_t off, int whence)
{
    tiff_src *s = h;
    uint64_t base = whence == SEEK_CUR ? s->at : whence == SEEK_END ? s->n : 0;
    uint64_t at = base + off; /* toff_t is unsigned: a backwards seek wraps to a huge value */
    if (at > s->n)
        return (toff_t)-1;
    s->at = (size_t)at;
    return at;
}

static int tiff_close(thandle_t h) { return 0; }
static toff_t tiff_size(thandle_t h) { return ((tiff_src *)h)->n; }
static int tiff_map(thandle_t h, void **base, toff_t *size) { return 0; }
static void tiff_unmap(thandle_t h, void *base, toff_t size) {}

static int tiff_error(TIFF *t, void *user, const char *module, const char *fmt, va_list ap)
{
    tiff_src *s = user;
    if (!s->msg[0])
        vsnprintf(s->msg, sizeof s->msg, fmt, ap);
    return 1;
}

static int tiff_warning(TIFF *t, void *user, const char *module, const char *fmt, va_list ap) { return 1; }

lt_status lt_image_decode_tiff(const uint8_t *d, size_t n, lt_image_raw *o, lt_err *err)
{
    tiff_src s = {.d = d, .n = n};
    TIFFOpenOptions *opt = TIFFOpenOptionsAlloc();
    if (!opt)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory decoding a TIFF");
    TIFFOpenOptionsSetErrorHandlerExtR(opt, tiff_error, &s);
    TIFFOpenOptionsSetWarningHandlerExtR(opt, tiff_warning, &s);
    TIFFOpenOptionsSetMaxSingleMemAlloc(opt, (tmsize_t)4 * LT_IMAGE_MAX_PIXELS);
    TIFF *t = TIFFClientOpenExt("TIFF", "rm", &s, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size, tiff_map,
                                tiff_unmap, opt);
    TIFFOpenOptionsFree(opt);
    if (!t)
        return lt_errf(err, LT_ERR_INVALID, "a damaged TIFF: %s", s.msg[0] ? s.msg : "its header does not parse");
    uint32_t w = 0, h = 0, *raster = NULL;
    lt_status st = LT_OK;
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
    st = lt_image_raw_alloc(o, h, w, 3, "TIFF", err);
    if (st == LT_OK && !(raster = malloc(sizeof *raster * (size_t)w * h)))
        st = lt_errf(err, LT_ERR_NOMEM, "out of memory decoding a TIFF");
    /* the RGBA interface reads every photometric, depth and layout libtiff
     * knows, rows top first */
    if (st == LT_OK && !TIFFReadRGBAImageOriented(t, w, h, raster, ORIENTATION_TOPLEFT, 1))
        st = lt_errf(err, LT_ERR_INVALID, "a damaged TIFF: %s", s.msg[0] ? s.msg : "its pixels do not decode");
    for (size_t i = 0; st == LT_OK && i < (size_t)w * h; i++) {
        o->px[3 * i] = TIFFGetR(raster[i]);
        o->px[3 * i + 1] = TIFFGetG(raster[i]);
        o->px[3 * i + 2] = TIFFGetB(raster[i]);
    }
    free(raster);
    TIFFClose(t);
    if (st != LT_OK) {
        free(o->px);
        o->px = NULL;
    }
    return st;
}

/* ---- JPEG 2000 (a JP2 file or a bare codestream) ---- */
typedef struct jp2_src {
    const uint8_t *d;
    size_t n, at;
    char msg[256];
} jp2_src;

static OPJ_SIZE_T jp2_read(void *buf, OPJ_SIZE_T len, void *u)
{
    jp2_src *s = u;
    if (s->at >= s->n)
        return (OPJ_SIZE_T)-1;
    if (len > s->n - s->at)
        len = s->n - s->at;
    memcpy(buf, s->d + s->at, len);
    s->at += len;
    return len;
}

static OPJ_OFF_T jp2_skip(OPJ_OFF_T k, void *u)
{
    jp2_src *s = u;
    if (k < 0 ? (size_t)-k > s->at : (size_t)k > s->n - s->at)
        return -1;
    s->at += k;
    return k;
}

static OPJ_BOOL jp2_seek(OPJ_OFF_T k, void *u)
{
    jp2_src *s = u;
    if (k < 0 || (uint64_t)k > s->n)
        return OPJ_FALSE;
    s->at = (size_t)k;
    return OPJ_TRUE;
}

static void jp2_error(const char *msg, void *u)
{
    jp2_src *s = u;
    if (!s->msg[0]) {
        snprintf(s->msg, sizeof s->msg, "%s", msg);
        size_t l = strlen(s->msg);
        if (l && s->msg[l - 1] == '\n')
            s->msg[l - 1] = 0;
    }
}

static void jp2_quiet(const char *msg, void *u) { (void)msg, (void)u; }

/* one component's sample at (x, y) as 8 bits */
static uint8_t jp2_sample(const opj_image_comp_t *c, size_t i)
{
    int64_t v = c->data[i] + (c->sgnd ? (int64_t)1 << (c->prec - 1) : 0);
    if (c->prec > 8)
        v >>= c->prec - 8;
    else if (c->prec < 8)
        v = (v * 255 + (((int64_t)1 << c->prec) - 1) / 2) / (((int64_t)1 << c->prec) - 1);
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static lt_status jp2_pixels(const opj_image_t *im, lt_image_raw *o, lt_err *err)
{
    if (im->numcomps == 0 || im->color_space == OPJ_CLRSPC_SYCC || im->color_space == OPJ_CLRSPC_EYCC ||
        im->color_space == OPJ_CLRSPC_CMYK)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "a JPEG 2000 image in a colour space lantern does not convert "
                       "(it reads grey and RGB)");
    int bpp = im->numcomps >= 3 ? 3 : 1;
    const opj_image_comp_t *c0 = &im->comps[0];
    for (int c = 0; c < bpp; c++) {
        const opj_image_comp_t *c1 = &im->comps[c];
        if (c1->w != c0->w || c1->h != c0->h || !c1->data || c1->prec < 1 || c1->prec > 31)
            return lt_errf(err, LT_ERR_UNSUPPORTED, "a JPEG 2000 image with subsampled or unusual components");
    }
    lt_status st = lt_image_raw_alloc(o, c0->h, c0->w, bpp, "JPEG 2000", err);
    if (st != LT_OK)
        return st;
    size_t np = (size_t)o->h * o->w;
    for (size_t i = 0; i < np; i++)
        for (int c = 0; c < bpp; c++)
            o->px[i * bpp + c] = jp2_sample(&im->comps[c], i);
    return LT_OK;
}

lt_status lt_image_decode_jp2(const uint8_t *d, size_t n, lt_image_raw *o, lt_err *err)
{
    jp2_src s = {.d = d, .n = n};
    bool boxed = n >= 4 && memcmp(d, "\xff\x4f\xff\x51", 4) != 0;
    opj_codec_t *codec = opj_create_decompress(boxed ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
    opj_stream_t *in = opj_stream_create(OPJ_J2K_STREAM_CHUNK_SIZE, OPJ_TRUE);
    opj_image_t *im = NULL;
    lt_status st = LT_OK;
    if (!codec || !in) {
        st = lt_errf(err, LT_ERR_NOMEM, "out of memory decoding a JPEG 2000 image");
        goto done;
    }
    opj_set_error_handler(codec, jp2_error, &s);
    opj_set_warning_handler(codec, jp2_quiet, &s);
    opj_set_info_handler(codec, jp2_quiet, &s);
    opj_stream_set_user_data(in, &s, NULL);
    opj_stream_set_user_data_length(in, n);
    opj_stream_set_read_function(in, jp2_read);
    opj_stream_set_skip_function(in, jp2_skip);
    opj_stream_set_seek_function(in, jp2_seek);
    opj_dparameters_t prm;
    opj_set_default_decoder_parameters(&prm);
    if (!opj_setup_decoder(codec, &prm) || !opj_read_header(in, codec, &im)) {
        st = lt_errf(err, LT_ERR_INVALID, "a damaged JPEG 2000 image: %s", s.msg[0] ? s.msg : "bad header");
        goto done;
    }
    int64_t w = (int64_t)im->x1 - im->x0, h = (int64_t)im->y1 - im->y0;
    if (w <= 0 || h <= 0 || w * h > LT_IMAGE_MAX_PIXELS) {
        st = lt_errf(err, LT_ERR_UNSUPPORTED, "a JPEG 2000 image of %lld x %lld pixels (lantern decodes up to %lld)",
                     (long long)w, (long long)h, (long long)LT_IMAGE_MAX_PIXELS);
        goto done;
    }
    if (!opj_decode(codec, in, im) || !opj_end_decompress(codec, in)) {
        st = lt_errf(err, LT_ERR_INVALID, "a damaged JPEG 2000 image: %s", s.msg[0] ? s.msg : "it does not decode");
        goto done;
    }
    st = jp2_pixels(im, o, err);
done:
    if (im)
        opj_image_destroy(im);
    if (in)
        opj_stream_destroy(in);
    if (codec)
        opj_destroy_codec(codec);
    return st;
}
