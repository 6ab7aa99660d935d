/* The depthwise convolution channels-last, for small planes (float32, one
 * output channel an input channel), for one instruction-set tier:
 * included by nn_conv_depthwise.c with SFX (name suffix) and ATTR (the
 * functions' target attribute, or nothing) defined. A task takes a block
 * of bs channels (bs <= CL_MAX_BS), turns their planes into rows of bs
 * values a position, and sweeps the window once for all of them: every
 * multiply-add runs across the block's channels, where row by row a 4x4
 * plane would give loops of 4. */
#define CL_CAT2(a, b) a##_##b
#define CL_CAT(a, b) CL_CAT2(a, b)
#define CL_FN(name) CL_CAT(name, SFX)

/* cb planes of `plane` values -> [plane][bs] */
ATTR static void CL_FN(to_last)(const float *x, int64_t plane, int64_t cb, int64_t bs, float *xt)
{
    for (int64_t c = 0; c < cb; c++) {
        const float *xc = x + c * plane;
        for (int64_t q = 0; q < plane; q++)
            xt[q * bs + c] = xc[q];
    }
}

/* [plane][bs] -> cb planes */
ATTR static void CL_FN(from_last)(const float *xt, int64_t plane, int64_t cb, int64_t bs, float *x)
{
    for (int64_t c = 0; c < cb; c++) {
        float *xc = x + c * plane;
        for (int64_t q = 0; q < plane; q++)
            xc[q] = xt[q * bs + c];
    }
}

/* w [c][taps] of channels c0.. -> [taps][bs] */
ATTR static void CL_FN(taps_last)(const float *w, int64_t taps, int64_t cb, int64_t bs, float *wt)
{
    for (int64_t c = 0; c < cb; c++)
        for (int64_t t = 0; t < taps; t++)
            wt[t * bs + c] = w[c * taps + t];
}

/* the taps of grid position (oy, ox) that read inside the image, in tap
 * order: their tap indices and image positions; returns how many */
ATTR static int CL_FN(window)(const dw_geom *v, int64_t oy, int64_t ox, int32_t *tap, int32_t *pos)
{
    int cnt = 0;
    for (int64_t ky = 0; ky < v->kh; ky++) {
        int64_t iy = oy * v->sh - v->ph + ky * v->dh;
        if (iy < 0 || iy >= v->ih)
            continue;
        for (int64_t kx = 0; kx < v->kw; kx++) {
            int64_t ix = ox * v->sw - v->pw + kx * v->dw;
            if (ix < 0 || ix >= v->iw)
                continue;
            tap[cnt] = (int32_t)(ky * v->kw + kx);
            pos[cnt++] = (int32_t)(iy * v->iw + ix);
        }
    }
    return cnt;
}

/* task it = (image, channel block) of y */
ATTR static void CL_FN(cl_fwd)(const cl_args *a, int64_t it, float *buf)
{
    const dw_geom *v = a->v;
    const float *x = a->x, *w = a->w, *b = a->b;
    float *y = a->y;
    int64_t c = a->c, bs = a->bs;
    int64_t nblk = (c + bs - 1) / bs, img = it / nblk, c0 = it % nblk * bs, cb = c - c0 < bs ? c - c0 : bs;
    int64_t ip = v->ih * v->iw, op = v->oh * v->ow, taps = v->kh * v->kw;
    float *xt = buf, *yt = xt + ip * bs, wt[CL_MAX_TAPS * CL_MAX_BS], acc[CL_MAX_BS];
    CL_FN(to_last)(x + (img * c + c0) * ip, ip, cb, bs, xt);
    CL_FN(taps_last)(w + c0 * taps, taps, cb, bs, wt);
    int32_t tap[CL_MAX_TAPS], pos[CL_MAX_TAPS];
    for (int64_t oy = 0; oy < v->oh; oy++)
        for (int64_t ox = 0; ox < v->ow; ox++) {
            for (int64_t j = 0; j < cb; j++)
                acc[j] = b ? b[c0 + j] : 0.0f;
            for (int k = 0, nk = CL_FN(window)(v, oy, ox, tap, pos); k < nk; k++) {
                const float *xq = xt + pos[k] * bs, *wq = wt + tap[k] * bs;
#pragma omp simd
                for (int64_t j = 0; j < cb; j++)
                    acc[j] += wq[j] * xq[j];
            }
            memcpy(yt + (oy * v->ow + ox) * bs, acc, sizeof(float) * (size_t)cb);
        }
    CL_FN(from_last)(yt, op, cb, bs, y + (img * c + c0) * op);
}

