/* Runtime internals: reference-counted buffers from a caching pool, runtime
 * values (tensor, sequence, empty optional), and the kernel interface every
 * backend's kernels are written against. */
#ifndef LT_RUNTIME_H
#define LT_RUNTIME_H

#include "../ir/ir.h"

struct lt_backend;
typedef struct lt_pool lt_pool;

/* Storage shared by tensors that view the same bytes (Reshape, Identity...).
 * be is the backend whose memory holds it: NULL for the host. */
typedef struct lt_buf {
    int64_t refs;
    size_t size; /* bytes usable */
    int cls;     /* pool size class, -1 for oversized */
    void *data;
    lt_pool *pool; /* the pool it returns to */
    const struct lt_backend *be;
    /* set by a backend keeping a pool of its own (device memory): the last
     * lt_buf_release hands the buffer to it instead of to pool */
    void (*release)(struct lt_buf *b);
} lt_buf;

lt_buf *lt_buf_alloc(size_t bytes); /* host pool; NULL on OOM; 64-byte aligned data */
lt_pool *lt_pool_host(void);
lt_pool *lt_pool_new(void); /* a pool of its own (a device-path backend's) */
void lt_pool_free(lt_pool *p); /* every buffer from it must be released first */
lt_buf *lt_pool_alloc(lt_pool *p, size_t bytes);
void lt_pool_trim_pool(lt_pool *p);
size_t lt_pool_in_use_of(lt_pool *p);
size_t lt_pool_peak_of(lt_pool *p);
void lt_buf_retain(lt_buf *b);
void lt_buf_release(lt_buf *b);
void lt_pool_trim(void); /* returns cached blocks to the system */
size_t lt_pool_bytes_in_use(void);
size_t lt_pool_peak_bytes(void);
void lt_pool_reset_peak(void);
/* Counts bytes held outside the pool's blocks (planned arenas) in its in
 * use and peak figures: +n when taken, -n when given back. */
void lt_pool_account(lt_pool *p, int64_t n);
/* Checked memory mode (LANTERN_CHECKED_MEMORY=1 in the environment, read
 * once): released buffers are poisoned, never reused and made unreadable,
 * so a read of one faults with a message; the executor checks that no
 * value changes while it is alive (see exec.c). */
bool lt_checked_memory(void);
/* LANTERN_PROFILE=1: kernel time per op kind, printed at exit (profile.c).
 * Around a kernel call: outer = lt_profile_enter(), then
 * lt_profile_leave(op, ns the call took, outer, whether it ran on a device
 * backend). */
bool lt_profile_enabled(void);
double lt_profile_enter(void);
void lt_profile_leave(int op, double ns, double outer, bool on_device);
/* a copy of an input of an op kind's node to a backend (upload) or back */
void lt_profile_copy(int op, bool upload);
/* A digest of n bytes (checked mode). */
uint64_t lt_bytes_digest(const void *p, size_t n);

/* Allocates an owned tensor (uninitialized data). */
lt_status lt_tensor_alloc(lt_tensor *t, lt_dtype dtype, int rank, const int64_t *dims, lt_err *err);
/* The same in memory of backend be (NULL or the host backend: the host). */
lt_status lt_tensor_alloc_on(lt_tensor *t, const struct lt_backend *be, lt_dtype dtype, int rank, const int64_t *dims,
                             lt_err *err);
/* A new tensor sharing src's storage with another shape (numel must match). */
void lt_tensor_view(lt_tensor *dst, const lt_tensor *src, int rank, const int64_t *dims);
lt_status lt_tensor_clone(lt_tensor *dst, const lt_tensor *src, lt_err *err);
void lt_tensor_release(lt_tensor *t); /* drops the storage reference */

/* ---- runtime values ---- */
typedef enum lt_vk { LT_VAL_TENSOR = 0, LT_VAL_SEQUENCE, LT_VAL_NONE } lt_vk;

struct lt_value {
    lt_vk kind;
    lt_tensor t;      /* LT_VAL_TENSOR */
    int nseq, capseq; /* LT_VAL_SEQUENCE */
    lt_tensor *seq;
    lt_dtype seq_dtype; /* element type of an (empty) sequence */
    /* checked memory mode: a digest of the tensor's bytes taken when the
     * node that made it returned; every later read compares against it */
    bool digest_set;
    uint64_t digest;
};

lt_value *lt_value_new_tensor(void); /* kind TENSOR, empty tensor */
lt_value *lt_value_new_seq(lt_dtype dtype);
lt_value *lt_value_new_none(void);
lt_value *lt_value_ref(const lt_value *v); /* shallow copy sharing buffers */
lt_status lt_seq_append(lt_value *seq, const lt_tensor *t, lt_err *err); /* shares t's buffer */

/* ---- gradient checks on models built in memory (tests) ---- */
typedef lt_status (*lt_model_builder)(void *ctx, lt_model **out, lt_err *err);
lt_status lt_grad_check_built(lt_model_builder build, void *ctx, const lt_grad_opts *o, int n,
                              const char *const *names, lt_value *const *inputs, int max_per_param,
                              lt_gradcheck_row **rows, int *nrows, lt_err *err);

/* ---- kernels ---- */
struct lt_exec;

