/* Image folders (train/dataset_images.c): PNG and JPEG files written here
 * through libpng and libjpeg into DIR/<class>/ folders:
 * - the samples are the written bytes, channels first, scaled to [0,1]
 *   (PNG exactly; JPEG within its loss), labels the sorted class folders,
 *   the class names kept; grey from colour by PIL's integer luma;
 * - one channel when every image is grey and none is asked for, three when
 *   any has colour; the model's channel count wins in lantern train;
 * - DIR/train with DIR/test, or DIR,TEST_DIR, are the splits; test classes
 *   take the training numbers;
 * - images of another size, damaged files, empty class folders, unknown
 *   test classes are one line naming the file, exit 2;
 * - lantern train learns the colour classes (with --augment too). */
#include "test_dataset.h"
#include <jpeglib.h>
#include <png.h>
#include <sys/wait.h>

#define DATA LT_SOURCE_DIR "/tests/data/"
#define LANTERN LT_BINARY_DIR "/lantern"

/* rgb: h*w*ch interleaved bytes (ch 1 or 3) */
static void write_png(const char *path, const uint8_t *px, int w, int h, int ch)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    png_structp p = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(p);
    assert_non_null(p);
    assert_non_null(info);
    if (setjmp(png_jmpbuf(p)))
        fail_msg("libpng failed writing %s", path);
    png_init_io(p, f);
    png_set_IHDR(p, info, (png_uint_32)w, (png_uint_32)h, 8, ch == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_GRAY,
                 PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(p, info);
    for (int y = 0; y < h; y++)
        png_write_row(p, (png_const_bytep)(px + (size_t)y * w * ch));
    png_write_end(p, NULL);
    png_destroy_write_struct(&p, &info);
    assert_int_equal(fclose(f), 0);
}

static void write_jpeg(const char *path, const uint8_t *px, int w, int h)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    struct jpeg_compress_struct c;
    struct jpeg_error_mgr e;
    c.err = jpeg_std_error(&e);
    jpeg_create_compress(&c);
    jpeg_stdio_dest(&c, f);
    c.image_width = (JDIMENSION)w;
    c.image_height = (JDIMENSION)h;
    c.input_components = 3;
    c.in_color_space = JCS_RGB;
    jpeg_set_defaults(&c);
    jpeg_set_quality(&c, 98, TRUE);
    jpeg_start_compress(&c, TRUE);
    for (int y = 0; y < h; y++) {
        JSAMPROW row = (JSAMPROW)(px + (size_t)y * w * 3);
        jpeg_write_scanlines(&c, &row, 1);
    }
    jpeg_finish_compress(&c);
    jpeg_destroy_compress(&c);
    assert_int_equal(fclose(f), 0);
}

/* an 8x8 image of class k (0 blue, 1 green, 2 red: the colour that leads),
 * seeded noise on top */
static void class_image(int k, uint64_t *s, uint8_t *px)
{
    static const int lead[3] = {2, 1, 0}; /* blue, green, red as R,G,B indices */
    for (int p = 0; p < 64; p++)
        for (int c = 0; c < 3; c++)
            px[p * 3 + c] = (uint8_t)(c == lead[k] ? 150 + td_next(s) % 100 : 20 + td_next(s) % 90);
}

static void mkdirs(const char *a, const char *b, const char *c)
{
    char p[512];
    snprintf(p, sizeof p, "%s", a);
    mkdir(p, 0700);
    if (b) {
        snprintf(p, sizeof p, "%s/%s", a, b);
        mkdir(p, 0700);
    }
    if (b && c) {
        snprintf(p, sizeof p, "%s/%s/%s", a, b, c);
        mkdir(p, 0700);
    }
}

static const char *const class_dirs[3] = {"blue", "green", "red"};

/* root/<split>/<class>/i.png (or .jpg every third when jpeg) */
static void write_split(const char *root, const char *split, int per_class, uint64_t seed, bool jpeg)
{
    uint8_t px[64 * 3];
    for (int k = 0; k < 3; k++) {
        mkdirs(root, split, class_dirs[k]);
        for (int i = 0; i < per_class; i++) {
            char p[512];
            class_image(k, &seed, px);
            bool j = jpeg && i % 3 == 2;
            snprintf(p, sizeof p, "%s/%s/%s/%03d.%s", root, split, class_dirs[k], i, j ? "JPG" : "png");
            if (j)
                write_jpeg(p, px, 8, 8);
            else
                write_png(p, px, 8, 8, 3);
        }
    }
}

