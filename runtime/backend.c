/* The backends lantern has: the host CPU, and the CPU behind the device
 * path (see backend.h), plus moving values between a backend and the host. */
#include "backend.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- the host CPU ---- */
static lt_buf *host_alloc(const lt_backend *be, size_t bytes)
{
    (void)be;
    return lt_buf_alloc(bytes);
}

static lt_status host_copy_in(const lt_backend *be, lt_buf *dst, const void *src, size_t n, lt_err *err)
{
    (void)be;
    (void)err;
    if (n)
        memcpy(dst->data, src, n);
    return LT_OK;
}

static lt_status host_copy_out(const lt_backend *be, void *dst, const lt_buf *src, size_t n, lt_err *err)
{
    (void)be;
    (void)err;
    if (n)
        memcpy(dst, src->data, n);
    return LT_OK;
}

static lt_status no_sync(const lt_backend *be, lt_err *err)
{
    (void)be;
    (void)err;
    return LT_OK;
}

static lt_kernel_fn host_kernel(const lt_backend *be, const lt_node *n, uint64_t *host_inputs)
{
    (void)be;
    *host_inputs = ~(uint64_t)0;
    return lt_cpu_kernels[n->op];
}

static size_t host_in_use(const lt_backend *be)
{
    (void)be;
    return lt_pool_bytes_in_use();
}

static size_t host_peak(const lt_backend *be)
{
    (void)be;
    return lt_pool_peak_bytes();
}

static const lt_backend cpu_backend = {
    .name = "cpu",
    .host = true,
    .alloc = host_alloc,
    .upload = host_copy_in,
    .download = host_copy_out,
    .sync = no_sync,
    .kernel = host_kernel,
    .bytes_in_use = host_in_use,
    .peak_bytes = host_peak,
};

const lt_backend *lt_backend_cpu(void) { return &cpu_backend; }

/* ---- the CPU behind the device path ----
 * Its memory comes from a pool of its own. Its kernels are the CPU's, for
 * the ops a device backend runs; the rest (control flow, sequences,
 * optionals, strings, function calls, accumulator cells, and the ops whose
 * output shape depends on input values) run on the host. */
static lt_pool *device_pool;
static pthread_once_t device_once = PTHREAD_ONCE_INIT;

static void device_pool_make(void) { device_pool = lt_pool_new(); }

static lt_buf *device_alloc(const lt_backend *be, size_t bytes)
{
    pthread_once(&device_once, device_pool_make);
    if (!device_pool)
        return NULL;
    lt_buf *b = lt_pool_alloc(device_pool, bytes);
    if (b)
        b->be = be;
    return b;
}

/* Ops the device path leaves to the host (Constant too, as cuda does: a
 * float constant a device node reads goes up with it). */
static const char *const HOST_OPS[] = {
    "Constant", "If", "Loop", "Scan", "Call", "Shape", "Size", "NonZero", "Unique", "Range", "Compress",
    "NonMaxSuppression", "StringNormalizer", "StringConcat", "StringSplit", "RegexFullMatch", "ImageDecoder",
    "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength",
    "SequenceMap", "SplitToSequence", "ConcatFromSequence", "Optional", "OptionalGetElement",
    "OptionalHasElement",
};

/* The accumulation-cell ops: a cell is a tensor in the memory of the side
 * that made it (AccZerosLike), updated in place there. */
static bool cell_kind_ok(const lt_node *n, int j, bool out)
{
    const lt_ival *v = out ? n->out[j] : n->in[j];
    if (!v || v->type.kind != LT_KIND_CELL)
        return false;
    switch (n->op) {
    case LT_OP_ACC_ZEROS_LIKE:
        return out && j == 0;
    case LT_OP_ACC_ADD:
    case LT_OP_ACC_GEMM:
    case LT_OP_ACC_READ:
        return !out && j == 0;
    default:
        return false;
    }
}

