/* Convolution on cuDNN: Conv (forward, with the bias added by our own
 * kernel), ConvGradData (backward data) and ConvGradFilter (backward
 * filter), for 1-D, 2-D and 3-D convolutions with groups, strides,
 * dilations and symmetric pads (auto_pad SAME_* and asymmetric pads run on
 * the host). 1-D convolutions go to cuDNN as 2-D ones of height 1.
 *
 * cuDNN 9 still has the convolution functions of its legacy API
 * (cudnnConvolutionForward, cudnnConvolutionBackwardData/Filter and the
 * cudnnFind*AlgorithmEx searches); cuDNN 9 marks them deprecated, nothing
 * here uses what it removed.
 *
 * Algorithm selection: the first time a shape key (direction, type, input
 * and filter dims, pads, strides, dilations, groups) is met, cudnnFind*Ex
 * times the algorithms on the real buffers and the fastest is cached for
 * the process, the non-fused Winograd ones left out in full float32
 * (allowed()); with LANTERN_CUDNN_BENCHMARK=0 the heuristics
 * (cudnnGet*Algorithm_v7) choose instead. The key's cuDNN descriptors are
 * made on that first run too and kept with the algorithm, so a later run
 * only looks its key up (by hash) and launches. LANTERN_CUDNN_LOG=1 prints
 * each choice; LANTERN_CUDNN_ALGO=fwd:A,data:B,filter:C takes the
 * algorithm numbered so (cudnnConvolution*Algo_t) for a direction named,
 * wherever cuDNN can run it (for finding which algorithm does what). Float32 runs with CUDNN_FMA_MATH
 * (no TF32) unless LANTERN_TF32=1. */
#include "cuda_internal.h"
#include "../ir/shape_nn.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CONV_MAX_SP 3
#define FIND_WORKSPACE ((size_t)256 << 20) /* what cudnnFind may use */

enum { DIR_FWD, DIR_DATA, DIR_FILTER };

typedef struct conv_key {
    int dir, f64, nsp, groups;
    int64_t x[2 + CONV_MAX_SP], w[2 + CONV_MAX_SP];
    int pad[CONV_MAX_SP], stride[CONV_MAX_SP], dil[CONV_MAX_SP];
} conv_key;

/* What a shape key keeps for the process: cuDNN's descriptors, made once,
 * and the algorithm chosen on its first run (algo -1 until then). */
struct lt_cu_algo {
    conv_key key;
    uint64_t hash;
    int algo;
    size_t ws;
    cudnnTensorDescriptor_t xdesc, ydesc;
    cudnnFilterDescriptor_t wdesc;
    cudnnConvolutionDescriptor_t cdesc;
    struct lt_cu_algo *next;
};

static pthread_mutex_t algo_mu = PTHREAD_MUTEX_INITIALIZER;
/* Held by a convolution from choosing its algorithm to queueing its call:
 * the sessions of every thread share the one cuDNN handle (which cuDNN
 * allows one thread at a time) and the one workspace, which a call on the
 * one stream may take once the calls queued before it are done with it. */
static pthread_mutex_t dnn_mu = PTHREAD_MUTEX_INITIALIZER;

typedef struct conv_job {
    conv_key key;
    lt_cu_algo *e; /* the key's entry: descriptors and algorithm */
    cudnnTensorDescriptor_t xdesc, ydesc;
    cudnnFilterDescriptor_t wdesc;
    cudnnConvolutionDescriptor_t cdesc;
} conv_job;

/* SAME_UPPER / SAME_LOWER pads (Keras' and TensorFlow's convolutions) that
 * come out even on both sides, as cuDNN takes them: with strides of 1 they
 * do whatever the image's size ((k - 1) d in all), with others the image's
 * size must be known to tell */
