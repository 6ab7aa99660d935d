/* The "cuda" backend: device memory from a caching pool of its own, copies
 * on one stream, and the kernel table of kernels.c, blas.c and conv.c.
 *
 * Opening it checks for a device (cudaGetDeviceCount) and makes the stream
 * and the cuBLAS and cuDNN handles once per process; without a device the
 * open fails with one line saying so, and nothing else is touched.
 *
 * The pool keeps freed blocks per size class (four classes per power of two,
 * from 512 bytes) and never gives them back during a run, so a steady-state
 * step makes no cudaMalloc or cudaFree; when cudaMalloc fails, the cache is
 * given back to the driver and the request tried once more. All work goes on
 * one stream, so a block freed by the host while kernels still read it is
 * only handed to kernels queued after them.
 *
 * The CUDA runtime keeps the current device per host thread, and threads
 * other than the one that opened the backend call in: the session's runner
 * thread (programs with functions: Loop, Scan and If gradients), whoever
 * releases a buffer last. Every entry point here that touches the device
 * (the vtable, the pool, the kernels through one dispatcher) first makes
 * the backend's device the calling thread's (on_device), so cuda:N never
 * sends work to device 0. */
#include "cuda_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static lt_cuda state = {.mu = PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t open_mu = PTHREAD_MUTEX_INITIALIZER;
static bool opened;
static lt_cu_op ops[LT_OP_COUNT];

/* A device buffer: the lt_buf and the bytes last asked of it (guard mode
 * checks the bytes after those). */
typedef struct cu_buf {
    lt_buf b;
    size_t asked;
} cu_buf;

/* Guard mode (LANTERN_CUDA_GUARD=1, read when the backend opens): every
 * buffer gets LT_CU_GUARD bytes of 0xA5 after what was asked, checked when
 * it is released; a damaged guard (a kernel writing past its output) is
 * counted, see lt_cuda_guard_breaks. Each release then waits for the
 * stream: for tests only. */
#define LT_CU_GUARD 256
static bool guard_mode;
static size_t guard_breaks;

/* The device this thread made current through on_device (-1: none yet).
 * Something else on the thread calling cudaSetDevice is not seen: lantern
 * owns the threads that call in, and a program that switches devices
 * itself must switch back before calling lantern. */
static _Thread_local int thread_device = -1;

/* Makes the backend's device the calling thread's current one: one compare
 * once the thread has it. */
static cudaError_t on_device(void)
{
    if (thread_device == state.device)
        return cudaSuccess;
    cudaError_t e = cudaSetDevice(state.device);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return e;
    }
    thread_device = state.device;
    return cudaSuccess;
}

lt_status lt_cuda_errf(lt_err *err, lt_status s, const char *file, int line, const char *call, const char *lib,
                       const char *msg)
{
    const char *base = strrchr(file, '/');
    return lt_errf(err, s, "%s:%d: %s failed: %s: %s", base ? base + 1 : file, line, call, lib,
                   msg ? msg : "unknown error");
}

lt_status lt_cuda_kfail(lt_kctx *k, const char *file, int line, const char *call, const char *lib, const char *msg)
{
    /* the library's own failure: lt_k_fail forms the message behind the
     * node's label, but the status stays LT_ERR_RUNTIME (lt_k_fail's is the
     * model's fault, LT_ERR_INVALID) */
    const char *base = strrchr(file, '/');
    (void)lt_k_fail(k, LT_ERR_RUNTIME, "%s:%d: %s failed: %s: %s", base ? base + 1 : file, line, call, lib,
                    msg ? msg : "unknown error");
    return LT_ERR_RUNTIME;
}

lt_cuda *lt_cuda_of(const lt_backend *be)
{
    (void)be;
    return &state;
}

/* ---- the caching pool ---- */
static int size_class(size_t bytes, size_t *cap)
{
    size_t base = 512;
    for (int c = 0; c < LT_CU_CLASSES; c += 4, base <<= 1) {
        for (int q = 0; q < 4; q++) {
            size_t sz = base + base / 4 * (size_t)q;
            if (bytes <= sz) {
                *cap = sz;
                return c + q;
            }
        }
        if (base > ((size_t)1 << 46))
            break;
    }
    *cap = bytes;
    return -1;
}