/* Inputs a device op reads on the host: shapes, axes, sizes, counts. */
static const struct {
    const char *op;
    uint64_t mask;
} HOST_INPUTS[] = {
    {"ConstantOfShape", 1u},
    {"Reshape", 1u << 1},       {"Expand", 1u << 1},          {"Tile", 1u << 1},
    {"Slice", 0x1Eu},           {"SliceGrad", 0x3Cu},         {"Pad", (1u << 1) | (1u << 3)},
    {"PadGrad", (1u << 2) | (1u << 4)}, {"Resize", 0xEu},     {"ResizeGrad", 0x1Cu},
    {"Upsample", 1u << 1},      {"TopK", 1u << 1},            {"Unsqueeze", 1u << 1},
    {"Squeeze", 1u << 1},       {"ReduceSum", 1u << 1},       {"ReduceMean", 1u << 1},
    {"ReduceMax", 1u << 1},     {"ReduceMin", 1u << 1},       {"ReduceProd", 1u << 1},
    {"ReduceL1", 1u << 1},      {"ReduceL2", 1u << 1},        {"ReduceLogSum", 1u << 1},
    {"ReduceLogSumExp", 1u << 1}, {"ReduceSumSquare", 1u << 1}, {"OneHot", 1u << 1},
    {"CumSum", 1u << 1},        {"Split", 1u << 1},           {"Dropout", (1u << 1) | (1u << 2)},
    {"Trilu", 1u << 1},         {"CenterCropPad", 1u << 1},   {"Col2Im", (1u << 1) | (1u << 2)},
    {"Col2ImGrad", (1u << 2) | (1u << 3)}, {"STFT", (1u << 1) | (1u << 3)}, {"DFT", (1u << 1) | (1u << 2)},
};

static lt_kernel_fn device_kernel(const lt_backend *be, const lt_node *n, uint64_t *host_inputs)
{
    (void)be;
    *host_inputs = 0;
    if (n->nregions > 0 || n->nin > 64)
        return NULL;
    const char *op = lt_op_names[n->op];
    for (size_t i = 0; i < sizeof HOST_OPS / sizeof *HOST_OPS; i++)
        if (strcmp(op, HOST_OPS[i]) == 0)
            return NULL;
    for (int j = 0; j < n->nin; j++)
        if (n->in[j] && n->in[j]->type.kind != LT_KIND_TENSOR && !cell_kind_ok(n, j, false))
            return NULL;
    for (int j = 0; j < n->nout; j++)
        if (n->out[j] && n->out[j]->type.kind != LT_KIND_TENSOR && !cell_kind_ok(n, j, true))
            return NULL;
    for (size_t i = 0; i < sizeof HOST_INPUTS / sizeof *HOST_INPUTS; i++)
        if (strcmp(op, HOST_INPUTS[i].op) == 0)
            *host_inputs = HOST_INPUTS[i].mask;
    return lt_cpu_kernels[n->op];
}

static size_t device_in_use(const lt_backend *be)
{
    (void)be;
    pthread_once(&device_once, device_pool_make);
    return device_pool ? lt_pool_in_use_of(device_pool) : 0;
}

static size_t device_peak(const lt_backend *be)
{
    (void)be;
    pthread_once(&device_once, device_pool_make);
    return device_pool ? lt_pool_peak_of(device_pool) : 0;
}

/* Training on the device path: the host's loops over its (host-addressable) memory. */
static lt_status device_optim_update(const lt_backend *be, const lt_optim_update *u, lt_err *err)
{
    (void)be;
    (void)err;
    lt_cpu_optim_update(u);
    return LT_OK;
}

