/* lt_image_decode against PIL: the images in tests/data/images (every format
 * ImageDecoder takes, with grey, palette, alpha, interlaced, progressive and
 * compressed variants) decoded as RGB, BGR and grey must equal the pixels
 * Debian's python3-pil gave for them (make_images.py). Every truncation and
 * random corruption of each file must be an error or the right pixels:
 * never a crash or a silent wrong image. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "importer/image_decode.h"

#define DIR LT_SOURCE_DIR "/tests/data/images/"

static uint8_t *slurp(const char *name, size_t *n)
{
    char path[512];
    snprintf(path, sizeof path, DIR "%s", name);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *d = malloc((size_t)len + 1);
    assert_non_null(d);
    assert_int_equal(fread(d, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return d;
}

typedef struct ref {
    char name[64];
    int64_t h, w;
    uint8_t *file, *rgb, *gray;
    size_t n;
} ref;

static int load_refs(ref *r, int max)
{
    size_t mn;
    char *man = (char *)slurp("manifest.txt", &mn);
    man[mn] = 0;
    int k = 0;
    for (char *line = strtok(man, "\n"); line && k < max; line = strtok(NULL, "\n")) {
        long long h, w;
        assert_int_equal(sscanf(line, "%63s %lld %lld", r[k].name, &h, &w), 3);
        r[k].h = h;
        r[k].w = w;
        r[k].file = slurp(r[k].name, &r[k].n);
        char stem[80], p[96];
        snprintf(stem, sizeof stem, "%s", r[k].name);
        *strchr(stem, '.') = '_';
        size_t n1, n2;
        snprintf(p, sizeof p, "%s.rgb", stem);
        r[k].rgb = slurp(p, &n1);
        snprintf(p, sizeof p, "%s.gray", stem);
        r[k].gray = slurp(p, &n2);
        assert_int_equal(n1, (size_t)(h * w * 3));
        assert_int_equal(n2, (size_t)(h * w));
        k++;
    }
    free(man);
    return k;
}

static void free_refs(ref *r, int k)
{
    for (int i = 0; i < k; i++) {
        free(r[i].file);
        free(r[i].rgb);
        free(r[i].gray);
    }
}

/* the decoded image equals PIL's in the given pixel format */
static bool same(const ref *r, lt_pixel_format fmt, const lt_image *im)
{
    int ch = fmt == LT_PIXELS_GRAY ? 1 : 3;
    if (im->h != r->h || im->w != r->w || im->channels != ch)
        return false;
    for (int64_t i = 0; i < r->h * r->w; i++) {
        if (ch == 1 && im->px[i] != r->gray[i])
            return false;
        for (int c = 0; ch == 3 && c < 3; c++)
            if (im->px[3 * i + c] != r->rgb[3 * i + (fmt == LT_PIXELS_BGR ? 2 - c : c)])
                return false;
    }
    return true;
}

static void decode_vs_pil(void **state)
{
    ref r[32];
    int k = load_refs(r, 32);
    assert_true(k >= 17);
    for (int i = 0; i < k; i++) {
        for (int f = 0; f < 3; f++) {
            lt_image im;
            lt_err err = {0};
            lt_status st = lt_image_decode(r[i].file, r[i].n, (lt_pixel_format)f, &im, &err);
            if (st != LT_OK)
                fail_msg("%s: %s", r[i].name, err.msg);
            if (!same(&r[i], (lt_pixel_format)f, &im))
                fail_msg("%s (pixel format %d): pixels differ from PIL's", r[i].name, f);
            lt_image_free(&im);
        }
    }
    free_refs(r, k);
}

/* a decode of damaged bytes: an error with a message, or exactly the image */
static void damaged(const ref *r, const uint8_t *d, size_t n, const char *what, size_t at)
{
    lt_image im;
    lt_err err = {0};
    lt_status st = lt_image_decode(d, n, LT_PIXELS_RGB, &im, &err);
    if (st == LT_OK) {
        if (!same(r, LT_PIXELS_RGB, &im))
            fail_msg("%s %s at %zu: decoded to a wrong image without an error", r->name, what, at);
        lt_image_free(&im);
    } else {
        assert_true(st == LT_ERR_INVALID || st == LT_ERR_UNSUPPORTED);
        assert_true(err.msg[0] != 0);
    }
}

static void truncated_and_corrupt(void **state)
{
    ref r[32];
    int k = load_refs(r, 32);
    uint64_t seed = 0x1ea7u;
    for (int i = 0; i < k; i++) {
        uint8_t *copy = malloc(r[i].n);
        assert_non_null(copy);
        for (size_t n = 0; n < r[i].n; n++) { /* each on its own allocation, so ASan sees an over-read */
            memcpy(copy, r[i].file, n);
            uint8_t *cut = malloc(n ? n : 1);
            memcpy(cut, copy, n);
            damaged(&r[i], cut, n, "cut", n);
            free(cut);
        }
        /* corruption can decode to other pixels legitimately (lossy data
         * has no checksum): only the absence of a crash is asserted here */
        for (int t = 0; t < 64; t++) {
            memcpy(copy, r[i].file, r[i].n);
            for (int b = 0; b < 3; b++) {
                seed = seed * 6364136223846793005ull + 1442695040888963407ull;
                copy[(seed >> 33) % r[i].n] ^= (uint8_t)(1u << ((seed >> 20) & 7));
            }
            lt_image im;
            lt_err err = {0};
            if (lt_image_decode(copy, r[i].n, LT_PIXELS_GRAY, &im, &err) == LT_OK) {
                assert_int_equal(im.channels, 1);
                lt_image_free(&im);
            } else {
                assert_true(err.msg[0] != 0);
            }
        }
        free(copy);
    }
    free_refs(r, k);
}

static void unknown_formats(void **state)
{
    lt_image im;
    lt_err err = {0};
    const uint8_t gif[] = "GIF89a\x01\x00\x01\x00";
    assert_int_equal(lt_image_decode(gif, sizeof gif, LT_PIXELS_RGB, &im, &err), LT_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "GIF"));
    const uint8_t junk[] = "not an image at all";
    assert_int_equal(lt_image_decode(junk, sizeof junk, LT_PIXELS_RGB, &im, &err), LT_ERR_UNSUPPORTED);
    assert_int_equal(lt_image_decode(junk, 0, LT_PIXELS_RGB, &im, &err), LT_ERR_UNSUPPORTED);
    assert_string_equal(lt_image_format((const uint8_t *)"\x89PNG\r\n\x1a\n", 8), "PNG");
    assert_null(lt_image_format(junk, 3));
    /* a PNG header claiming 2^20 x 2^20 pixels is refused before any allocation */
    size_t n;
    uint8_t *png = slurp("rgb.png", &n);
    png[16] = 0, png[17] = 0x10, png[18] = 0, png[19] = 0; /* width 2^20 */
    png[20] = 0, png[21] = 0x10, png[22] = 0, png[23] = 0; /* height 2^20 */
    assert_int_not_equal(lt_image_decode(png, n, LT_PIXELS_RGB, &im, &err), LT_OK);
    free(png);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decode_vs_pil),
        cmocka_unit_test(truncated_and_corrupt),
        cmocka_unit_test(unknown_formats),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