static void guard_check(lt_buf *b)
{
    cu_buf *cb = (cu_buf *)b;
    unsigned char tail[LT_CU_GUARD];
    bool ok = cudaMemcpyAsync(tail, (char *)b->data + cb->asked, LT_CU_GUARD, cudaMemcpyDeviceToHost,
                              state.stream) == cudaSuccess &&
              cudaStreamSynchronize(state.stream) == cudaSuccess;
    for (int i = 0; ok && i < LT_CU_GUARD; i++)
        ok = tail[i] == 0xA5;
    if (!ok)
        __atomic_add_fetch(&guard_breaks, 1, __ATOMIC_RELAXED);
}

size_t lt_cuda_guard_breaks(void) { return guard_breaks; }

static void cuda_release(lt_buf *b)
{
    lt_cuda *st = &state;
    /* a failure shows at the next call that checks; the block is still
     * cached, or freed as well as the runtime can */
    (void)on_device();
    if (guard_mode)
        guard_check(b);
    pthread_mutex_lock(&st->mu);
    st->in_use -= b->size;
    if (b->cls >= 0) {
        int c = b->cls;
        if (st->nfree[c] == st->capfree[c]) {
            int nc = st->capfree[c] ? st->capfree[c] * 2 : 8;
            lt_buf **nl = realloc(st->freel[c], sizeof *nl * (size_t)nc);
            if (nl) {
                st->freel[c] = nl;
                st->capfree[c] = nc;
            }
        }
        if (st->nfree[c] < st->capfree[c]) {
            st->freel[c][st->nfree[c]++] = b;
            st->cached += b->size;
            b = NULL;
        }
    }
    pthread_mutex_unlock(&st->mu);
    if (b) {
        cudaFree(b->data); /* only blocks of no class (or when the list could not grow) */
        free(b);
    }
}

void lt_cuda_trim(const lt_backend *be)
{
    lt_cuda *st = lt_cuda_of(be);
    (void)on_device();
    pthread_mutex_lock(&st->mu);
    for (int c = 0; c < LT_CU_CLASSES; c++) {
        for (int i = 0; i < st->nfree[c]; i++) {
            cudaFree(st->freel[c][i]->data);
            free(st->freel[c][i]);
        }
        st->nfree[c] = 0;
    }
    st->cached = 0;
    pthread_mutex_unlock(&st->mu);
}

/* Records what was asked and, in guard mode, writes the guard after it. */
static lt_buf *guarded(lt_buf *b, size_t bytes)
{
    ((cu_buf *)b)->asked = bytes;
    if (guard_mode && cudaMemsetAsync((char *)b->data + bytes, 0xA5, LT_CU_GUARD, state.stream) != cudaSuccess)
        (void)cudaGetLastError();
    return b;
}

lt_buf *lt_cuda_alloc(const lt_backend *be, size_t bytes)
{
    lt_cuda *st = lt_cuda_of(be);
    if (!st->ready || on_device() != cudaSuccess)
        return NULL;
    size_t cap, want = (bytes ? bytes : 1) + (guard_mode ? LT_CU_GUARD : 0);
    int c = size_class(want, &cap);
    lt_buf *b = NULL;
    pthread_mutex_lock(&st->mu);
    if (c >= 0 && st->nfree[c] > 0) {
        b = st->freel[c][--st->nfree[c]];
        st->cached -= b->size;
    }
    if (b) {
        st->in_use += b->size;
        if (st->in_use > st->peak)
            st->peak = st->in_use;
    }
    pthread_mutex_unlock(&st->mu);
    if (b) {
        b->refs = 1;
        return guarded(b, bytes);
    }
    b = calloc(1, sizeof(cu_buf));
    if (!b)
        return NULL;
    void *p = NULL;
    if (cudaMalloc(&p, cap) != cudaSuccess) {
        (void)cudaGetLastError();
        lt_cuda_trim(be); /* give the cache back and try once more */
        if (cudaMalloc(&p, cap) != cudaSuccess) {
            /* the class rounds up by as much as a quarter: the exact size,
             * a block of no class (freed when released), may still fit */
            (void)cudaGetLastError();
            if (cap == want || cudaMalloc(&p, want) != cudaSuccess) {
                (void)cudaGetLastError();
                free(b);
                return NULL;
            }
            cap = want;
            c = -1;
        }
    }
    b->data = p;
    b->size = cap;
    b->cls = c;
    b->refs = 1;
    b->pool = NULL;
    b->be = be;
    b->release = cuda_release;
    pthread_mutex_lock(&st->mu);
    st->mallocs++;
    st->in_use += cap;
    if (st->in_use > st->peak)
        st->peak = st->in_use;
    pthread_mutex_unlock(&st->mu);
    return guarded(b, bytes);
}

