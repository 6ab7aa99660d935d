/* CPU kernel: ImageDecoder (opset 20): the encoded stream decoded by
 * importer/image_decode.c (BMP, PNM, JPEG, PNG, WebP, TIFF, JPEG 2000) into
 * an H x W x C uint8 tensor in the pixel format asked for. */
#include "../runtime.h"
#include "../../importer/image_decode.h"
#include <string.h>

static lt_status image_decoder(lt_kctx *k)
{
    const lt_tensor *e = lt_k_in(k, 0);
    if (!e || e->dtype != LT_U8 || e->rank != 1)
        return lt_k_fail(k, LT_ERR_RUNTIME, "encoded_stream must be a 1-D uint8 tensor");
    const char *fmt = lt_attr_str(k->node, "pixel_format", "RGB");
    lt_pixel_format pf;
    if (!strcmp(fmt, "RGB"))
        pf = LT_PIXELS_RGB;
    else if (!strcmp(fmt, "BGR"))
        pf = LT_PIXELS_BGR;
    else if (!strcmp(fmt, "Grayscale"))
        pf = LT_PIXELS_GRAY;
    else
        return lt_k_fail(k, LT_ERR_RUNTIME, "pixel_format '%s' (expected RGB, BGR or Grayscale)", fmt);
    lt_image im;
    lt_err ierr = {0};
    lt_status st = lt_image_decode(e->data, (size_t)e->numel, pf, &im, &ierr);
    if (st != LT_OK)
        return lt_k_fail(k, st, "the encoded image is %s", ierr.msg);
    int64_t dims[3] = {im.h, im.w, im.channels};
    lt_tensor *y;
    st = lt_k_out(k, 0, LT_U8, 3, dims, &y);
    if (st == LT_OK)
        memcpy(y->data, im.px, (size_t)(im.h * im.w * im.channels));
    lt_image_free(&im);
    return st;
}

void lt_cpu_register_image_decoder(lt_kernel_fn *tab) { tab[LT_OP_IMAGE_DECODER] = image_decoder; }
