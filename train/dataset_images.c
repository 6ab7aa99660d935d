/* Image folders: images=DIR[,TEST_DIR], one subfolder per class, as
 * torchvision's ImageFolder lays them out. The class folders sorted by name
 * (bytewise) are the labels 0, 1, ...; the test split's class folders take
 * the training split's numbers (one the training split lacks is refused).
 * Without TEST_DIR, a DIR holding folders train and test is the two splits.
 * Files whose names end in an image extension (.png .jpg .jpeg .bmp .ppm
 * .pgm .pnm .tif .tiff .webp .jp2, any case) are decoded by
 * lt_image_decode (importer/image_decode.h); other files and hidden entries
 * are skipped, as ImageFolder skips them. Every image must have the first
 * one's size (nothing is resized). The samples are bytes [C,H,W], channels
 * first: C is opts->channels (1: grey, PIL's luma; 3: RGB, grey images
 * repeated), or when 0, 3 if any image has colour and 1 otherwise. The
 * dataset scales them to [0,1] and then applies --mean/--std. */
#include "dataset_impl.h"
#include "../importer/image_decode.h"
#include <ctype.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IMG_MAX_FILE ((size_t)256 << 20)

typedef struct str_list {
    char **s;
    int64_t n, cap;
} str_list;

static void list_free(str_list *l)
{
    for (int64_t i = 0; i < l->n; i++)
        free(l->s[i]);
    free(l->s);
    memset(l, 0, sizeof *l);
}