size_t lt_cuda_mallocs(const lt_backend *be) { return lt_cuda_of(be)->mallocs; }

void *lt_cuda_workspace(const lt_backend *be, size_t bytes)
{
    /* the caller holds the lock that orders the workspace's users on the
     * stream (conv.c's dnn_mu); a block reused for a larger request than
     * the one its guard sits after is guarded again after this request */
    lt_cuda *st = lt_cuda_of(be);
    if (st->ws && st->ws->size >= bytes + (guard_mode ? LT_CU_GUARD : 0)) {
        if (guard_mode)
            (void)guarded(st->ws, bytes);
        return st->ws->data;
    }
    if (st->ws)
        lt_buf_release(st->ws);
    st->ws = lt_cuda_alloc(be, bytes ? bytes : 1);
    return st->ws ? st->ws->data : NULL;
}

lt_status lt_cuda_scratch(lt_kctx *k, size_t bytes, lt_buf **b)
{
    *b = lt_cuda_alloc(k->be, bytes ? bytes : 1);
    if (!*b) {
        lt_cuda *st = lt_cuda_of(k->be);
        return lt_k_fail(k, LT_ERR_NOMEM, "out of device memory: %zu bytes of scratch asked, %zu in use", bytes,
                         st->in_use);
    }
    return LT_OK;
}

/* ---- uploads ---- */
/* The staging ring (made when the backend opens; without it every upload
 * waits for the stream): 256 slots of pinned memory used in turn. A slot is
 * written only after the event recorded behind its last copy has
 * completed, so a copy never reads bytes written for a later one. */
static void stage_make(lt_cuda *st)
{
    pthread_mutex_init(&st->stage_mu, NULL);
    void *p = NULL;
    if (cudaHostAlloc(&p, (size_t)LT_CU_STAGE_SLOTS * LT_CU_STAGE_SLOT, cudaHostAllocDefault) != cudaSuccess) {
        (void)cudaGetLastError();
        return;
    }
    for (int i = 0; i < LT_CU_STAGE_SLOTS; i++) {
        if (cudaEventCreateWithFlags(&st->stage_ev[i], cudaEventDisableTiming) != cudaSuccess) {
            (void)cudaGetLastError();
            while (i-- > 0)
                cudaEventDestroy(st->stage_ev[i]);
            cudaFreeHost(p);
            return;
        }
    }
    st->stage = p;
}

cudaError_t lt_cuda_upload_bytes(const lt_backend *be, void *dst, const void *src, size_t n)
{
    lt_cuda *st = lt_cuda_of(be);
    if (!n)
        return cudaSuccess;
    if (!st->stage || n > LT_CU_STAGE_SLOT) {
        cudaError_t e = cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, st->stream);
        /* the host bytes may go as soon as we return */
        return e == cudaSuccess ? cudaStreamSynchronize(st->stream) : e;
    }
    pthread_mutex_lock(&st->stage_mu);
    int i = st->stage_next;
    st->stage_next = (i + 1) % LT_CU_STAGE_SLOTS;
    cudaError_t e = st->stage_used[i] ? cudaEventSynchronize(st->stage_ev[i]) : cudaSuccess;
    unsigned char *slot = st->stage + (size_t)i * LT_CU_STAGE_SLOT;
    if (e == cudaSuccess) {
        memcpy(slot, src, n);
        e = cudaMemcpyAsync(dst, slot, n, cudaMemcpyHostToDevice, st->stream);
    }
    if (e == cudaSuccess)
        e = cudaEventRecord(st->stage_ev[i], st->stream);
    st->stage_used[i] = e == cudaSuccess;
    pthread_mutex_unlock(&st->stage_mu);
    return e;
}

/* ---- the vtable ---- */
static lt_status cuda_upload(const lt_backend *be, lt_buf *dst, const void *src, size_t n, lt_err *err)
{
    LT_CUDA_CHECK(err, on_device());
    LT_CUDA_CHECK(err, lt_cuda_upload_bytes(be, dst->data, src, n));
    return LT_OK;
}

static lt_status cuda_download(const lt_backend *be, void *dst, const lt_buf *src, size_t n, lt_err *err)
{
    lt_cuda *st = lt_cuda_of(be);
    if (!n)
        return LT_OK;
    LT_CUDA_CHECK(err, on_device());
    LT_CUDA_CHECK(err, cudaMemcpyAsync(dst, src->data, n, cudaMemcpyDeviceToHost, st->stream));
    LT_CUDA_CHECK(err, cudaStreamSynchronize(st->stream));
    return LT_OK;
}

