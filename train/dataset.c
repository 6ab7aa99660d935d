/* Datasets: spec parsing, normalisation, and the batch accessors every
 * format shares (the formats load in dataset_idx.c, dataset_cifar.c,
 * dataset_npz.c and dataset_pb.c). */
#include "dataset_impl.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LT_DEFAULT_FASHION_DIR "/usr/share/datasets/fashion-mnist"
/* below this many values a batch is converted on the calling thread alone:
 * waking the OpenMP team costs more than it saves */
#define LT_DS_PARALLEL_MIN ((int64_t)1 << 18)

typedef enum ds_kind { DS_FASHION, DS_MNIST, DS_CIFAR, DS_NPZ, DS_PB, DS_CSV, DS_NPY, DS_IMAGES } ds_kind;

static const struct {
    const char *name;
    ds_kind kind;
} ds_names[] = {
    {"fashion-mnist", DS_FASHION}, {"mnist", DS_MNIST}, {"cifar10", DS_CIFAR}, {"npz", DS_NPZ}, {"onnx-pb", DS_PB},
    {"csv", DS_CSV},         {"npy", DS_NPY},     {"images", DS_IMAGES},
};

/* what follows NAME= in messages */
static const char *spec_arg(ds_kind k)
{
    switch (k) {
    case DS_NPZ: return "FILE";
    case DS_CSV: return "TRAIN.csv[,TEST.csv]";
    case DS_NPY: return "X.npy,Y.npy[,X_TEST.npy,Y_TEST.npy]";
    case DS_IMAGES: return "DIR[,TEST_DIR]";
    default: return "DIR";
    }
}

/* Splits "NAME[=ARG]"; *arg points into spec, or at the default folder. */
static lt_status parse_spec(const char *spec, ds_kind *kind, const char **arg, lt_err *err)
{
    const char *eq = strchr(spec, '=');
    size_t nl = eq ? (size_t)(eq - spec) : strlen(spec);
    for (size_t i = 0; i < sizeof ds_names / sizeof ds_names[0]; i++) {
        if (strlen(ds_names[i].name) != nl || memcmp(spec, ds_names[i].name, nl) != 0)
            continue;
        *kind = ds_names[i].kind;
        if (eq && eq[1]) {
            *arg = eq + 1;
            return LT_OK;
        }
        if (*kind == DS_FASHION) {
            *arg = LT_DEFAULT_FASHION_DIR;
            return LT_OK;
        }
        return lt_errf(err, LT_ERR_INVALID, "dataset '%s' needs its data: %s=%s", ds_names[i].name, ds_names[i].name,
                       spec_arg(*kind));
    }
    return lt_errf(err, LT_ERR_INVALID,
                   "unknown dataset '%.*s' (known: fashion-mnist[=DIR], mnist=DIR, cifar10=DIR, npz=FILE, onnx-pb=DIR, "
                   "csv=FILE[,TEST], npy=X,Y[,X_TEST,Y_TEST], images=DIR[,TEST_DIR])",
                   (int)(nl > 200 ? 200 : nl), spec);
}

int lt_ds_file_exists(const char *path) { return access(path, R_OK) == 0; }