static lt_dataset *open_ch(const char *spec, int split, int channels)
{
    lt_dataset_opts o;
    memset(&o, 0, sizeof o);
    o.channels = channels;
    lt_dataset *d = NULL;
    lt_err err;
    if (lt_dataset_open_opts(spec, split, &o, &d, &err) != LT_OK)
        fail_msg("%s: %s", spec, err.msg);
    return d;
}

static void open_fails(const char *spec, int channels, const char *frag, const char *frag2)
{
    lt_dataset_opts o;
    memset(&o, 0, sizeof o);
    o.channels = channels;
    lt_dataset *d = (lt_dataset *)0x1;
    lt_err err;
    lt_status s = lt_dataset_open_opts(spec, 0, &o, &d, &err);
    if (s == LT_OK)
        fail_msg("%s opened", spec);
    assert_null(d);
    assert_null(strchr(err.msg, '\n'));
    if (!strstr(err.msg, frag) || (frag2 && !strstr(err.msg, frag2)))
        fail_msg("'%s' lacks '%s' or '%s'", err.msg, frag, frag2 ? frag2 : "");
}

static void gather_all(const lt_dataset *d, lt_tensor *x, lt_tensor *y)
{
    int64_t n = lt_dataset_size(d), *idx = malloc(sizeof *idx * (size_t)n);
    for (int64_t i = 0; i < n; i++)
        idx[i] = i;
    td_batch_tensors(d, n, x, y);
    lt_err err;
    assert_int_equal(lt_dataset_gather(d, idx, n, x, y, &err), LT_OK);
    free(idx);
}

static void pixels_and_labels(void **state)
{
    (void)state;
    char dir[64], spec[160];
    td_tmpdir(dir, sizeof dir);
    /* three classes of known pixels: PNG colour and grey, JPEG */
    mkdirs(dir, "b_cls", NULL);
    mkdirs(dir, "a_cls", NULL);
    uint8_t rgb[2][6 * 4 * 3], grey[6 * 4], jp[6 * 4 * 3];
    uint64_t s = 3;
    for (int i = 0; i < 2; i++)
        for (int k = 0; k < 72; k++)
            rgb[i][k] = (uint8_t)(td_next(&s) % 256);
    for (int k = 0; k < 24; k++)
        grey[k] = (uint8_t)(td_next(&s) % 256);
    for (int p = 0; p < 24; p++) /* smooth, so JPEG keeps it close */
        for (int c = 0; c < 3; c++)
            jp[p * 3 + c] = (uint8_t)(60 + 20 * c + 4 * (p % 6) + 3 * (p / 6));
    char p[256];
    snprintf(p, sizeof p, "%s/b_cls/2.png", dir);
    write_png(p, rgb[0], 6, 4, 3);
    snprintf(p, sizeof p, "%s/b_cls/10.png", dir); /* sorted by name: 10 before 2 */
    write_png(p, grey, 6, 4, 1);
    snprintf(p, sizeof p, "%s/a_cls/x.jpeg", dir);
    write_jpeg(p, jp, 6, 4);
    snprintf(p, sizeof p, "%s/a_cls/y.PNG", dir);
    write_png(p, rgb[1], 6, 4, 3);
    snprintf(p, sizeof p, "%s/a_cls/notes.txt", dir); /* skipped */
    td_write(p, "not an image", 12);
    snprintf(p, sizeof p, "%s/a_cls/.hidden.png", dir); /* skipped */
    td_write(p, "junk", 4);
    snprintf(p, sizeof p, "%s/stray.png", dir); /* not in a class folder: skipped */
    write_png(p, grey, 6, 4, 1);
    snprintf(spec, sizeof spec, "images=%s", dir);
    assert_int_equal(lt_dataset_has_split(spec, 0), 1);
    assert_int_equal(lt_dataset_has_split(spec, 1), 0);
    /* files in order: a_cls/x.jpeg, a_cls/y.PNG, b_cls/10.png, b_cls/2.png */
    const uint8_t *src[4] = {jp, rgb[1], NULL, rgb[0]};
    const int64_t want_y[4] = {0, 0, 1, 1};
    for (int ch = 0; ch < 2; ch++) {
        lt_dataset *d = open_ch(spec, 0, ch ? 1 : 3);
        assert_int_equal(lt_dataset_size(d), 4);
        int r;
        int64_t dims[LT_MAX_RANK];
        lt_dataset_sample_shape(d, &r, dims);
        assert_int_equal(r, 3);
        assert_int_equal(dims[0], ch ? 1 : 3);
        assert_int_equal(dims[1], 4);
        assert_int_equal(dims[2], 6);
        assert_int_equal(lt_dataset_num_classes(d), 2);
        assert_string_equal(lt_dataset_class_name(d, 0), "a_cls");
        assert_string_equal(lt_dataset_class_name(d, 1), "b_cls");
        assert_null(lt_dataset_class_name(d, 2));
        lt_tensor x, y;
        gather_all(d, &x, &y);
        assert_memory_equal(y.data, want_y, sizeof want_y);
        for (int i = 0; i < 4; i++)
            for (int c = 0; c < (ch ? 1 : 3); c++)
                for (int q = 0; q < 24; q++) {
                    double v;
                    if (!src[i])
                        v = grey[q];
                    else if (!ch)
                        v = src[i][q * 3 + c];
                    else /* PIL's convert("L"): ITU-R 601-2 luma in 16-bit fixed point */
                        v = (double)((src[i][q * 3] * 19595 + src[i][q * 3 + 1] * 38470 + src[i][q * 3 + 2] * 7471 +
                                      0x8000) >> 16);
                    float got = ((float *)x.data)[(i * (ch ? 1 : 3) + c) * 24 + q] * 255.0f;
                    double tol = i == 0 ? 6 : 1e-3; /* JPEG's loss */
                    if (fabs(got - v) > tol)
                        fail_msg("channels %d image %d c %d pixel %d: %g, want %g", ch ? 1 : 3, i, c, q, got, v);
                }
        free(x.data);
        free(y.data);
        lt_dataset_free(d);
    }
    /* nothing asked: colour, so three channels */
    lt_dataset *d = open_ch(spec, 0, 0);
    int r;
    int64_t dims[LT_MAX_RANK];
    lt_dataset_sample_shape(d, &r, dims);
    assert_int_equal(dims[0], 3);
    lt_dataset_free(d);
    /* grey images only: one channel, the grey values */
    snprintf(p, sizeof p, "%s/b_cls/2.png", dir);
    write_png(p, grey, 6, 4, 1);
    snprintf(p, sizeof p, "%s/a_cls/x.jpeg", dir);
    unlink(p);
    snprintf(p, sizeof p, "%s/a_cls/y.PNG", dir);
    uint8_t g3[72];
    for (int q = 0; q < 24; q++)
        g3[q * 3] = g3[q * 3 + 1] = g3[q * 3 + 2] = grey[23 - q];
    write_png(p, g3, 6, 4, 3); /* colour type RGB, grey content */
    d = open_ch(spec, 0, 0);
    lt_dataset_sample_shape(d, &r, dims);
    assert_int_equal(dims[0], 1);
    lt_tensor x, y;
    gather_all(d, &x, &y);
    for (int q = 0; q < 24; q++) {
        assert_true(((float *)x.data)[q] * 255.0f - grey[23 - q] < 1e-3f);
        assert_true(fabsf(((float *)x.data)[24 + q] * 255.0f - grey[q]) < 1e-3f);
    }
    free(x.data);
    free(y.data);
    lt_dataset_free(d);
    td_rmtree(dir);
}