static lt_status cuda_sync(const lt_backend *be, lt_err *err)
{
    LT_CUDA_CHECK(err, on_device());
    LT_CUDA_CHECK(err, cudaStreamSynchronize(lt_cuda_of(be)->stream));
    return LT_OK;
}

static bool plain_type(const lt_ival *v, bool any)
{
    if (!v)
        return true;
    if (v->type.kind == LT_KIND_CELL) /* a cell's ops (lt_cu_op.cells) take it */
        return false;
    if (v->type.kind != LT_KIND_TENSOR)
        return false;
    return any || v->type.dtype == LT_F32 || v->type.dtype == LT_F64;
}

/* a float32 or float64 accumulation cell */
static bool cell_type(const lt_ival *v)
{
    return v && v->type.kind == LT_KIND_CELL && (v->type.dtype == LT_F32 || v->type.dtype == LT_F64);
}

static pthread_once_t ops_once = PTHREAD_ONCE_INIT;

static void ops_fill(void)
{
    lt_cuda_register_kernels(ops);
    lt_cuda_register_blas(ops);
    lt_cuda_register_dnn(ops);
    lt_cuda_register_norm(ops);
    lt_cuda_register_index(ops);
    lt_cuda_register_cells(ops);
    lt_cuda_register_rnn(ops);
    lt_cuda_register_fused(ops);
}

/* Every node the backend takes runs through here: the thread's device
 * made the backend's, then the op's kernel from the table. */
static lt_status cuda_dispatch(lt_kctx *k)
{
    LT_CUDA_K(k, on_device());
    return ops[k->node->op].fn(k);
}

static lt_kernel_fn cuda_kernel(const lt_backend *be, const lt_node *n, uint64_t *host_inputs)
{
    (void)be;
    *host_inputs = 0;
    pthread_once(&ops_once, ops_fill);
    const lt_cu_op *op = &ops[n->op];
    if (!op->fn || n->nregions > 0 || n->nin > 64)
        return NULL;
    for (int j = 0; j < n->nin; j++)
        if (!plain_type(n->in[j], ((op->host_inputs | op->any_inputs) >> j) & 1) &&
            !(op->cells && j == 0 && cell_type(n->in[j])))
            return NULL;
    /* outputs are float, or (comparisons) bool */
    for (int j = 0; j < n->nout; j++)
        if (n->out[j] && !plain_type(n->out[j], false) &&
            !(n->out[j]->type.kind == LT_KIND_TENSOR && n->out[j]->type.dtype == LT_BOOL) &&
            !(op->cells && j == 0 && cell_type(n->out[j])))
            return NULL;
    if (op->fits && !op->fits(n))
        return NULL;
    *host_inputs = op->host_inputs;
    return cuda_dispatch;
}

lt_kernel_fn lt_cuda_kernel_for(const lt_node *n, uint64_t *host_inputs) { return cuda_kernel(NULL, n, host_inputs); }

/* the training hooks (train.c), on this thread's device */
static lt_status cuda_optim_update(const lt_backend *be, const lt_optim_update *u, lt_err *err)
{
    LT_CUDA_CHECK(err, on_device());
    return lt_cuda_optim_update(be, u, err);
}

static lt_status cuda_sum_squares(const lt_backend *be, const lt_tensor *t, double *out, lt_err *err)
{
    LT_CUDA_CHECK(err, on_device());
    return lt_cuda_sum_squares(be, t, out, err);
}

static lt_status cuda_accumulate(const lt_backend *be, lt_tensor *dst, const lt_tensor *src, lt_err *err)
{
    LT_CUDA_CHECK(err, on_device());
    return lt_cuda_accumulate(be, dst, src, err);
}

static size_t cuda_in_use(const lt_backend *be) { return lt_cuda_of(be)->in_use; }
static size_t cuda_peak(const lt_backend *be) { return lt_cuda_of(be)->peak; }

static const lt_backend cuda_backend = {
    .name = "cuda",
    .host = false,
    .alloc = lt_cuda_alloc,
    .upload = cuda_upload,
    .download = cuda_download,
    .sync = cuda_sync,
    .kernel = cuda_kernel,
    .bytes_in_use = cuda_in_use,
    .peak_bytes = cuda_peak,
    .optim_update = cuda_optim_update,
    .sum_squares = cuda_sum_squares,
    .accumulate = cuda_accumulate,
    .impl = &state,
};