static bool same_pads_even(const lt_node *n)
{
    bool fwd = n->op == LT_OP_CONV, data = n->op == LT_OP_CONV_GRAD_DATA;
    const lt_ival *x = fwd ? n->in[0] : n->nin > 2 ? n->in[data ? 2 : 1] : NULL;
    const lt_ival *w = fwd || data ? n->in[1] : n->nin > 2 ? n->in[2] : NULL;
    if (!x || !w || x->type.kind != LT_KIND_TENSOR || w->type.kind != LT_KIND_TENSOR || x->type.rank != w->type.rank)
        return false;
    int nsp = x->type.rank - 2, sl = 0;
    const int64_t *st = lt_attr_ints(n, "strides", &sl);
    bool unit = true;
    for (int i = 0; i < sl; i++)
        unit = unit && st[i] == 1;
    int64_t img[CONV_MAX_SP], ker[CONV_MAX_SP];
    for (int i = 0; i < nsp; i++) {
        const lt_dim *xd = &x->type.dims[2 + i], *wd = &w->type.dims[2 + i];
        if (wd->sym >= 0 || wd->v < 1 || (!unit && (xd->sym >= 0 || xd->v < 1)))
            return false;
        ker[i] = wd->v;
        img[i] = xd->sym < 0 && xd->v >= 1 ? xd->v : 4096; /* any size, with strides of 1 */
    }
    lt_nn_geom g;
    char why[160];
    if (!lt_nn_window(n, nsp, img, ker, false, &g, why, sizeof why))
        return false;
    for (int i = 0; i < nsp; i++)
        if (g.pb[i] != g.pe[i])
            return false;
    return true;
}

static bool fits_conv(const lt_node *n)
{
    if (!n->in[0] || n->in[0]->type.rank < 3 || n->in[0]->type.rank > 2 + CONV_MAX_SP)
        return false;
    const char *ap = lt_attr_str(n, "auto_pad", "NOTSET");
    if (!strcmp(ap, "SAME_UPPER") || !strcmp(ap, "SAME_LOWER"))
        return same_pads_even(n);
    if (strcmp(ap, "NOTSET") && strcmp(ap, "VALID"))
        return false;
    int pl = 0;
    const int64_t *p = lt_attr_ints(n, "pads", &pl);
    for (int i = 0; i < pl / 2; i++)
        if (p[i] != p[i + pl / 2])
            return false;
    return true;
}

static void entry_free(lt_cu_algo *e)
{
    if (e->xdesc)
        cudnnDestroyTensorDescriptor(e->xdesc);
    if (e->ydesc)
        cudnnDestroyTensorDescriptor(e->ydesc);
    if (e->wdesc)
        cudnnDestroyFilterDescriptor(e->wdesc);
    if (e->cdesc)
        cudnnDestroyConvolutionDescriptor(e->cdesc);
    free(e);
}

