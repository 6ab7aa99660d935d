/* NonMaxSuppression (opsets 10, 11): greedy selection per batch and class
 * by descending score, dropping boxes whose IoU with an already selected box
 * exceeds the threshold. Output rows [batch, class, box] in the order the
 * spec fixes: batch, then class, then selection order. */
#include "misc_kernels.h"
#include <math.h>
#include <stdlib.h>

typedef struct nms_cand {
    float score;
    int64_t box;
} nms_cand;

/* Descending score; ties keep the lower box index first so the result does
 * not depend on the sort. */
static int cand_cmp(const void *pa, const void *pb)
{
    const nms_cand *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score > b->score ? -1 : 1;
    return (a->box > b->box) - (a->box < b->box);
}

/* Box corners normalised to (ymin, xmin, ymax, xmax) plus the area, so
 * either diagonal pair of corners (or a negative width) works. */
typedef struct nms_box {
    float y0, x0, y1, x1, area;
} nms_box;

static nms_box make_box(const float *b, int center)
{
    float ya, xa, yb, xb;
    if (center) { /* [x_center, y_center, width, height] */
        xa = b[0] - b[2] * 0.5f;
        xb = b[0] + b[2] * 0.5f;
        ya = b[1] - b[3] * 0.5f;
        yb = b[1] + b[3] * 0.5f;
    } else { /* [y1, x1, y2, x2] */
        ya = b[0];
        xa = b[1];
        yb = b[2];
        xb = b[3];
    }
    nms_box r = {fminf(ya, yb), fminf(xa, xb), fmaxf(ya, yb), fmaxf(xa, xb), 0};
    r.area = (r.y1 - r.y0) * (r.x1 - r.x0);
    return r;
}

/* Whether a and b overlap by more than thr. Boxes without area never
 * suppress or get suppressed. */
static bool overlaps(const nms_box *a, const nms_box *b, float thr)
{
    float h = fminf(a->y1, b->y1) - fmaxf(a->y0, b->y0);
    float w = fminf(a->x1, b->x1) - fmaxf(a->x0, b->x0);
    if (h <= 0 || w <= 0 || a->area <= 0 || b->area <= 0)
        return false;
    float inter = h * w;
    float uni = a->area + b->area - inter;
    if (uni <= 0)
        return false;
    return inter / uni > thr;
}

/* The float32 contents of t: t's own data, or a converted scratch copy. */
static const float *as_f32(lt_kctx *k, const lt_tensor *t)
{
    if (t->dtype == LT_F32)
        return t->data;
    float *f = lt_k_scratch(k, sizeof(float) * (size_t)(t->numel ? t->numel : 1));
    if (f)
        for (int64_t i = 0; i < t->numel; i++)
            f[i] = (float)lt_tensor_get_f64(t, i);
    return f;
}

/* One (batch, class) pair: writes up to cap selected box indices to sel and
 * returns their count, or -1 when out of memory. */
static int64_t select_pair(const nms_box *boxes, const float *scores, int64_t s, int64_t cap, float iou,
                           bool has_thr, float thr, int64_t *sel)
{
    nms_cand *c = malloc(sizeof *c * (size_t)(s ? s : 1));
    if (!c)
        return -1;
    int64_t n = 0;
    for (int64_t i = 0; i < s; i++) {
        float sc = scores[i];
        if (isnan(sc) || (has_thr && !(sc > thr)))
            continue;
        c[n++] = (nms_cand){sc, i};
    }
    qsort(c, (size_t)n, sizeof *c, cand_cmp);
    int64_t got = 0;
    for (int64_t i = 0; i < n && got < cap; i++) {
        const nms_box *bx = &boxes[c[i].box];
        bool keep = true;
        for (int64_t j = 0; j < got && keep; j++)
            keep = !overlaps(&boxes[sel[j]], bx, iou);
        if (keep)
            sel[got++] = c[i].box;
    }
    free(c);
    return got;
}

/* Scalar input i (shape [] or [1]) as a double; false when omitted. */
static bool scalar_in(lt_kctx *k, int i, double *v)
{
    const lt_tensor *t = lt_k_in(k, i);
    if (!t || t->numel < 1)
        return false;
    *v = lt_tensor_get_f64(t, 0);
    return true;
}