static bool env_on(const char *name, bool dflt)
{
    const char *e = getenv(name);
    if (!e || !*e)
        return dflt;
    return !(strcmp(e, "0") == 0 || strcmp(e, "off") == 0 || strcmp(e, "false") == 0);
}

/* The stream and the cuBLAS and cuDNN handles; on failure those made so
 * far stay for drop_handles. */
static lt_status make_handles(lt_cuda *st, lt_err *err)
{
    /* each kept only once made: a failed create leaves its handle unknown */
    cudaStream_t stream = NULL;
    cublasHandle_t blas = NULL;
    cudnnHandle_t dnn = NULL;
    LT_CUDA_CHECK(err, cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    st->stream = stream;
    LT_CUBLAS_CHECK(err, cublasCreate(&blas));
    st->blas = blas;
    LT_CUBLAS_CHECK(err, cublasSetStream(st->blas, st->stream));
    LT_CUBLAS_CHECK(err, cublasSetMathMode(st->blas, st->tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_PEDANTIC_MATH));
    LT_CUDNN_CHECK(err, cudnnCreate(&dnn));
    st->dnn = dnn;
    LT_CUDNN_CHECK(err, cudnnSetStream(st->dnn, st->stream));
    return LT_OK;
}

/* Gives back what make_handles made when it failed part way (the backend
 * then stays closed for the process, so nothing else holds them). */
static void drop_handles(lt_cuda *st)
{
    if (st->dnn)
        cudnnDestroy(st->dnn);
    if (st->blas)
        cublasDestroy(st->blas);
    if (st->stream)
        cudaStreamDestroy(st->stream);
    st->dnn = NULL;
    st->blas = NULL;
    st->stream = NULL;
    (void)cudaGetLastError();
}

static lt_status open_device(int device, lt_err *err)
{
    lt_cuda *st = &state;
    /* checked mode digests every value's bytes on the host */
    if (lt_checked_memory())
        return lt_errf(err, LT_ERR_UNSUPPORTED, "checked memory mode (LANTERN_CHECKED_MEMORY) runs on the host only");
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        return lt_errf(err, LT_ERR_UNSUPPORTED, "no CUDA device is usable: %s", cudaGetErrorString(e));
    }
    if (count == 0)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "no CUDA device is present");
    if (device >= count)
        return lt_errf(err, LT_ERR_INVALID, "there is no CUDA device %d (%d present)", device, count);
    st->device = device;
    LT_CUDA_CHECK(err, on_device());
    st->tf32 = env_on("LANTERN_TF32", false);
    st->benchmark = env_on("LANTERN_CUDNN_BENCHMARK", true);
    st->log_algos = env_on("LANTERN_CUDNN_LOG", false);
    /* LANTERN_CUDNN_ALGO=fwd:A,data:B,filter:C (any of the three) */
    static const char *const dirs[3] = {"fwd:", "data:", "filter:"};
    const char *fa = getenv("LANTERN_CUDNN_ALGO");
    for (int d = 0; d < 3; d++) {
        const char *at = fa ? strstr(fa, dirs[d]) : NULL;
        st->force_algo[d] = at ? atoi(at + strlen(dirs[d])) : -1;
    }
    guard_mode = env_on("LANTERN_CUDA_GUARD", false);
    lt_status s = make_handles(st, err);
    if (s != LT_OK) {
        drop_handles(st);
        return s;
    }
    stage_make(st);
    return LT_OK;
}

const lt_backend *lt_cuda_backend_open(int device, lt_err *err)
{
    pthread_mutex_lock(&open_mu);
    if (!opened) {
        /* a failed open (cuda:3 on a machine with one device, a busy GPU)
         * leaves the backend closed: a later open tries again */
        lt_err why;
        why.msg[0] = 0;
        if (open_device(device, &why) == LT_OK) {
            pthread_once(&ops_once, ops_fill);
            state.ready = true;
            opened = true;
        } else {
            snprintf(state.why, sizeof state.why, "%s", why.msg);
        }
    }
    pthread_mutex_unlock(&open_mu);
    if (!state.ready) {
        lt_errf(err, LT_ERR_UNSUPPORTED, "the cuda backend cannot run here: %s", state.why);
        return NULL;
    }
    if (device != state.device) {
        lt_errf(err, LT_ERR_UNSUPPORTED, "the cuda backend runs on device %d in this process; cuda:%d cannot be opened too",
                state.device, device);
        return NULL;
    }
    return &cuda_backend;
}