static uint64_t key_hash(const conv_key *key)
{
    const unsigned char *p = (const unsigned char *)key;
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof *key; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

static lt_cu_algo *entry_find(lt_cuda *st, const conv_key *key, uint64_t h)
{
    lt_cu_algo *found = NULL;
    pthread_mutex_lock(&algo_mu);
    for (lt_cu_algo *a = st->algos; a && !found; a = a->next)
        if (a->hash == h && memcmp(&a->key, key, sizeof *key) == 0)
            found = a;
    pthread_mutex_unlock(&algo_mu);
    return found;
}

static void packed_strides(int nd, const int *d, int *st)
{
    st[nd - 1] = 1;
    for (int i = nd - 2; i >= 0; i--)
        st[i] = st[i + 1] * d[i + 1];
}

/* A new entry for key: cuDNN's descriptors of the geometry, added to the
 * backend's list (a racing twin is dropped for the one listed first). */
static lt_status entry_make(lt_kctx *k, lt_cuda *st, const conv_key *key, uint64_t h, const lt_tensor *x,
                            const lt_tensor *w, const int64_t *ydims, const lt_nn_geom *g, lt_cu_algo **out)
{
    int nsp = key->nsp;
    /* cuDNN takes 4-D and 5-D: a 1-D convolution is a 2-D one of height 1 */
    int sp = nsp == 1 ? 2 : nsp, nd = 2 + sp, pad[3], str[3], dil[3], xd[5], wd[5], yd[5];
    xd[0] = (int)x->dims[0];
    xd[1] = (int)x->dims[1];
    wd[0] = (int)w->dims[0];
    wd[1] = (int)w->dims[1];
    yd[0] = (int)ydims[0];
    yd[1] = (int)ydims[1];
    for (int i = 0; i < sp; i++) {
        int s = nsp == 1 ? i - 1 : i; /* -1: the added axis */
        xd[2 + i] = s < 0 ? 1 : (int)x->dims[2 + s];
        wd[2 + i] = s < 0 ? 1 : (int)w->dims[2 + s];
        yd[2 + i] = s < 0 ? 1 : (int)ydims[2 + s];
        pad[i] = s < 0 ? 0 : (int)g->pb[s];
        str[i] = s < 0 ? 1 : (int)g->s[s];
        dil[i] = s < 0 ? 1 : (int)g->d[s];
    }
    lt_cu_algo *e = calloc(1, sizeof *e);
    if (!e)
        return lt_k_fail(k, LT_ERR_NOMEM, "out of memory");
    memcpy(&e->key, key, sizeof *key); /* padding too: keys compare as bytes */
    e->hash = h;
    e->algo = -1;
    cudnnDataType_t dt = key->f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    int xs[5], ys[5];
    packed_strides(nd, xd, xs);
    packed_strides(nd, yd, ys);
    cudnnStatus_t c = cudnnCreateTensorDescriptor(&e->xdesc);
    if (c == CUDNN_STATUS_SUCCESS)
        c = cudnnCreateTensorDescriptor(&e->ydesc);
    if (c == CUDNN_STATUS_SUCCESS)
        c = cudnnCreateFilterDescriptor(&e->wdesc);
    if (c == CUDNN_STATUS_SUCCESS)
        c = cudnnCreateConvolutionDescriptor(&e->cdesc);
    if (c == CUDNN_STATUS_SUCCESS)
        c = cudnnSetTensorNdDescriptor(e->xdesc, dt, nd, xd, xs);
    if (c == CUDNN_STATUS_SUCCESS)
        c = cudnnSetTensorNdDescriptor(e->ydesc, dt, nd, yd, ys);
    if (c == CUDNN_STATUS_SUCCESS)
        c = cudnnSetFilterNdDescriptor(e->wdesc, dt, CUDNN_TENSOR_NCHW, nd, wd);
    if (c == CUDNN_STATUS_SUCCESS)
        c = cudnnSetConvolutionNdDescriptor(e->cdesc, sp, pad, str, dil, CUDNN_CROSS_CORRELATION, dt);
    if (c == CUDNN_STATUS_SUCCESS)
        c = cudnnSetConvolutionGroupCount(e->cdesc, key->groups);
    if (c == CUDNN_STATUS_SUCCESS)
        c = cudnnSetConvolutionMathType(e->cdesc, !key->f64 && !st->tf32 ? CUDNN_FMA_MATH : CUDNN_DEFAULT_MATH);
    if (c != CUDNN_STATUS_SUCCESS) {
        entry_free(e);
        return lt_cuda_kfail(k, __FILE__, __LINE__, "cuDNN descriptors", "cuDNN", cudnnGetErrorString(c));
    }
    pthread_mutex_lock(&algo_mu);
    lt_cu_algo *twin = NULL;
    for (lt_cu_algo *a = st->algos; a && !twin; a = a->next)
        if (a->hash == h && memcmp(&a->key, key, sizeof *key) == 0)
            twin = a;
    if (!twin) {
        e->next = st->algos;
        st->algos = e;
    }
    pthread_mutex_unlock(&algo_mu);
    if (twin) {
        entry_free(e);
        e = twin;
    }
    *out = e;
    return LT_OK;
}

/* The geometry of x (N, C, spatial...) and W (M, C/group, kernel...) as the
 * CPU works it out, and the key's entry (cuDNN's descriptors, made on the
 * key's first run); ydims gets y's shape. */
static lt_status job_setup(lt_kctx *k, int dir, const lt_tensor *x, const lt_tensor *w, conv_job *j, int64_t *ydims)
{
    memset(j, 0, sizeof *j);
    int nsp = x->rank - 2;
    if (nsp < 1 || nsp > CONV_MAX_SP || w->rank != x->rank || x->dtype != w->dtype)
        return lt_k_fail(k, LT_ERR_INVALID, "input of rank %d and weights of rank %d do not fit a cuda convolution",
                         x->rank, w->rank);
    int64_t groups = lt_attr_int(k->node, "group", 1);
    if (groups < 1 || x->dims[1] != w->dims[1] * groups || w->dims[0] % groups)
        return lt_k_fail(k, LT_ERR_INVALID, "input has %lld channels, weights [%lld, %lld, ...], group %lld",
                         (long long)x->dims[1], (long long)w->dims[0], (long long)w->dims[1], (long long)groups);
    lt_nn_geom g;
    char why[256];
    if (!lt_nn_window(k->node, nsp, x->dims + 2, w->dims + 2, false, &g, why, sizeof why))
        return lt_k_fail(k, LT_ERR_INVALID, "%s", why);
    for (int i = 0; i < nsp; i++)
        if (g.pb[i] != g.pe[i])
            return lt_k_fail(k, LT_ERR_UNSUPPORTED, "asymmetric pads are not run by the cuda convolution");
    for (int i = 0; i < x->rank; i++)
        if (x->dims[i] > INT32_MAX || w->dims[i] > INT32_MAX)
            return lt_k_fail(k, LT_ERR_UNSUPPORTED, "dims beyond cuDNN's int range");
    j->key.dir = dir;
    j->key.f64 = x->dtype == LT_F64;
    j->key.nsp = nsp;
    j->key.groups = (int)groups;
    ydims[0] = x->dims[0];
    ydims[1] = w->dims[0];
    for (int i = 0; i < x->rank; i++) {
        j->key.x[i] = x->dims[i];
        j->key.w[i] = w->dims[i];
    }
    for (int i = 0; i < nsp; i++) {
        j->key.pad[i] = (int)g.pb[i];
        j->key.stride[i] = (int)g.s[i];
        j->key.dil[i] = (int)g.d[i];
        ydims[2 + i] = g.grid[i];
    }
    /* cuDNN's descriptors take int strides: every tensor under 2^31 values */
    int64_t yn = 1;
    for (int i = 0; i < x->rank; i++)
        yn = ydims[i] > 0 && yn > INT32_MAX / ydims[i] ? (int64_t)INT32_MAX + 1 : yn * ydims[i];
    if (x->numel > INT32_MAX || w->numel > INT32_MAX || yn > INT32_MAX)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "a convolution of 2^31 values or more in one tensor is beyond cuDNN's "
                         "descriptors");
    lt_cuda *st = lt_cuda_of(k->be);
    uint64_t h = key_hash(&j->key);
    lt_cu_algo *e = entry_find(st, &j->key, h);
    if (!e) {
        lt_status s = entry_make(k, st, &j->key, h, x, w, ydims, &g, &e);
        if (s != LT_OK)
            return s;
    }
    j->e = e;
    j->xdesc = e->xdesc;
    j->ydesc = e->ydesc;
    j->wdesc = e->wdesc;
    j->cdesc = e->cdesc;
    return LT_OK;
}