lt_status lt_misc_non_max_suppression(lt_kctx *k)
{
    const lt_tensor *bt = lt_k_in(k, 0), *st = lt_k_in(k, 1);
    if (!bt || !st)
        return lt_k_fail(k, LT_ERR_INVALID, "boxes and scores are required");
    if (!lt_dtype_is_float(bt->dtype) || !lt_dtype_is_float(st->dtype))
        return lt_k_fail(k, LT_ERR_RUNTIME, "boxes and scores must be float tensors");
    if (bt->rank != 3 || bt->dims[2] != 4)
        return lt_k_fail(k, LT_ERR_RUNTIME, "boxes must have shape [num_batches, spatial_dimension, 4]");
    if (st->rank != 3)
        return lt_k_fail(k, LT_ERR_RUNTIME, "scores must have shape [num_batches, num_classes, spatial_dimension]");
    if (bt->dims[0] != st->dims[0] || bt->dims[1] != st->dims[2])
        return lt_k_fail(k, LT_ERR_RUNTIME,
                         "boxes [%lld,%lld,4] and scores [%lld,%lld,%lld] disagree on batches or boxes",
                         (long long)bt->dims[0], (long long)bt->dims[1], (long long)st->dims[0],
                         (long long)st->dims[1], (long long)st->dims[2]);
    int64_t center = lt_attr_int(k->node, "center_point_box", 0);
    if (center != 0 && center != 1)
        return lt_k_fail(k, LT_ERR_INVALID, "center_point_box must be 0 or 1, got %lld", (long long)center);

    int64_t max_out = 0;
    const lt_tensor *mt = lt_k_in(k, 2);
    if (mt && mt->numel >= 1)
        max_out = lt_tensor_get_i64(mt, 0);
    double iou = 0, thr = 0;
    scalar_in(k, 3, &iou);
    bool has_thr = scalar_in(k, 4, &thr);
    if (!(iou >= 0 && iou <= 1))
        return lt_k_fail(k, LT_ERR_RUNTIME, "iou_threshold must be in [0, 1], got %g", iou);

    int64_t nb = bt->dims[0], ns = bt->dims[1], nc = st->dims[1];
    int64_t cap = max_out < ns ? max_out : ns;
    if (cap < 0)
        cap = 0;
    int64_t pairs = nb * nc; /* both bounded by numel of an allocated tensor */
    size_t sel_bytes, box_bytes;
    if (__builtin_mul_overflow((size_t)pairs, (size_t)cap, &sel_bytes) ||
        __builtin_mul_overflow(sel_bytes, sizeof(int64_t), &sel_bytes) ||
        __builtin_mul_overflow((size_t)(nb * ns), sizeof(nms_box), &box_bytes))
        return lt_k_fail(k, LT_ERR_RUNTIME, "selection buffer size overflows");

    const float *bf = as_f32(k, bt), *sf = as_f32(k, st);
    nms_box *boxes = lt_k_scratch(k, box_bytes ? box_bytes : 1);
    int64_t *sel = lt_k_scratch(k, sel_bytes ? sel_bytes : 1);
    int64_t *cnt = lt_k_scratch(k, sizeof(int64_t) * (size_t)(pairs ? pairs : 1));
    if (!bf || !sf || !boxes || !sel || !cnt)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory for NonMaxSuppression scratch");
    for (int64_t i = 0; i < nb * ns; i++)
        boxes[i] = make_box(bf + 4 * i, (int)center);

    int oom = 0;
    bool par = pairs > 1 && pairs * ns > 32768;
#pragma omp parallel for if (par) schedule(dynamic) reduction(| : oom)
    for (int64_t p = 0; p < pairs; p++) {
        int64_t b = p / nc;
        cnt[p] = cap ? select_pair(boxes + b * ns, sf + p * ns, ns, cap, (float)iou, has_thr, (float)thr,
                                   sel + p * cap)
                     : 0;
        if (cnt[p] < 0)
            oom = 1;
    }
    if (oom)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory sorting %lld scores", (long long)ns);

    int64_t total = 0;
    for (int64_t p = 0; p < pairs; p++)
        total += cnt[p];
    lt_tensor *y;
    int64_t dims[2] = {total, 3};
    lt_status s = lt_k_out(k, 0, LT_I64, 2, dims, &y);
    if (s != LT_OK)
        return s;
    int64_t *o = y->data;
    for (int64_t p = 0; p < pairs; p++)
        for (int64_t j = 0; j < cnt[p]; j++) {
            *o++ = p / nc;
            *o++ = p % nc;
            *o++ = sel[p * cap + j];
        }
    return LT_OK;
}