static bool list_add(str_list *l, const char *s)
{
    if (l->n == l->cap) {
        int64_t cap = l->cap ? 2 * l->cap : 64;
        char **g = realloc(l->s, sizeof *g * (size_t)cap);
        if (!g)
            return false;
        l->s = g;
        l->cap = cap;
    }
    return (l->s[l->n] = strdup(s)) && ++l->n;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool image_name(const char *name)
{
    static const char *const ext[] = {".png", ".jpg", ".jpeg", ".bmp", ".ppm", ".pgm", ".pnm", ".tif", ".tiff",
                                      ".webp", ".jp2"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof ext / sizeof *ext; i++) {
        size_t k = strlen(ext[i]);
        if (n > k && !strcasecmp(name + n - k, ext[i]))
            return true;
    }
    return false;
}

static lt_status list_dir(const char *dir, bool dirs, str_list *out, lt_err *err);

/* The image files under dir/rel ("" for dir itself) and the folders in it,
 * as paths relative to dir: a folder's own files (sorted), then each
 * subfolder's (sorted), as torchvision's ImageFolder walks a class. */
static lt_status collect_images(const char *dir, const char *rel, int depth, str_list *out, lt_err *err)
{
    char here[8192];
    if (snprintf(here, sizeof here, "%s%s%s", dir, *rel ? "/" : "", rel) >= (int)sizeof here)
        return lt_errf(err, LT_ERR_INVALID, "%s: path too long", dir);
    if (depth > 16)
        return lt_errf(err, LT_ERR_INVALID, "%s: folders nested more than 16 deep (a link to a folder above?)", here);
    str_list files = {0}, subs = {0};
    lt_status s = list_dir(here, false, &files, err);
    for (int64_t i = 0; s == LT_OK && i < files.n; i++) {
        char f[8192];
        snprintf(f, sizeof f, "%s%s%s", rel, *rel ? "/" : "", files.s[i]);
        if (!list_add(out, f))
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    list_free(&files);
    if (s == LT_OK)
        s = list_dir(here, true, &subs, err);
    for (int64_t i = 0; s == LT_OK && i < subs.n; i++) {
        char r[8192];
        if (snprintf(r, sizeof r, "%s%s%s", rel, *rel ? "/" : "", subs.s[i]) >= (int)sizeof r)
            s = lt_errf(err, LT_ERR_INVALID, "%s: path too long", here);
        else
            s = collect_images(dir, r, depth + 1, out, err);
    }
    list_free(&subs);
    return s;
}

/* The entries of dir (hidden ones skipped), sorted: folders when dirs,
 * else image files. */
static lt_status list_dir(const char *dir, bool dirs, str_list *out, lt_err *err)
{
    memset(out, 0, sizeof *out);
    DIR *d = opendir(dir);
    if (!d)
        return lt_errf(err, LT_ERR_IO, "%s: cannot read the folder", dir);
    struct dirent *e;
    lt_status s = LT_OK;
    char path[8192];
    while (s == LT_OK && (e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path) {
            s = lt_errf(err, LT_ERR_INVALID, "%s: path too long", dir);
            break;
        }
        bool folder = is_dir(path);
        if (dirs ? !folder : folder || !image_name(e->d_name))
            continue;
        if (!list_add(out, e->d_name))
            s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    closedir(d);
    if (s != LT_OK) {
        list_free(out);
        return s;
    }
    if (out->n > 1)
        qsort(out->s, (size_t)out->n, sizeof *out->s, by_name);
    return LT_OK;
}

/* "DIR[,TEST_DIR]": the split's folder into buf; the layout DIR/train,
 * DIR/test when no TEST_DIR is given and both are folders. */
static lt_status split_dir(const char *arg, int split, char *buf, size_t len, lt_err *err)
{
    const char *comma = strchr(arg, ',');
    if (comma && strchr(comma + 1, ','))
        return lt_errf(err, LT_ERR_INVALID, "images=%s: give images=DIR or images=DIR,TEST_DIR", arg);
    size_t n0 = comma ? (size_t)(comma - arg) : strlen(arg);
    if (n0 == 0 || (comma && !comma[1]))
        return lt_errf(err, LT_ERR_INVALID, "images=%s: give images=DIR or images=DIR,TEST_DIR", arg);
    if (n0 + 8 >= len || (comma && strlen(comma + 1) >= len))
        return lt_errf(err, LT_ERR_INVALID, "images=%s: path too long", arg);
    if (comma) {
        snprintf(buf, len, "%.*s", (int)(split ? strlen(comma + 1) : n0), split ? comma + 1 : arg);
        return LT_OK;
    }
    char tr[4096], te[4096];
    snprintf(tr, sizeof tr, "%.*s/train", (int)n0, arg);
    snprintf(te, sizeof te, "%.*s/test", (int)n0, arg);
    if (is_dir(tr) && is_dir(te)) {
        snprintf(buf, len, "%s", split ? te : tr);
        return LT_OK;
    }
    if (split)
        return lt_errf(err, LT_ERR_INVALID, "images=%s: no test split (images=DIR,TEST_DIR, or DIR/train and DIR/test)",
                       arg);
    snprintf(buf, len, "%s", arg);
    return LT_OK;
}

int lt_ds_has_images(const char *arg, int split)
{
    char dir[4096];
    lt_err err;
    /* a test folder the spec names (DIR,TEST_DIR) counts even when missing:
     * opening it says why */
    return split_dir(arg, split, dir, sizeof dir, &err) == LT_OK && (is_dir(dir) || (split && strchr(arg, ',')));
}

/* one image file into im, as fmt */
static lt_status decode_file(const char *path, lt_pixel_format fmt, lt_image *im, lt_err *err)
{
    uint8_t *data = NULL;
    size_t len = 0;
    lt_status s = lt_read_file(path, IMG_MAX_FILE, &data, &len, err);
    if (s != LT_OK)
        return s;
    lt_err e2;
    s = lt_image_decode(data, len, fmt, im, &e2);
    if (s != LT_OK)
        lt_errf(err, s, "%s: %s", path, e2.msg);
    free(data);
    return s;
}

static bool has_colour(const lt_image *im)
{
    const uint8_t *p = im->px;
    for (int64_t i = 0; i < im->h * im->w; i++, p += 3)
        if (p[0] != p[1] || p[1] != p[2])
            return true;
    return false;
}

lt_status lt_ds_open_images(lt_dataset *d, const char *arg, int split, const lt_dataset_opts *o, lt_err *err)
{
    char dir[4096], train_dir[4096];
    lt_status s = split_dir(arg, split, dir, sizeof dir, err);
    if (s == LT_OK)
        s = split_dir(arg, 0, train_dir, sizeof train_dir, err);
    if (s != LT_OK)
        return s;
    int want_c = o ? o->channels : 0;
    if (want_c != 0 && want_c != 1 && want_c != 3)
        return lt_errf(err, LT_ERR_INVALID, "images=%s: %d channels asked for; image folders give 1 (grey) or 3 (RGB)",
                       arg, want_c);
    str_list classes, test_classes = {0}, files = {0};
    s = list_dir(train_dir, true, &classes, err);
    if (s != LT_OK)
        return s;
    if (classes.n == 0) {
        list_free(&classes);
        return lt_errf(err, LT_ERR_INVALID, "%s: no class folders (images=DIR wants DIR/<class>/<image> files)",
                       train_dir);
    }
    const str_list *cl = &classes;
    if (split) {
        s = list_dir(dir, true, &test_classes, err);
        cl = &test_classes;
        if (s == LT_OK && test_classes.n == 0)
            s = lt_errf(err, LT_ERR_INVALID, "%s: no class folders (images=DIR wants DIR/<class>/<image> files)", dir);
    }
    /* every file and its label */
    int64_t *label = NULL, lcap = 0;
    char path[8192];
    for (int64_t c = 0; s == LT_OK && c < cl->n; c++) {
        int64_t id = c;
        if (split) {
            char **hit = bsearch(&cl->s[c], classes.s, (size_t)classes.n, sizeof *classes.s, by_name);
            if (!hit) {
                s = lt_errf(err, LT_ERR_INVALID, "%s/%s: the training split (%s) has no class '%s'", dir, cl->s[c],
                            train_dir, cl->s[c]);
                break;
            }
            id = hit - classes.s;
        }
        snprintf(path, sizeof path, "%s/%s", dir, cl->s[c]);
        str_list in = {0};
        s = collect_images(path, "", 0, &in, err);
        if (s == LT_OK && in.n == 0)
            s = lt_errf(err, LT_ERR_INVALID, "%s: a class folder without images (.png, .jpg, ...)", path);
        for (int64_t i = 0; s == LT_OK && i < in.n; i++) {
            char file[8192];
            snprintf(file, sizeof file, "%s/%s", cl->s[c], in.s[i]);
            if (!list_add(&files, file)) {
                s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
                break;
            }
            if (files.n > lcap) {
                lcap = files.cap;
                int64_t *g = realloc(label, sizeof *g * (size_t)lcap);
                if (!g) {
                    s = lt_errf(err, LT_ERR_NOMEM, "out of memory");
                    break;
                }
                label = g;
            }
            label[files.n - 1] = id;
        }
        list_free(&in);
    }
    /* decode: the first image fixes the size */
    int64_t H = 0, W = 0, n = files.n;
    int C = want_c ? want_c : 3;
    bool colour = false;
    char first[8192] = "";
    for (int64_t i = 0; s == LT_OK && i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files.s[i]);
        lt_image im;
        s = decode_file(path, C == 1 ? LT_PIXELS_GRAY : LT_PIXELS_RGB, &im, err);
        if (s != LT_OK)
            break;
        if (i == 0) {
            H = im.h;
            W = im.w;
            snprintf(first, sizeof first, "%s", path);
            size_t bytes = (size_t)(n * C * H * W);
            if (!(d->xu8 = malloc(bytes ? bytes : 1)))
                s = lt_errf(err, LT_ERR_NOMEM, "%s: out of memory for %lld images of %lldx%lld", dir, (long long)n,
                            (long long)W, (long long)H);
        } else if (im.h != H || im.w != W) {
            s = lt_errf(err, LT_ERR_INVALID, "%s is %lldx%lld, but %s is %lldx%lld: the images of a folder dataset "
                        "must share one size (lantern does not resize them)", path, (long long)im.w, (long long)im.h,
                        first, (long long)W, (long long)H);
        }
        if (s == LT_OK) {
            /* interleaved to channels first */
            uint8_t *dst = d->xu8 + i * C * H * W;
            for (int c = 0; c < C; c++)
                for (int64_t p = 0; p < H * W; p++)
                    dst[c * H * W + p] = im.px[p * im.channels + c];
            colour = colour || (C == 3 && !want_c && has_colour(&im));
        }
        lt_image_free(&im);
    }
    if (s == LT_OK && !want_c && !colour) {
        /* all grey: one channel (the first of three equal ones) */
        C = 1;
        for (int64_t i = 0; i < n; i++)
            memmove(d->xu8 + i * H * W, d->xu8 + i * 3 * H * W, (size_t)(H * W));
    }
    if (s == LT_OK) {
        d->n = n;
        d->rank = 3;
        d->channels_first = 1;
        d->dims[0] = C;
        d->dims[1] = H;
        d->dims[2] = W;
        d->numel = C * H * W;
        d->classes = 1;
        d->cls = label;
        label = NULL;
        d->num_classes = classes.n;
        d->class_names = classes.s; /* the training split's, taken over */
        classes.s = NULL;
        classes.n = 0;
    }
    free(label);
    list_free(&files);
    list_free(&classes);
    list_free(&test_classes);
    return s;
}