static void splits_and_bad_folders(void **state)
{
    (void)state;
    char dir[64], spec[512], p[512], q[512];
    td_tmpdir(dir, sizeof dir);
    write_split(dir, "train", 2, 1, false);
    write_split(dir, "test", 1, 2, false);
    snprintf(p, sizeof p, "%s/test/blue", dir);
    td_rmtree(p); /* the test split lacks a class: its labels keep the training numbers */
    snprintf(spec, sizeof spec, "images=%s", dir);
    assert_int_equal(lt_dataset_has_split(spec, 1), 1);
    lt_dataset *d = open_ch(spec, 1, 3);
    assert_int_equal(lt_dataset_size(d), 2);
    assert_int_equal(lt_dataset_num_classes(d), 3);
    lt_tensor x, y;
    gather_all(d, &x, &y);
    assert_int_equal(((int64_t *)y.data)[0], 1);
    assert_int_equal(((int64_t *)y.data)[1], 2);
    free(x.data);
    free(y.data);
    lt_dataset_free(d);
    d = open_ch(spec, 0, 3);
    assert_int_equal(lt_dataset_size(d), 6);
    lt_dataset_free(d);
    /* DIR,TEST_DIR */
    snprintf(spec, sizeof spec, "images=%s/train,%s/test", dir, dir);
    d = open_ch(spec, 1, 3);
    assert_int_equal(lt_dataset_size(d), 2);
    lt_dataset_free(d);
    /* a test class the training split lacks */
    mkdirs(dir, "test", "purple");
    snprintf(p, sizeof p, "%s/test/purple/0.png", dir);
    uint8_t px[8 * 8 * 3] = {5};
    write_png(p, px, 8, 8, 3);
    lt_dataset_opts o;
    memset(&o, 0, sizeof o);
    lt_err err;
    td_fails(lt_dataset_open_opts(spec, 1, &o, &d, &err), LT_ERR_INVALID, &err, "purple", "has no class 'purple'",
             NULL);
    /* another size */
    snprintf(spec, sizeof spec, "images=%s/train", dir);
    snprintf(p, sizeof p, "%s/train/red/009.png", dir);
    write_png(p, px, 8, 6, 3);
    open_fails(spec, 3, "red/009.png is 8x6", "blue/000.png is 8x8");
    /* a damaged file */
    snprintf(q, sizeof q, "%s/train/red/009.png", dir);
    td_write(q, "\x89PNG\r\n\x1a\n\0\0\0\rIHDR", 16);
    open_fails(spec, 3, "red/009.png", "PNG");
    td_write(q, "GIF89a....", 10);
    open_fails(spec, 3, "red/009.png", "GIF");
    unlink(q);
    /* an empty class folder, a folder without classes, bad specs */
    mkdirs(dir, "train", "yellow");
    open_fails(spec, 3, "yellow", "without images");
    snprintf(p, sizeof p, "%s/train/yellow", dir);
    rmdir(p);
    open_fails(spec, 4, "4 channels", "1 (grey) or 3");
    snprintf(spec, sizeof spec, "images=%s/train/red", dir);
    open_fails(spec, 3, "no class folders", NULL);
    snprintf(spec, sizeof spec, "images=%s/none", dir);
    open_fails(spec, 3, "none", NULL);
    open_fails("images=a,b,c", 3, "images=DIR,TEST_DIR", NULL);
    open_fails("images=", 3, "images=DIR[,TEST_DIR]", NULL);
    td_rmtree(dir);
}