void lt_ds_shape_str(int rank, const int64_t *dims, char *buf, size_t len)
{
    if (rank == 0) {
        snprintf(buf, len, "scalars");
        return;
    }
    size_t at = 0;
    buf[0] = 0;
    for (int i = 0; i < rank && at < len; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%lld", i ? "x" : "", (long long)dims[i]);
}

/* Folds mean/std into the per-channel mul/add of byte samples, or applies
 * them once to float samples. */
static lt_status set_norm(lt_dataset *d, const lt_dataset_opts *o, const char *spec, lt_err *err)
{
    int nm = o ? o->nmean : 0, ns = o ? o->nstd : 0;
    int64_t chans = d->rank ? d->dims[0] : 1;
    char shp[128];
    lt_ds_shape_str(d->rank, d->dims, shp, sizeof shp);
    for (int k = 0; k < 2; k++) {
        int cnt = k ? ns : nm;
        const char *what = k ? "std" : "mean";
        if (cnt < 0 || cnt > LT_DS_MAX_CH)
            return lt_errf(err, LT_ERR_INVALID, "%s: %d %s values given; at most %d are accepted", spec, cnt, what,
                           LT_DS_MAX_CH);
        if (cnt > 1 && d->rank == 0)
            return lt_errf(err, LT_ERR_INVALID, "%s: %d %s values given, the samples are scalars; give 1", spec, cnt,
                           what);
        if (cnt > 1 && cnt != chans)
            return lt_errf(err, LT_ERR_INVALID,
                           "%s: %d %s values given, the samples (%s) have %lld channels (their first dim); "
                           "give 1 or %lld",
                           spec, cnt, what, shp, (long long)chans, (long long)chans);
    }
    d->nch = nm > 1 || ns > 1 ? (int)chans : 1;
    d->ch_len = d->nch > 1 ? d->numel / d->nch : d->numel;
    double mean[LT_DS_MAX_CH], sd[LT_DS_MAX_CH];
    for (int c = 0; c < d->nch; c++) {
        mean[c] = nm ? o->mean[nm == 1 ? 0 : c] : 0.0;
        sd[c] = ns ? o->std[ns == 1 ? 0 : c] : 1.0;
        if (!(sd[c] > 0) || !isfinite(sd[c]) || !isfinite(mean[c]))
            return lt_errf(err, LT_ERR_INVALID, "%s: channel %d has mean %g, std %g: both must be finite, std > 0",
                           spec, c, mean[c], sd[c]);
        d->mul[c] = d->xu8 ? (float)(1.0 / (255.0 * sd[c])) : 1.0f;
        d->add[c] = d->xu8 ? (float)(-mean[c] / sd[c]) : 0.0f;
        d->zero[c] = d->xu8 ? d->add[c] : (float)-mean[c] / (float)sd[c];
    }
    if (d->xu8 && !nm && !ns)
        d->mul[0] = 1.0f / 255.0f; /* exactly the plain scale */
    if (d->xu8 || (!nm && !ns))
        return LT_OK;
    int64_t total = d->n * d->nch;
#pragma omp parallel for schedule(static) if (d->n * d->numel >= LT_DS_PARALLEL_MIN)
    for (int64_t k = 0; k < total; k++) {
        int c = (int)(k % d->nch);
        float m = (float)mean[c], s = (float)sd[c];
        float *p = d->xf + k * d->ch_len;
        for (int64_t j = 0; j < d->ch_len; j++)
            p[j] = (p[j] - m) / s;
    }
    return LT_OK;
}

lt_status lt_dataset_open_opts(const char *spec, int split, const lt_dataset_opts *opts, lt_dataset **out,
                               lt_err *err)
{
    if (!spec || !out)
        return lt_errf(err, LT_ERR_INVALID, "lt_dataset_open: %s is NULL", !spec ? "the dataset spec" : "out");
    *out = NULL;
    ds_kind kind;
    const char *arg;
    lt_status s = parse_spec(spec, &kind, &arg, err);
    if (s != LT_OK)
        return s;
    if (split != 0 && split != 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: split %d (0 = train, 1 = test)", spec, split);
    lt_dataset *d = calloc(1, sizeof *d);
    if (!d)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    d->neg_sample = -1;
    switch (kind) {
    case DS_FASHION:
    case DS_MNIST:
        s = lt_ds_open_idx(d, arg, split, err);
        break;
    case DS_CIFAR:
        s = lt_ds_open_cifar(d, arg, split, err);
        break;
    case DS_NPZ:
        s = lt_ds_open_npz(d, arg, split, err);
        break;
    case DS_PB:
        s = lt_ds_open_pb(d, arg, split, err);
        break;
    case DS_CSV:
        s = lt_ds_open_csv(d, arg, split, opts, err);
        break;
    case DS_NPY:
        s = lt_ds_open_npy(d, arg, split, err);
        break;
    case DS_IMAGES:
        s = lt_ds_open_images(d, arg, split, opts, err);
        break;
    }
    if (d->classes) { /* one class index per sample */
        d->trank = 0;
        d->tnumel = 1;
    }
    if (s == LT_OK)
        s = set_norm(d, opts, spec, err);
    if (s != LT_OK) {
        lt_dataset_free(d);
        return s;
    }
    *out = d;
    return LT_OK;
}

lt_status lt_dataset_open(const char *spec, int split, lt_dataset **out, lt_err *err)
{
    return lt_dataset_open_opts(spec, split, NULL, out, err);
}

/* A caller's array: its numel is what its dims hold (the copy reads numel
 * elements into room for the dims' count). */
static lt_status check_array(const lt_tensor *t, const char *name, lt_err *err)
{
    if (t->rank < 0 || t->rank > LT_MAX_RANK)
        return lt_errf(err, LT_ERR_INVALID, "lt_dataset_from_arrays: %s has rank %d (0..%d)", name, t->rank,
                       LT_MAX_RANK);
    int64_t n = lt_shape_numel(t->rank, t->dims);
    if (n != t->numel) {
        char shp[160];
        lt_ds_shape_str(t->rank, t->dims, shp, sizeof shp);
        if (n < 0)
            return lt_errf(err, LT_ERR_INVALID, "lt_dataset_from_arrays: %s's dims %s overflow or hold a negative "
                           "size", name, shp);
        return lt_errf(err, LT_ERR_INVALID, "lt_dataset_from_arrays: %s's numel is %lld but its dims %s hold %lld "
                       "elements", name, (long long)t->numel, shp, (long long)n);
    }
    return LT_OK;
}

lt_status lt_dataset_from_arrays(const lt_tensor *x, const lt_tensor *y, const lt_dataset_opts *opts,
                                 lt_dataset **out, lt_err *err)
{
    if (!out)
        return lt_errf(err, LT_ERR_INVALID, "lt_dataset_from_arrays: out is NULL");
    *out = NULL;
    if (!x || !y || !x->data || !y->data)
        return lt_errf(err, LT_ERR_INVALID, "lt_dataset_from_arrays needs samples and labels or targets");
    lt_status s = check_array(x, "x", err);
    if (s == LT_OK)
        s = check_array(y, "y", err);
    if (s != LT_OK)
        return s;
    lt_dataset *d = calloc(1, sizeof *d);
    if (!d)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    s = lt_ds_from_arrays(d, x, y, NULL, "x", "y", err);
    if (d->classes) { /* one class index per sample */
        d->trank = 0;
        d->tnumel = 1;
    }
    if (s == LT_OK)
        s = set_norm(d, opts, "arrays", err);
    if (s != LT_OK) {
        lt_dataset_free(d);
        return s;
    }
    *out = d;
    return LT_OK;
}

int lt_dataset_has_split(const char *spec, int split)
{
    ds_kind kind;
    const char *arg;
    lt_err err;
    if (!spec || parse_spec(spec, &kind, &arg, &err) != LT_OK || (split != 0 && split != 1))
        return 0;
    switch (kind) {
    case DS_FASHION:
    case DS_MNIST:
        return lt_ds_has_idx(arg, split);
    case DS_CIFAR:
        return lt_ds_has_cifar(arg, split);
    case DS_NPZ:
        return lt_ds_has_npz(arg, split);
    case DS_PB:
        return lt_ds_has_pb(arg, split);
    case DS_CSV:
        return lt_ds_has_csv(arg, split);
    case DS_NPY:
        return lt_ds_has_npy(arg, split);
    case DS_IMAGES:
        return lt_ds_has_images(arg, split);
    }
    return 0;
}

void lt_dataset_free(lt_dataset *d)
{
    if (!d)
        return;
    free(d->xu8);
    free(d->xf);
    free(d->cls);
    free(d->tgt);
    for (int64_t c = 0; d->class_names && c < d->num_classes; c++)
        free(d->class_names[c]);
    free(d->class_names);
    free(d->label_src);
    free(d);
}

bool lt_ds_negative_label(const lt_dataset *d, int64_t except, int64_t *sample, int64_t *value, const char **src)
{
    if (!d->classes || !d->cls || d->neg_sample < 0)
        return false;
    for (int64_t i = d->neg_sample; i < d->n; i++)
        if (d->cls[i] < 0 && d->cls[i] != except) {
            *sample = i;
            *value = d->cls[i];
            *src = d->label_src ? d->label_src : "the labels";
            return true;
        }
    return false;
}

int64_t lt_dataset_size(const lt_dataset *d) { return d->n; }
int64_t lt_dataset_sample_numel(const lt_dataset *d) { return d->numel; }
int lt_dataset_has_classes(const lt_dataset *d) { return d->classes; }
int64_t lt_dataset_num_classes(const lt_dataset *d) { return d->classes ? d->num_classes : 0; }
const char *lt_dataset_class_name(const lt_dataset *d, int64_t c)
{
    return d->class_names && c >= 0 && c < d->num_classes ? d->class_names[c] : NULL;
}

void lt_dataset_sample_shape(const lt_dataset *d, int *rank, int64_t *dims)
{
    *rank = d->rank;
    memcpy(dims, d->dims, sizeof *dims * (size_t)d->rank);
}

void lt_dataset_target_shape(const lt_dataset *d, int *rank, int64_t *dims)
{
    *rank = d->classes ? 0 : d->trank;
    memcpy(dims, d->tdims, sizeof *dims * (size_t)*rank);
}

/* the index of the first nan or inf of v[0..n), -1 when all are finite */
static int64_t first_not_finite(const float *v, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(v[i]))
            return i;
    return -1;
}

lt_status lt_ds_from_arrays(lt_dataset *d, const lt_tensor *x, const lt_tensor *y, void **x_owned,
                            const char *xname, const char *yname, lt_err *err)
{
    if (x->rank < 1 || x->dims[0] < 1 || x->numel < 1)
        return lt_errf(err, LT_ERR_INVALID, "%s holds no samples (rank %d, %lld values)", xname, x->rank,
                       (long long)x->numel);
    if (y->rank < 1 || y->dims[0] != x->dims[0])
        return lt_errf(err, LT_ERR_INVALID, "%s has %lld samples but %s has %lld", xname, (long long)x->dims[0], yname,
                       (long long)(y->rank ? y->dims[0] : 0));
    if (x->dtype != LT_U8 && !lt_dtype_is_float(x->dtype))
        return lt_errf(err, LT_ERR_UNSUPPORTED,
                       "%s has element type %s; samples must be uint8, float16, bfloat16, float32 or float64", xname,
                       lt_dtype_name(x->dtype));
    bool ycls = lt_dtype_is_int(y->dtype);
    if (!ycls && !lt_dtype_is_float(y->dtype))
        return lt_errf(err, LT_ERR_UNSUPPORTED,
                       "%s has element type %s; labels must be integers (classes) or float16, bfloat16, float32 or "
                       "float64 (targets)", yname, lt_dtype_name(y->dtype));
    if (ycls && y->rank != 1)
        return lt_errf(err, LT_ERR_INVALID, "%s: integer labels (classes) must have shape [N], this has rank %d", yname,
                       y->rank);
    int64_t n = x->dims[0];
    d->n = n;
    d->rank = x->rank - 1;
    memcpy(d->dims, x->dims + 1, sizeof *d->dims * (size_t)d->rank);
    d->numel = x->numel / n;
    d->classes = ycls;
    d->trank = ycls ? 0 : y->rank - 1;
    memcpy(d->tdims, y->dims + 1, sizeof *d->tdims * (size_t)d->trank);
    d->tnumel = ycls ? 1 : y->numel / n;

    size_t bytes = (size_t)x->numel * (x->dtype == LT_U8 ? 1 : sizeof(float));
    bool adopt = x_owned && *x_owned == x->data && (x->dtype == LT_U8 || x->dtype == LT_F32);
    void *xs = adopt ? x->data : malloc(bytes ? bytes : 1);
    if (!xs)
        return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory for %zu bytes", xname, bytes);
    if (adopt)
        *x_owned = NULL;
    else if (x->dtype == LT_U8 || x->dtype == LT_F32)
        memcpy(xs, x->data, bytes);
    else /* float64, float16, bfloat16: to float32 */
        for (int64_t i = 0; i < x->numel; i++)
            ((float *)xs)[i] = (float)lt_tensor_get_f64(x, i);
    if (x->dtype == LT_U8)
        d->xu8 = xs;
    else
        d->xf = xs;
    /* a nan or inf among the samples or targets would only show as a
     * diverged loss many steps in: name it now */
    int64_t bad = d->xf ? first_not_finite(d->xf, x->numel) : -1;
    if (bad >= 0)
        return lt_errf(err, LT_ERR_INVALID, "%s: sample %lld holds %g (element %lld); samples must be finite numbers",
                       xname, (long long)(bad / d->numel), (double)d->xf[bad], (long long)(bad % d->numel));

    if (ycls) {
        d->cls = malloc(sizeof *d->cls * (size_t)n);
        if (!d->cls)
            return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", yname);
        /* negative labels are kept for the feed to judge: an ignore index
         * (PyTorch's -100) counts for nothing under softmax-cross-entropy
         * and nll, and is refused under the other losses */
        d->neg_sample = -1;
        bool uns = y->dtype == LT_U64;
        for (int64_t i = 0; i < n; i++) {
            int64_t v = lt_tensor_get_i64(y, i);
            /* an unsigned 64-bit label past INT64_MAX reads as negative */
            if (v > INT32_MAX || (v < 0 && uns))
                return lt_errf(err, LT_ERR_INVALID, "%s: sample %lld's label is %llu; classes must be in 0..%d", yname,
                               (long long)i, (unsigned long long)v, INT32_MAX);
            d->cls[i] = v;
            if (v < 0 && d->neg_sample < 0)
                d->neg_sample = i;
            if (v + 1 > d->num_classes)
                d->num_classes = v + 1;
        }
        if (d->neg_sample >= 0 && !(d->label_src = strdup(yname)))
            return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", yname);
    } else {
        d->tgt = malloc(sizeof *d->tgt * (size_t)(y->numel ? y->numel : 1));
        if (!d->tgt)
            return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory", yname);
        for (int64_t i = 0; i < y->numel; i++)
            d->tgt[i] = (float)lt_tensor_get_f64(y, i);
        int64_t bad = first_not_finite(d->tgt, y->numel);
        if (bad >= 0)
            return lt_errf(err, LT_ERR_INVALID, "%s: sample %lld's target holds %g; targets must be finite numbers",
                           yname, (long long)(bad / d->tnumel), (double)d->tgt[bad]);
    }
    return LT_OK;
}

/* ---- batches ---- */

/* Sample s into dst; the inner loops are forced to SIMD (gcc's -O2 cost
 * model would leave the byte-to-float conversion scalar). */
static void fill_sample(const lt_dataset *d, int64_t s, float *dst)
{
    if (d->xf) {
        memcpy(dst, d->xf + s * d->numel, sizeof *dst * (size_t)d->numel);
        return;
    }
    const uint8_t *src = d->xu8 + s * d->numel;
    for (int c = 0; c < d->nch; c++) {
        const uint8_t *p = src + c * d->ch_len;
        float *q = dst + c * d->ch_len, m = d->mul[c], a = d->add[c];
#pragma omp simd
        for (int64_t j = 0; j < d->ch_len; j++)
            q[j] = (float)p[j] * m + a;
    }
}

/* The image geometry augmentation sees: [H,W] is one channel. */
static void image_dims(const lt_dataset *d, int64_t *C, int64_t *H, int64_t *W)
{
    *C = d->rank == 3 ? d->dims[0] : 1;
    *H = d->dims[d->rank - 2];
    *W = d->dims[d->rank - 1];
}

lt_status lt_ds_aug_check(const lt_dataset *d, const lt_augment *a, const char *spec, lt_err *err)
{
    if (!lt_augment_on(a))
        return LT_OK;
    char shp[128];
    lt_ds_shape_str(d->rank, d->dims, shp, sizeof shp);
    if (d->rank != 2 && d->rank != 3)
        return lt_errf(err, LT_ERR_INVALID, "%s: --augment moves pixels of images [H,W] or [C,H,W]; the samples are %s",
                       spec, shp);
    if (d->nch > 1 && d->rank == 2)
        return lt_errf(err, LT_ERR_INVALID, "%s: --augment with per-channel --mean/--std needs [C,H,W] samples; the "
                       "samples are %s", spec, shp);
    if (d->rank == 3 && d->dims[0] > 4)
        return lt_errf(err, LT_ERR_INVALID, "%s: --augment takes images channels first, [C,H,W] with C <= 4; the "
                       "samples are %s%s", spec, shp, d->dims[2] <= 4 ? " (channels last? store them as [C,H,W])" : "");
    return LT_OK;
}

/* Sample s into dst, cropped and mirrored as draw says (augment.h). */
static void fill_sample_aug(const lt_dataset *d, int64_t s, float *dst, const lt_augment *a, const lt_aug_draw *dr)
{
    int64_t C, H, W;
    image_dims(d, &C, &H, &W);
    int64_t P = a->crop, plane = H * W;
    for (int64_t c = 0; c < C; c++) {
        /* the channel's normalisation: per channel, or one for all */
        int64_t cn = d->nch > 1 ? (c * plane) / d->ch_len : 0;
        float m = d->mul[cn], ad = d->add[cn], z = d->zero[cn];
        for (int64_t y = 0; y < H; y++) {
            float *q = dst + c * plane + y * W;
            int64_t sy = y + dr->dy - P;
            if (sy < 0 || sy >= H) {
                for (int64_t x = 0; x < W; x++)
                    q[x] = z;
                continue;
            }
            int64_t row = s * d->numel + c * plane + sy * W;
            for (int64_t x = 0; x < W; x++) {
                int64_t sx = (dr->flip ? W - 1 - x : x) + dr->dx - P;
                if (sx < 0 || sx >= W)
                    q[x] = z;
                else if (d->xf)
                    q[x] = d->xf[row + sx];
                else
                    q[x] = (float)d->xu8[row + sx] * m + ad;
            }
        }
    }
}

static void fill_label(const lt_dataset *d, int64_t s, int64_t i, lt_tensor *y)
{
    if (d->classes)
        ((int64_t *)y->data)[i] = d->cls[s];
    else
        memcpy((float *)y->data + i * d->tnumel, d->tgt + s * d->tnumel, sizeof(float) * (size_t)d->tnumel);
}

static void fill_one(const lt_dataset *d, int64_t s, int64_t i, float *xp, lt_tensor *y, const lt_ds_aug *aug)
{
    if (aug) {
        lt_aug_draw dr;
        lt_augment_draw(&aug->a, aug->seed, aug->epoch, s, &dr);
        fill_sample_aug(d, s, xp + i * d->numel, &aug->a, &dr);
    } else {
        fill_sample(d, s, xp + i * d->numel);
    }
    fill_label(d, s, i, y);
}

/* Samples idx[i] (or start + i when idx is NULL) for i in [0, n). */
static void fill(const lt_dataset *d, const int64_t *idx, int64_t start, int64_t n, lt_tensor *x, lt_tensor *y,
                 int parallel, const lt_ds_aug *aug)
{
    float *xp = x->data;
    if (parallel && n > 1 && n * d->numel >= LT_DS_PARALLEL_MIN) {
#pragma omp parallel for schedule(static)
        for (int64_t i = 0; i < n; i++)
            fill_one(d, idx ? idx[i] : start + i, i, xp, y, aug);
        return;
    }
    for (int64_t i = 0; i < n; i++)
        fill_one(d, idx ? idx[i] : start + i, i, xp, y, aug);
}

lt_status lt_ds_gather(const lt_dataset *d, const int64_t *idx, int64_t n, lt_tensor *x, lt_tensor *y, int parallel,
                       lt_err *err)
{
    return lt_ds_gather_aug(d, idx, n, x, y, parallel, NULL, err);
}

lt_status lt_ds_gather_aug(const lt_dataset *d, const int64_t *idx, int64_t n, lt_tensor *x, lt_tensor *y,
                           int parallel, const lt_ds_aug *aug, lt_err *err)
{
    if (aug && !lt_augment_on(&aug->a))
        aug = NULL;
    if (aug) {
        lt_status st = lt_ds_aug_check(d, &aug->a, "gather", err);
        if (st != LT_OK)
            return st;
    }
    int64_t want;
    if (n < 0 || __builtin_mul_overflow(n, d->numel, &want))
        return lt_errf(err, LT_ERR_INVALID, "gather of %lld samples", (long long)n);
    if (!x || x->dtype != LT_F32 || x->numel != want || (x->numel && !x->data))
        return lt_errf(err, LT_ERR_INVALID,
                       "gather: x must be float32 with %lld values (%lld samples of %lld), it is %s with %lld",
                       (long long)want, (long long)n, (long long)d->numel,
                       x ? lt_dtype_name(x->dtype) : "missing", x ? (long long)x->numel : 0LL);
    lt_dtype yt = d->classes ? LT_I64 : LT_F32;
    int64_t want_y;
    if (__builtin_mul_overflow(n, d->tnumel, &want_y) || !y || y->dtype != yt || y->numel != want_y ||
        (y->numel && !y->data))
        return lt_errf(err, LT_ERR_INVALID, "gather: y must be %s with %lld values (%s), it is %s with %lld",
                       lt_dtype_name(yt), (long long)want_y, d->classes ? "class indices" : "float targets",
                       y ? lt_dtype_name(y->dtype) : "missing", y ? (long long)y->numel : 0LL);
    for (int64_t i = 0; i < n; i++)
        if (idx[i] < 0 || idx[i] >= d->n)
            return lt_errf(err, LT_ERR_INVALID,
                           "gather: sample index %lld (entry %lld) is outside the dataset's %lld samples",
                           (long long)idx[i], (long long)i, (long long)d->n);
    fill(d, idx, 0, n, x, y, parallel, aug);
    return LT_OK;
}

lt_status lt_dataset_gather(const lt_dataset *d, const int64_t *idx, int64_t n, lt_tensor *x, lt_tensor *y,
                            lt_err *err)
{
    return lt_ds_gather(d, idx, n, x, y, 1, err);
}

lt_status lt_dataset_batch(const lt_dataset *d, int64_t start, int64_t n, int rank, const int64_t *shape,
                           lt_value **x, lt_value **y, lt_err *err)
{
    if (!d || !shape || !x || !y)
        return lt_errf(err, LT_ERR_INVALID, "lt_dataset_batch: %s is NULL",
                       !d ? "the dataset" : !shape ? "shape" : !x ? "x" : "y");
    if (start < 0 || n <= 0 || start > d->n - n)
        return lt_errf(err, LT_ERR_INVALID, "batch [%lld, %lld) is outside the dataset's %lld samples",
                       (long long)start, (long long)(start + n), (long long)d->n);
    if (rank < 1 || rank > LT_MAX_RANK)
        return lt_errf(err, LT_ERR_INVALID, "bad input rank %d", rank);
    int64_t inner = 1;
    for (int i = 1; i < rank; i++)
        inner *= shape[i];
    if (inner != d->numel) {
        char shp[128];
        lt_ds_shape_str(d->rank, d->dims, shp, sizeof shp);
        return lt_errf(err, LT_ERR_INVALID, "the model's input holds %lld values per sample, the samples are %s",
                       (long long)inner, shp);
    }
    int64_t dims[LT_MAX_RANK], ydims[LT_MAX_RANK];
    memcpy(dims, shape, sizeof *dims * (size_t)rank);
    dims[0] = n;
    int yrank = d->classes ? 1 : 1 + d->trank;
    ydims[0] = n;
    if (!d->classes)
        memcpy(ydims + 1, d->tdims, sizeof *ydims * (size_t)d->trank);
    lt_value *xv = lt_value_new_tensor(), *yv = lt_value_new_tensor();
    lt_status s = xv && yv ? LT_OK : lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (s == LT_OK)
        s = lt_tensor_alloc(&xv->t, LT_F32, rank, dims, err);
    if (s == LT_OK)
        s = lt_tensor_alloc(&yv->t, d->classes ? LT_I64 : LT_F32, yrank, ydims, err);
    if (s != LT_OK) {
        lt_value_free(xv);
        lt_value_free(yv);
        return s;
    }
    fill(d, NULL, start, n, &xv->t, &yv->t, 1, NULL);
    *x = xv;
    *y = yv;
    return LT_OK;
}