static bool algo_lookup(const lt_cu_algo *e, int *algo, size_t *ws)
{
    pthread_mutex_lock(&algo_mu);
    bool found = e->algo >= 0;
    if (found) {
        *algo = e->algo;
        *ws = e->ws;
    }
    pthread_mutex_unlock(&algo_mu);
    return found;
}

static void algo_store(lt_cu_algo *e, int algo, size_t ws)
{
    pthread_mutex_lock(&algo_mu);
    e->algo = algo;
    e->ws = ws;
    pthread_mutex_unlock(&algo_mu);
}

/* Whether a workspace of the bytes can be had (Find's choices fit its
 * search workspace already; the heuristics rank algorithms without regard
 * to theirs): the first algorithm that fits is taken and cached. */
static bool workspace_ok(lt_kctx *k, size_t bytes)
{
    if (bytes == 0 || lt_cuda_of(k->be)->benchmark)
        return true;
    return lt_cuda_workspace(k->be, bytes) != NULL;
}

/* LANTERN_CUDNN_LOG=1: one line on stderr per shape key when its
 * algorithm is chosen (how, which, its workspace, of how many results) */
static void log_choice(const conv_job *j, bool timed, int algo, size_t ws, int got)
{
    static const char *const dir[] = {"forward", "backward-data", "backward-filter"};
    char x[96] = "", w[96] = "";
    int r = 2 + j->key.nsp, nx = 0, nw = 0;
    for (int i = 0; i < r; i++) {
        nx += snprintf(x + nx, sizeof x - (size_t)nx, "%s%lld", i ? "x" : "", (long long)j->key.x[i]);
        nw += snprintf(w + nw, sizeof w - (size_t)nw, "%s%lld", i ? "x" : "", (long long)j->key.w[i]);
    }
    fprintf(stderr, "lantern cudnn: %s x %s w %s stride %d pad %d groups %d%s: algo %d, workspace %zu, %s of %d\n",
            dir[j->key.dir], x, w, j->key.stride[0], j->key.pad[0], j->key.groups, j->key.f64 ? " f64" : "", algo, ws,
            timed ? "fastest timed" : "heuristics' first", got);
}