/* Images in folders inside a class folder belong to that class, as
 * torchvision's ImageFolder reads them: the folder's own files first, then
 * each subfolder's, in sorted order. */
static void nested_class_folders(void **state)
{
    (void)state;
    char dir[64], p[512], spec[600];
    td_tmpdir(dir, sizeof dir);
    uint8_t px[3][2 * 2];
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++)
            px[k][i] = (uint8_t)(40 * k + 10 * i);
    mkdirs(dir, "a", NULL);
    mkdirs(dir, "b", "deep");
    snprintf(p, sizeof p, "%s/b/deep/inner", dir);
    assert_int_equal(mkdir(p, 0777), 0);
    snprintf(p, sizeof p, "%s/a/0.png", dir);
    write_png(p, px[0], 2, 2, 1);
    snprintf(p, sizeof p, "%s/b/deep/inner/2.png", dir);
    write_png(p, px[2], 2, 2, 1);
    snprintf(p, sizeof p, "%s/b/1.png", dir);
    write_png(p, px[1], 2, 2, 1);
    snprintf(spec, sizeof spec, "images=%s", dir);
    lt_dataset *d = NULL;
    lt_err err;
    lt_dataset_opts o = {0};
    o.channels = 1;
    if (lt_dataset_open_opts(spec, 0, &o, &d, &err) != LT_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(lt_dataset_size(d), 3);
    lt_tensor x, y;
    gather_all(d, &x, &y);
    const int64_t want_y[3] = {0, 1, 1};
    assert_memory_equal(y.data, want_y, sizeof want_y);
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < 4; i++)
            assert_float_equal(((float *)x.data)[k * 4 + i], px[k][i] / 255.0f, 1e-7);
    lt_tensor_release(&x);
    lt_tensor_release(&y);
    lt_dataset_free(d);
    td_rmtree(dir);
}