static lt_status device_sum_squares(const lt_backend *be, const lt_tensor *t, double *out, lt_err *err)
{
    (void)be;
    double s = 0;
    if (t->dtype == LT_F32) {
        const float *d = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            s += (double)d[i] * d[i];
    } else if (t->dtype == LT_F64) {
        const double *d = t->data;
        for (int64_t i = 0; i < t->numel; i++)
            s += d[i] * d[i];
    } else {
        return lt_errf(err, LT_ERR_INTERNAL, "sum of squares of a %s tensor", lt_dtype_name(t->dtype));
    }
    *out = s;
    return LT_OK;
}

static lt_status device_accumulate(const lt_backend *be, lt_tensor *dst, const lt_tensor *src, lt_err *err)
{
    (void)be;
    if (!src) {
        memset(dst->data, 0, lt_tensor_nbytes(dst));
        return LT_OK;
    }
    if (src->dtype != dst->dtype || src->numel != dst->numel || (dst->dtype != LT_F32 && dst->dtype != LT_F64))
        return lt_errf(err, LT_ERR_INTERNAL, "accumulating a %s[%lld] into a %s[%lld]", lt_dtype_name(src->dtype),
                       (long long)src->numel, lt_dtype_name(dst->dtype), (long long)dst->numel);
    if (dst->dtype == LT_F32) {
        float *d = dst->data;
        const float *a = src->data;
        for (int64_t i = 0; i < dst->numel; i++)
            d[i] += a[i];
    } else {
        double *d = dst->data;
        const double *a = src->data;
        for (int64_t i = 0; i < dst->numel; i++)
            d[i] += a[i];
    }
    return LT_OK;
}

static const lt_backend cpu_device_backend = {
    .name = "cpu-device",
    .host = false,
    .alloc = device_alloc,
    .upload = host_copy_in,
    .download = host_copy_out,
    .sync = no_sync,
    .kernel = device_kernel,
    .bytes_in_use = device_in_use,
    .peak_bytes = device_peak,
    .optim_update = device_optim_update,
    .sum_squares = device_sum_squares,
    .accumulate = device_accumulate,
};

const lt_backend *lt_backend_cpu_device(void) { return &cpu_device_backend; }

#ifdef LANTERN_HAVE_CUDA
const lt_backend *lt_cuda_backend_open(int device, lt_err *err); /* cuda/backend.c */
#endif

const lt_backend *lt_backend_cuda(int device, lt_err *err)
{
#ifdef LANTERN_HAVE_CUDA
    return lt_cuda_backend_open(device, err);
#else
    (void)device;
    lt_errf(err, LT_ERR_UNSUPPORTED,
            "this lantern was built without the cuda backend (configure with -DLANTERN_CUDA=ON where nvcc, "
            "cuBLAS and cuDNN 9 are found)");
    return NULL;
#endif
}

const lt_backend *lt_backend_open(const char *name, lt_err *err)
{
    if (strcmp(name, "cpu") == 0)
        return &cpu_backend;
    if (strcmp(name, "cpu-device") == 0)
        return &cpu_device_backend;
    if (strncmp(name, "cuda", 4) == 0 && (name[4] == 0 || name[4] == ':')) {
        long dev = 0;
        if (name[4] == ':') {
            char *end;
            dev = strtol(name + 5, &end, 10);
            if (end == name + 5 || *end || dev < 0 || dev > 1023) {
                lt_errf(err, LT_ERR_INVALID, "'%s': a CUDA device is cuda or cuda:N with N a device number", name);
                return NULL;
            }
        }
        return lt_backend_cuda((int)dev, err);
    }
    lt_errf(err, LT_ERR_INVALID, "'%s' names no backend (cpu, cpu-device, cuda, cuda:N)", name);
    return NULL;
}

const lt_backend *lt_backend_named(const char *name)
{
    lt_err err;
    return lt_backend_open(name, &err);
}

const lt_backend *lt_backend_from_env(lt_err *err)
{
    const char *e = getenv("LANTERN_BACKEND");
    if (!e || !*e)
        return &cpu_backend;
    lt_err why;
    const lt_backend *be = lt_backend_open(e, &why);
    if (!be)
        lt_errf(err, LT_ERR_INVALID, "LANTERN_BACKEND=%s: %s", e, why.msg);
    return be;
}

