/* The backend interface: where values live and which kernels run them.
 *
 * A backend owns memory (buffers from its pool, tagged with it), copies
 * between that memory and the host's, a synchronisation point, and a kernel
 * table it answers for node by node. The executor runs each node on the
 * session's backend when that backend has a kernel for it, and on the host
 * CPU otherwise; a value crossing between the two is copied explicitly, once
 * per crossing, and counted. Inputs a backend reads on the host (shape
 * tensors, axes, counts: the host_inputs mask) are copied to the host first,
 * as a GPU backend must; control flow runs on the host and reads its
 * conditions there.
 *
 * Whatever the backend, the executor keeps on the host the nodes that read
 * and make only small integer and boolean tensors (loop counters,
 * conditions, shapes), so no condition is read back from a device; an
 * accumulation cell lives where AccZerosLike made it and the ops on it run
 * there; a call's arguments and the inputs read for their shape only
 * (Shape, Size, AccZerosLike, GatherGrad's data, SliceGrad's x) are never
 * copied.
 *
 * Three backends exist: "cpu", the host itself (no copies ever),
 * "cpu-device", the CPU kernels behind the device path (memory from a pool
 * of its own, every crossing an explicit copy, control flow, sequences,
 * strings and shape-producing ops falling back to the host), so that every
 * edge a GPU backend has is exercised on a machine without one, and "cuda"
 * (cuda/, where built). The backend of a session comes from
 * lt_session_set_backend or LANTERN_BACKEND. */
#ifndef LT_BACKEND_H
#define LT_BACKEND_H

#include "runtime.h"

typedef struct lt_backend lt_backend;
typedef struct lt_optim_update lt_optim_update;

struct lt_backend {
    const char *name;
    bool host; /* its memory is the host's: no copies at its edges */
    /* a buffer of its memory (NULL when out of memory), tagged with it */
    lt_buf *(*alloc)(const lt_backend *be, size_t bytes);
    /* host -> backend and backend -> host copies of n bytes */
    lt_status (*upload)(const lt_backend *be, lt_buf *dst, const void *src, size_t n, lt_err *err);
    lt_status (*download)(const lt_backend *be, void *dst, const lt_buf *src, size_t n, lt_err *err);
    /* waits for every kernel and copy issued so far */
    lt_status (*sync)(const lt_backend *be, lt_err *err);
    /* its kernel for node n, NULL when it has none; *host_inputs gets bit j
     * set for each input j it reads on the host */
    lt_kernel_fn (*kernel)(const lt_backend *be, const lt_node *n, uint64_t *host_inputs);
    /* bytes of its memory in use now and at most since it was made */
    size_t (*bytes_in_use)(const lt_backend *be);
    size_t (*peak_bytes)(const lt_backend *be);
    /* Training in its memory (all three NULL where it has none: the trainer
     * then keeps parameters and the optimizer on the host). One fused
     * optimizer step over one tensor (lt_optim_update); the sum of the
     * squares of a float tensor's elements, in float64 (gradient clipping);
     * dst += src over float tensors of one type and size, or dst = 0 when
     * src is NULL (gradient accumulation). */
    lt_status (*optim_update)(const lt_backend *be, const lt_optim_update *u, lt_err *err);
    lt_status (*sum_squares)(const lt_backend *be, const lt_tensor *t, double *out, lt_err *err);
    lt_status (*accumulate)(const lt_backend *be, lt_tensor *dst, const lt_tensor *src, lt_err *err);
    void *impl;
};

/* One optimizer step over one tensor of n elements (float32 or float64),
 * every pointer in the memory of the backend running it: the formulas of
 * train/optim.c, with the step's scalars computed once on the host. The
 * gradient used is g * scale (+ wd * p for L2 weight decay, all but AdamW). */
struct lt_optim_update {
    lt_optim_kind kind;
    lt_dtype dtype;
    int64_t n;
    void *p;
    const void *g;
    void *s1, *s2; /* momentum / sum of squares / first moment; second moment (NULL when unused) */
    double lr, scale, wd, mu, b1, b2, eps;
    /* 1 - b1 and 1 - b2 taken in double (as PyTorch does): in float, 1 -
     * 0.999f is 1.3e-5 off, and Adam's steps 6e-6 too long */
    double one_b1, one_b2;
    double adam_step;    /* lr / (1 - b1^t) */
    double inv_sqrt_bc2; /* 1 / sqrt(1 - b2^t) */
    double decay;        /* AdamW: 1 - lr * wd; else 1 */
};

/* The host's loop for one update (runtime/cpu/optim_update.c): what
 * train/optim.c runs on the host and the cpu-device backend's hook runs. */
void lt_cpu_optim_update(const lt_optim_update *u);

/* The host CPU backend, and the CPU device-path backend. */
const lt_backend *lt_backend_cpu(void);
const lt_backend *lt_backend_cpu_device(void);
/* The CUDA backend on device N (cuda/): NULL, and err saying why, when
 * lantern was built without it or no such device is present. One device per
 * process: the first one opened stays the backend's. */
const lt_backend *lt_backend_cuda(int device, lt_err *err);
/* By name ("cpu", "cpu-device", "cuda", "cuda:N"); NULL for an unknown name
 * or a backend that cannot run here (lt_backend_open says why). */
const lt_backend *lt_backend_named(const char *name);
/* The same, with err set to one line saying why when it gives NULL. */
const lt_backend *lt_backend_open(const char *name, lt_err *err);
/* LANTERN_BACKEND from the environment, "cpu" when unset; NULL (and err
 * set) when it names no backend or one that cannot run here. */
const lt_backend *lt_backend_from_env(lt_err *err);

/* Copies at the edges of a backend, counted per session run. */
typedef struct lt_copy_stats {
    uint64_t uploads, downloads;             /* tensors copied each way */
    uint64_t upload_bytes, download_bytes;   /* their bytes */
    uint64_t device_nodes, host_nodes;       /* nodes run on each side */
} lt_copy_stats;

/* The backend holding v's storage: NULL for the host (and for values with
 * no storage: empty optionals, borrowed parameter data). */
const lt_backend *lt_value_backend(const lt_value *v);
/* Moves v to backend to (NULL: the host). *out is NULL when v is already
 * there (nothing to do), else a new value holding a copy; stats counts it. */
lt_status lt_value_move(const lt_value *v, const lt_backend *to, lt_value **out, lt_copy_stats *stats,
                        lt_err *err);

#endif