/* Whether an algorithm may be taken. The non-fused Winograd algorithms
 * lose float32 precision (on an H200, the shipped CNN's 5x5 convolutions:
 * its first loss 2.3e-5 off the CPU's with the forward one, the loss curve
 * 5.4e-2 off after 20 steps; 2.9e-3 with the backward-data one; every other
 * algorithm within 1.1e-7), so cudnnFind, which takes whatever ran fastest,
 * made a training run's numbers depend on timing. They are left out unless
 * TF32 is on (a loss of precision asked for) or LANTERN_CUDNN_ALGO names
 * one. */
static bool allowed(const lt_cuda *st, int dir, int algo, int force)
{
    if (force >= 0)
        return algo == force;
    if (st->tf32)
        return true;
    switch (dir) {
    case DIR_FWD: return algo != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
    case DIR_DATA: return algo != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
    default: return algo != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
    }
}

/* The algorithm for the job: cached, else found (timed on a, b and the
 * output out) or taken from the heuristics. */
static lt_status choose(lt_kctx *k, conv_job *j, const void *a, const void *b, void *out, int *algo, size_t *ws)
{
    lt_cuda *st = lt_cuda_of(k->be);
    if (algo_lookup(j->e, algo, ws))
        return LT_OK;
    enum { N = 16 };
    int got = 0, best = -1;
    size_t need = 0;
    size_t room = FIND_WORKSPACE;
    void *wsp = st->benchmark ? lt_cuda_workspace(k->be, room) : NULL;
    if (st->benchmark && !wsp) { /* too little memory to search with a big workspace */
        room = 0;
    }
    cudnnHandle_t h = st->dnn;
    int force = st->force_algo[j->key.dir];
    if (j->key.dir == DIR_FWD) {
        cudnnConvolutionFwdAlgoPerf_t perf[N];
        if (st->benchmark)
            LT_CUDNN_K(k, cudnnFindConvolutionForwardAlgorithmEx(h, j->xdesc, a, j->wdesc, b, j->cdesc, j->ydesc, out,
                                                                 N, &got, perf, wsp, room));
        else
            LT_CUDNN_K(k, cudnnGetConvolutionForwardAlgorithm_v7(h, j->xdesc, j->wdesc, j->cdesc, j->ydesc, N, &got,
                                                                 perf));
        for (int i = 0; i < got && best < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && allowed(st, DIR_FWD, (int)perf[i].algo, force) &&
                workspace_ok(k, perf[i].memory)) {
                best = (int)perf[i].algo;
                need = perf[i].memory;
            }
    } else if (j->key.dir == DIR_DATA) {
        cudnnConvolutionBwdDataAlgoPerf_t perf[N];
        if (st->benchmark)
            LT_CUDNN_K(k, cudnnFindConvolutionBackwardDataAlgorithmEx(h, j->wdesc, a, j->ydesc, b, j->cdesc, j->xdesc,
                                                                      out, N, &got, perf, wsp, room));
        else
            LT_CUDNN_K(k, cudnnGetConvolutionBackwardDataAlgorithm_v7(h, j->wdesc, j->ydesc, j->cdesc, j->xdesc, N,
                                                                      &got, perf));
        for (int i = 0; i < got && best < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && allowed(st, DIR_DATA, (int)perf[i].algo, force) &&
                workspace_ok(k, perf[i].memory)) {
                best = (int)perf[i].algo;
                need = perf[i].memory;
            }
    } else {
        cudnnConvolutionBwdFilterAlgoPerf_t perf[N];
        if (st->benchmark)
            LT_CUDNN_K(k, cudnnFindConvolutionBackwardFilterAlgorithmEx(h, j->xdesc, a, j->ydesc, b, j->cdesc,
                                                                        j->wdesc, out, N, &got, perf, wsp, room));
        else
            LT_CUDNN_K(k, cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, j->xdesc, j->ydesc, j->cdesc, j->wdesc, N,
                                                                        &got, perf));
        for (int i = 0; i < got && best < 0; i++)
            if (perf[i].status == CUDNN_STATUS_SUCCESS && allowed(st, DIR_FILTER, (int)perf[i].algo, force) &&
                workspace_ok(k, perf[i].memory)) {
                best = (int)perf[i].algo;
                need = perf[i].memory;
            }
    }
    if (best < 0 && force >= 0)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "LANTERN_CUDNN_ALGO: cuDNN cannot run algorithm %d here", force);
    if (best < 0)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "cuDNN has no algorithm for this convolution (%d tried)", got);
    if (st->log_algos)
        log_choice(j, st->benchmark, best, need, got);
    algo_store(j->e, best, need);
    *algo = best;
    *ws = need;
    return LT_OK;
}