typedef struct lt_kctx {
    struct lt_exec *ex;
    const lt_node *node;
    int nin, nout;
    lt_value **in;  /* in[i] NULL for an omitted input */
    lt_value **out; /* kernel fills out[i] through the helpers below */
    lt_err *err;
    const struct lt_backend *be; /* the backend running it; NULL: the host */
} lt_kctx;

typedef lt_status (*lt_kernel_fn)(lt_kctx *k);

/* Input i as a tensor, NULL when omitted (or not a tensor). */
const lt_tensor *lt_k_in(lt_kctx *k, int i);
/* Whether output i is wanted (present in the node). */
bool lt_k_want(const lt_kctx *k, int i);
/* Allocates output i as a tensor; returns it in *t. */
lt_status lt_k_out(lt_kctx *k, int i, lt_dtype dtype, int rank, const int64_t *dims, lt_tensor **t);
/* The same for a kernel that can write output i over input j: it reads
 * each element of input j before it writes the output element at the same
 * index, and input j has output i's dtype and shape. The executor hands it
 * input j's storage when its plan lets it (input j's buffer dies at this
 * node, nothing else holds it), else fresh memory. */
lt_status lt_k_out_over(lt_kctx *k, int i, int j, lt_dtype dtype, int rank, const int64_t *dims, lt_tensor **t);
/* Output i views src's storage with a new shape (numel must match). */
lt_status lt_k_out_view(lt_kctx *k, int i, const lt_tensor *src, int rank, const int64_t *dims);
/* Output i takes any value (sequence, optional); the kernel gives up v. */
void lt_k_out_value(lt_kctx *k, int i, lt_value *v);
/* Fails with "file: node 'name' (Op): <message>". */
lt_status lt_k_fail(lt_kctx *k, lt_status s, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Scratch memory valid until the kernel returns (per-node arena frame). */
void *lt_k_scratch(lt_kctx *k, size_t bytes);
/* Runs region block b with the given parameter values; results[] receives
 * new references (caller releases with lt_value_free). */
lt_status lt_k_run_block(lt_kctx *k, const lt_block *b, lt_value *const *args, lt_value **results);
/* Whether the lt_set_interrupt flag is up: loops check it per iteration. */
bool lt_k_interrupted(void);
/* The module the kernel's node belongs to. */
const lt_module *lt_k_module(lt_kctx *k);
/* whether the model was written by PyTorch's exporters (producer "pytorch"):
 * where the ONNX reference and PyTorch differ, such a file runs as PyTorch
 * computes it */
bool lt_k_from_pytorch(lt_kctx *k);
/* Function fi of the module (for Call), NULL when out of range. */
const lt_func *lt_k_callee(lt_kctx *k, int64_t fi);
/* Seeded RNG owned by the executor (Dropout, Random*). */
uint64_t lt_k_rand_u64(lt_kctx *k);

/* Kernel table for the CPU backend: filled once by the family registrars. */
extern lt_kernel_fn lt_cpu_kernels[LT_OP_COUNT];
void lt_cpu_kernels_init(void);

/* One registrar per family (runtime/cpu/<family>.c). */
void lt_cpu_register_elementwise(lt_kernel_fn *tab);
void lt_cpu_register_reduce(lt_kernel_fn *tab);
void lt_cpu_register_nn(lt_kernel_fn *tab);
void lt_cpu_register_tensor(lt_kernel_fn *tab);
void lt_cpu_register_linalg(lt_kernel_fn *tab);
void lt_cpu_register_rnn(lt_kernel_fn *tab);
void lt_cpu_register_control(lt_kernel_fn *tab);
void lt_cpu_register_norm(lt_kernel_fn *tab);
void lt_cpu_register_index(lt_kernel_fn *tab);
void lt_cpu_register_image(lt_kernel_fn *tab);
void lt_cpu_register_misc(lt_kernel_fn *tab);
void lt_cpu_register_grad_nn(lt_kernel_fn *tab);
void lt_cpu_register_grad_misc(lt_kernel_fn *tab);
void lt_cpu_register_grad_rnn(lt_kernel_fn *tab);
void lt_cpu_register_grad_sampling(lt_kernel_fn *tab);

/* ---- sessions and backends (backend.h) ---- */
struct lt_copy_stats;
/* Runs the session's nodes on backend be from now on (its plans are made
 * again; the default comes from LANTERN_BACKEND, "cpu" when unset). */
lt_status lt_session_set_backend(lt_session *s, const struct lt_backend *be, lt_err *err);
const struct lt_backend *lt_session_backend(const lt_session *s);
/* Runs read module parameter p from t, a tensor in the memory of the
 * session's backend (retained), instead of the module's host data, until
 * bound again (t NULL: the host data). The trainer keeps its parameters on
 * a device this way. */
lt_status lt_session_bind_param(lt_session *s, int p, const lt_tensor *t, lt_err *err);
/* keep: lt_session_run leaves its results where they were made (backend
 * memory) instead of bringing them to the host. */
void lt_session_keep_results(lt_session *s, bool keep);
/* Copies and nodes on each side during the last lt_session_run. */
void lt_session_copy_stats(const lt_session *s, struct lt_copy_stats *out);

#endif