static void cli_trains(void **state)
{
    (void)state;
    char dir[64], cmd[2048], out[16384], msg[4096];
    td_tmpdir(dir, sizeof dir);
    write_split(dir, "train", 40, 11, true);
    write_split(dir, "test", 10, 12, true);
    snprintf(cmd, sizeof cmd, "%s train %simg_rgb.onnx --data images=%s --epochs 6 --batch 8 --optimizer adam "
             "--lr 0.03 --augment flip,crop:2 -o %s/out.onnx", LANTERN, DATA, dir, dir);
    int rc = tu_sh(cmd, out, sizeof out, msg, sizeof msg);
    if (rc != 0)
        fail_msg("%s: exit %d: %s", cmd, rc, msg);
    const char *t = strstr(out, "test accuracy: ");
    double acc = t ? atof(t + 15) : -1;
    if (!(acc > 0.8))
        fail_msg("test accuracy %g on the colour classes:\n%s", acc, out);
    /* predict names the class folders */
    snprintf(cmd, sizeof cmd, "%s predict %s/out.onnx --data images=%s --count 3", LANTERN, dir, dir);
    assert_int_equal(tu_sh(cmd, out, sizeof out, msg, sizeof msg), 0);
    assert_non_null(strstr(out, "blue"));
    /* the grey model takes the colour images as luma */
    snprintf(cmd, sizeof cmd, "%s train %simg_gray.onnx --data images=%s --epochs 1 --batch 8 --loss nll "
             "--limit 16 -o %s/g.onnx", LANTERN, DATA, dir, dir);
    rc = tu_sh(cmd, out, sizeof out, msg, sizeof msg);
    /* three classes for a two-class output: refused, naming both */
    if (rc != 2 || !strstr(msg, "2 classes") || !strstr(msg, "3"))
        fail_msg("%s: exit %d: %s", cmd, rc, msg);
    char p[256];
    snprintf(p, sizeof p, "%s/train/red", dir);
    td_rmtree(p);
    snprintf(p, sizeof p, "%s/test/red", dir);
    td_rmtree(p);
    snprintf(cmd, sizeof cmd, "%s train %simg_gray.onnx --data images=%s --epochs 1 --batch 8 -o %s/g.onnx", LANTERN,
             DATA, dir, dir);
    rc = tu_sh(cmd, out, sizeof out, msg, sizeof msg);
    if (rc != 0)
        fail_msg("%s: exit %d: %s", cmd, rc, msg);
    /* a damaged image stops training with one line naming it */
    snprintf(p, sizeof p, "%s/train/green/005.png", dir);
    td_write(p, "\x89PNG\r\n\x1a\nxx", 10);
    rc = tu_sh(cmd, out, sizeof out, msg, sizeof msg);
    char *nl = strchr(msg, '\n');
    if (rc != 2 || !strstr(msg, "green/005.png") || !nl || nl[1])
        fail_msg("%s: exit %d: %s", cmd, rc, msg);
    td_rmtree(dir);
}

/* A model taking images channels last ([N,H,W,C], as Keras models do) is
 * fed the folder's images transposed: it trains as the channels-first
 * model of the same weights, with flips and per-channel normalisation, and
 * evaluates and predicts alike. */
static void channels_last_model(void **state)
{
    (void)state;
    char dir[64], spec[128];
    td_tmpdir(dir, sizeof dir);
    write_split(dir, "train", 16, 21, false);
    write_split(dir, "test", 4, 22, false);
    snprintf(spec, sizeof spec, "images=%s", dir);
    lt_model *m[2] = {NULL, NULL};
    const char *models[2] = {DATA "img_rgb.onnx", DATA "img_rgb_nhwc.onnx"};
    lt_err err;
    for (int k = 0; k < 2; k++) {
        lt_train_opts o;
        lt_train_defaults(&o);
        o.data = spec;
        o.batch = 8;
        o.epochs = 2;
        o.no_shuffle = 1;
        o.schedule.lr = 0.05;
        o.norm.nmean = o.norm.nstd = 3;
        for (int c = 0; c < 3; c++) {
            o.norm.mean[c] = 0.3 + 0.1 * c;
            o.norm.std[c] = 0.2 + 0.05 * c;
        }
        if (lt_train(models[k], &o, &m[k], &err) != LT_OK)
            fail_msg("%s: %s", models[k], err.msg);
    }
    const char *names[] = {"W", "B", "W2", "b2"};
    for (int i = 0; i < 4; i++) {
        const lt_tensor *a = tu_param(m[0], names[i]), *b = tu_param(m[1], names[i]);
        for (int64_t j = 0; j < a->numel; j++)
            if (fabs(lt_tensor_get_f64(a, j) - lt_tensor_get_f64(b, j)) > 1e-6)
                fail_msg("%s[%lld]: %g channels first, %g channels last", names[i], (long long)j,
                         lt_tensor_get_f64(a, j), lt_tensor_get_f64(b, j));
    }
    lt_eval_opts eo = {spec, 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}, 0, 0, 0};
    lt_eval_result r[2];
    for (int k = 0; k < 2; k++)
        assert_int_equal(lt_model_evaluate(m[k], &eo, &r[k], &err), LT_OK);
    assert_int_equal(r[1].count, 12);
    assert_float_equal(r[0].loss, r[1].loss, 1e-6);
    assert_float_equal(r[0].accuracy, r[1].accuracy, 1e-12);
    lt_model_free(m[0]);
    lt_model_free(m[1]);
    td_rmtree(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pixels_and_labels),
        cmocka_unit_test(splits_and_bad_folders),
        cmocka_unit_test(nested_class_folders),
        cmocka_unit_test(cli_trains),
        cmocka_unit_test(channels_last_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