/* task it = (image, channel block) of dx */
ATTR static void CL_FN(cl_back)(const cl_args *a, int64_t it, float *buf)
{
    const dw_geom *v = a->v;
    const float *dy = a->dy, *w = a->w;
    float *dx = a->dx;
    int64_t c = a->c, bs = a->bs;
    int64_t nblk = (c + bs - 1) / bs, img = it / nblk, c0 = it % nblk * bs, cb = c - c0 < bs ? c - c0 : bs;
    int64_t ip = v->ih * v->iw, op = v->oh * v->ow, taps = v->kh * v->kw;
    float *xt = buf, *yt = xt + ip * bs, wt[CL_MAX_TAPS * CL_MAX_BS];
    CL_FN(to_last)(dy + (img * c + c0) * op, op, cb, bs, yt);
    CL_FN(taps_last)(w + c0 * taps, taps, cb, bs, wt);
    memset(xt, 0, sizeof(float) * (size_t)(ip * bs));
    int32_t tap[CL_MAX_TAPS], pos[CL_MAX_TAPS];
    for (int64_t oy = 0; oy < v->oh; oy++)
        for (int64_t ox = 0; ox < v->ow; ox++) {
            const float *gp = yt + (oy * v->ow + ox) * bs;
            for (int k = 0, nk = CL_FN(window)(v, oy, ox, tap, pos); k < nk; k++) {
                float *xq = xt + pos[k] * bs;
                const float *wq = wt + tap[k] * bs;
#pragma omp simd
                for (int64_t j = 0; j < cb; j++)
                    xq[j] += wq[j] * gp[j];
            }
        }
    CL_FN(from_last)(xt, ip, cb, bs, dx + (img * c + c0) * ip);
}

/* task blk: the block's taps of dW, each image's sums in float added in
 * image order into double */
ATTR static void CL_FN(cl_filter)(const cl_args *a, int64_t blk, float *buf)
{
    const dw_geom *v = a->v;
    const float *dy = a->dy, *x = a->x;
    float *dw = a->dw;
    int64_t n = a->n, c = a->c, bs = a->bs;
    int64_t c0 = blk * bs, cb = c - c0 < bs ? c - c0 : bs;
    int64_t ip = v->ih * v->iw, op = v->oh * v->ow, taps = v->kh * v->kw;
    float *xt = buf, *yt = xt + ip * bs, part[CL_MAX_TAPS * CL_MAX_BS];
    double sums[CL_MAX_TAPS * CL_MAX_BS];
    int32_t tap[CL_MAX_TAPS], pos[CL_MAX_TAPS];
    memset(sums, 0, sizeof(double) * (size_t)(taps * bs));
    for (int64_t img = 0; img < n; img++) {
        CL_FN(to_last)(x + (img * c + c0) * ip, ip, cb, bs, xt);
        CL_FN(to_last)(dy + (img * c + c0) * op, op, cb, bs, yt);
        memset(part, 0, sizeof(float) * (size_t)(taps * bs));
        for (int64_t oy = 0; oy < v->oh; oy++)
            for (int64_t ox = 0; ox < v->ow; ox++) {
                const float *gp = yt + (oy * v->ow + ox) * bs;
                for (int k = 0, nk = CL_FN(window)(v, oy, ox, tap, pos); k < nk; k++) {
                    const float *xq = xt + pos[k] * bs;
                    float *pq = part + tap[k] * bs;
#pragma omp simd
                    for (int64_t j = 0; j < cb; j++)
                        pq[j] += gp[j] * xq[j];
                }
            }
        for (int64_t t = 0; t < taps; t++)
            for (int64_t j = 0; j < cb; j++)
                sums[t * bs + j] += (double)part[t * bs + j];
    }
    for (int64_t j = 0; j < cb; j++)
        for (int64_t t = 0; t < taps; t++)
            dw[(c0 + j) * taps + t] = (float)sums[t * bs + j];
}

static const cl_task CL_FN(cl_tasks)[3] = {CL_FN(cl_fwd), CL_FN(cl_back), CL_FN(cl_filter)};

#undef CL_FN
#undef CL_CAT
#undef CL_CAT2