/* ---- values crossing between a backend and the host ---- */
static const lt_backend *tensor_backend(const lt_tensor *t)
{
    return t->buf && t->buf->be && !t->buf->be->host ? t->buf->be : NULL;
}

const lt_backend *lt_value_backend(const lt_value *v)
{
    if (!v)
        return NULL;
    if (v->kind == LT_VAL_TENSOR)
        return tensor_backend(&v->t);
    for (int i = 0; i < v->nseq; i++)
        if (tensor_backend(&v->seq[i]))
            return tensor_backend(&v->seq[i]);
    return NULL;
}

/* dst = a copy of src's elements in memory of `to` (NULL: the host). */
static lt_status move_tensor(lt_tensor *dst, const lt_tensor *src, const lt_backend *to, lt_copy_stats *stats,
                             lt_err *err)
{
    const lt_backend *from = tensor_backend(src);
    size_t n = lt_tensor_nbytes(src);
    lt_buf *b = to ? to->alloc(to, n ? n : 1) : lt_buf_alloc(n ? n : 1);
    if (!b) {
        if (to)
            return lt_errf(err, LT_ERR_NOMEM, "out of %s memory copying %zu bytes there (%zu bytes of it in use)",
                           to->name, n, to->bytes_in_use(to));
        return lt_errf(err, LT_ERR_NOMEM, "out of memory copying %zu bytes to the host", n);
    }
    lt_status s;
    if (to) { /* host -> device (a device -> device move goes through the host) */
        s = to->upload(to, b, src->data, n, err);
        if (stats) {
            stats->uploads++;
            stats->upload_bytes += n;
        }
    } else {
        lt_buf view = *src->buf;
        view.data = src->data; /* a view may start inside its buffer */
        s = from->download(from, b->data, &view, n, err);
        if (stats) {
            stats->downloads++;
            stats->download_bytes += n;
        }
    }
    if (s != LT_OK) {
        lt_buf_release(b);
        return s;
    }
    *dst = *src;
    dst->buf = b;
    dst->data = b->data;
    return LT_OK;
}

lt_status lt_value_move(const lt_value *v, const lt_backend *to, lt_value **out, lt_copy_stats *stats, lt_err *err)
{
    *out = NULL;
    if (to && to->host)
        to = NULL;
    if (!v || v->kind == LT_VAL_NONE)
        return LT_OK;
    if (v->kind == LT_VAL_TENSOR) {
        if (tensor_backend(&v->t) == to || v->t.dtype == LT_STRING)
            return LT_OK;
        lt_value *nv = lt_value_new_tensor();
        if (!nv)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        lt_status s = move_tensor(&nv->t, &v->t, to, stats, err);
        if (s != LT_OK) {
            free(nv);
            return s;
        }
        nv->digest_set = v->digest_set;
        nv->digest = v->digest;
        *out = nv;
        return LT_OK;
    }
    /* a sequence lives on the host: its elements come back there */
    bool any = false;
    for (int i = 0; i < v->nseq; i++)
        any = any || tensor_backend(&v->seq[i]) != to;
    if (!any)
        return LT_OK;
    lt_value *nv = lt_value_new_seq(v->seq_dtype);
    if (!nv)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < v->nseq; i++) {
        lt_tensor t;
        lt_status s;
        if (tensor_backend(&v->seq[i]) == to) {
            s = lt_seq_append(nv, &v->seq[i], err);
        } else {
            s = move_tensor(&t, &v->seq[i], to, stats, err);
            if (s == LT_OK) {
                s = lt_seq_append(nv, &t, err);
                lt_tensor_release(&t);
            }
        }
        if (s != LT_OK) {
            lt_value_free(nv);
            return s;
        }
    }
    *out = nv;
    return LT_OK;
}