/* Conv (x, W[, B]) -> y */
static lt_status k_conv(lt_kctx *k)
{
    const lt_tensor *x = lt_k_in(k, 0), *w = lt_k_in(k, 1), *bias = lt_k_in(k, 2);
    if (!x || !w)
        return lt_k_fail(k, LT_ERR_INVALID, "inputs X and W are required");
    if (x->dtype != LT_F32 && x->dtype != LT_F64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s on cuda", lt_dtype_name(x->dtype));
    conv_job j;
    int64_t yd[LT_MAX_RANK];
    lt_status s = job_setup(k, DIR_FWD, x, w, &j, yd);
    lt_tensor *y = NULL;
    if (s == LT_OK)
        s = lt_k_out(k, 0, x->dtype, x->rank, yd, &y);
    int algo = 0;
    size_t wsz = 0;
    pthread_mutex_lock(&dnn_mu);
    if (s == LT_OK && y->numel > 0)
        s = choose(k, &j, x->data, w->data, y->data, &algo, &wsz);
    if (s == LT_OK && y->numel > 0) {
        lt_cuda *st = lt_cuda_of(k->be);
        void *ws = wsz ? lt_cuda_workspace(k->be, wsz) : NULL;
        double one = 1, zero = 0;
        float onef = 1, zerof = 0;
        bool f64 = x->dtype == LT_F64;
        cudnnStatus_t e = CUDNN_STATUS_ALLOC_FAILED;
        if (!wsz || ws)
            e = cudnnConvolutionForward(st->dnn, f64 ? (void *)&one : (void *)&onef, j.xdesc, x->data, j.wdesc,
                                        w->data, j.cdesc, (cudnnConvolutionFwdAlgo_t)algo, ws, wsz,
                                        f64 ? (void *)&zero : (void *)&zerof, j.ydesc, y->data);
        if (wsz && !ws)
            s = lt_k_fail(k, LT_ERR_NOMEM, "out of device memory: %zu bytes of convolution workspace asked, %zu in use",
                          wsz, st->in_use);
        else if (e != CUDNN_STATUS_SUCCESS)
            s = lt_cuda_kfail(k, __FILE__, __LINE__, "cudnnConvolutionForward", "cuDNN", cudnnGetErrorString(e));
        else if (bias) {
            if (bias->numel != yd[1] || bias->dtype != x->dtype) {
                s = lt_k_fail(k, LT_ERR_INVALID, "B must hold %lld values of the input's type", (long long)yd[1]);
            } else {
                cudaError_t ce = lt_cu_add_bias(st->stream, f64, y->data, bias->data, yd[0], yd[1],
                                                y->numel / (yd[0] * yd[1]));
                if (ce != cudaSuccess)
                    s = lt_cuda_kfail(k, __FILE__, __LINE__, "lt_cu_add_bias", "CUDA", cudaGetErrorString(ce));
            }
        }
    }
    pthread_mutex_unlock(&dnn_mu);
    return s;
}

/* ConvGradData (dy, W, x) -> dx and ConvGradFilter (dy, x, W) -> dW */
static lt_status k_conv_grad(lt_kctx *k)
{
    bool data = k->node->op == LT_OP_CONV_GRAD_DATA;
    const lt_tensor *dy = lt_k_in(k, 0), *w = lt_k_in(k, data ? 1 : 2), *x = lt_k_in(k, data ? 2 : 1);
    if (!dy || !w || !x)
        return lt_k_fail(k, LT_ERR_INVALID, "inputs dy, W and x are required");
    if (x->dtype != LT_F32 && x->dtype != LT_F64)
        return lt_k_fail(k, LT_ERR_UNSUPPORTED, "element type %s on cuda", lt_dtype_name(x->dtype));
    conv_job j;
    int64_t yd[LT_MAX_RANK];
    lt_status s = job_setup(k, data ? DIR_DATA : DIR_FILTER, x, w, &j, yd);
    if (s == LT_OK) {
        bool ok = dy->rank == x->rank && dy->dtype == x->dtype;
        for (int i = 0; ok && i < x->rank; i++)
            ok = dy->dims[i] == yd[i];
        if (!ok)
            s = lt_k_fail(k, LT_ERR_INVALID, "dy does not have the convolution's output shape");
    }
    const lt_tensor *like = data ? x : w;
    lt_tensor *out = NULL;
    if (s == LT_OK)
        s = lt_k_out(k, 0, like->dtype, like->rank, like->dims, &out);
    int algo = 0;
    size_t wsz = 0;
    bool f64 = x->dtype == LT_F64;
    lt_cuda *st = lt_cuda_of(k->be);
    if (s == LT_OK && out->numel > 0 && dy->numel == 0)
        LT_CUDA_K(k, cudaMemsetAsync(out->data, 0, lt_tensor_nbytes(out), st->stream));
    pthread_mutex_lock(&dnn_mu);
    if (s == LT_OK && out->numel > 0 && dy->numel > 0)
        s = choose(k, &j, data ? w->data : x->data, dy->data, out->data, &algo, &wsz);
    if (s == LT_OK && out->numel > 0 && dy->numel > 0) {
        void *ws = wsz ? lt_cuda_workspace(k->be, wsz) : NULL;
        double one = 1, zero = 0;
        float onef = 1, zerof = 0;
        void *pa = f64 ? (void *)&one : (void *)&onef, *pb = f64 ? (void *)&zero : (void *)&zerof;
        cudnnStatus_t e = CUDNN_STATUS_ALLOC_FAILED;
        if (!wsz || ws) {
            if (data)
                e = cudnnConvolutionBackwardData(st->dnn, pa, j.wdesc, w->data, j.ydesc, dy->data, j.cdesc,
                                                 (cudnnConvolutionBwdDataAlgo_t)algo, ws, wsz, pb, j.xdesc, out->data);
            else
                e = cudnnConvolutionBackwardFilter(st->dnn, pa, j.xdesc, x->data, j.ydesc, dy->data, j.cdesc,
                                                   (cudnnConvolutionBwdFilterAlgo_t)algo, ws, wsz, pb, j.wdesc,
                                                   out->data);
        }
        if (wsz && !ws)
            s = lt_k_fail(k, LT_ERR_NOMEM, "out of device memory: %zu bytes of convolution workspace asked, %zu in use",
                          wsz, st->in_use);
        else if (e != CUDNN_STATUS_SUCCESS)
            s = lt_cuda_kfail(k, __FILE__, __LINE__, data ? "cudnnConvolutionBackwardData" : "cudnnConvolutionBackwardFilter",
                              "cuDNN", cudnnGetErrorString(e));
    }
    pthread_mutex_unlock(&dnn_mu);
    return s;
}

void lt_cuda_register_dnn(lt_cu_op *tab)
{
    tab[LT_OP_CONV] = (lt_cu_op){k_conv, 0, 0, fits_conv};
    tab[LT_OP_CONV_GRAD_DATA] = (lt_cu_op){k_conv_grad, 0, 0, fits_conv};
    tab[LT_OP_CONV_GRAD_FILTER] = (lt_cu_op){k_conv_grad, 0, 0, fits_conv};
}
