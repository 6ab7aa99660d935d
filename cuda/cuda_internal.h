/* The CUDA backend's insides: the backend state (device, stream, cuBLAS and
 * cuDNN handles, the device caching pool, the workspace, the cuDNN
 * algorithm cache), the LT_*_CHECK macros that turn CUDA, cuBLAS and cuDNN
 * errors into statuses, and the launchers of our own kernels (kernels.cu). */
#ifndef LT_CUDA_INTERNAL_H
#define LT_CUDA_INTERNAL_H

#include "../runtime/backend.h"
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>
#include <pthread.h>
#include "kernels.h"

/* ---- errors: "file:line: call: the library's message" ---- */
lt_status lt_cuda_errf(lt_err *err, lt_status s, const char *file, int line, const char *call, const char *lib,
                       const char *msg);
/* In a kernel: the same message behind the node's label. */
lt_status lt_cuda_kfail(lt_kctx *k, const char *file, int line, const char *call, const char *lib, const char *msg);

#define LT_CUDA_CHECK(err, call)                                                                                 \
    do {                                                                                                         \
        cudaError_t e_ = (call);                                                                                 \
        if (e_ != cudaSuccess)                                                                                   \
            return lt_cuda_errf((err), e_ == cudaErrorMemoryAllocation ? LT_ERR_NOMEM : LT_ERR_RUNTIME,         \
                                __FILE__, __LINE__, #call, "CUDA", cudaGetErrorString(e_));                      \
    } while (0)
#define LT_CUBLAS_CHECK(err, call)                                                                               \
    do {                                                                                                         \
        cublasStatus_t e_ = (call);                                                                              \
        if (e_ != CUBLAS_STATUS_SUCCESS)                                                                         \
            return lt_cuda_errf((err), LT_ERR_RUNTIME, __FILE__, __LINE__, #call, "cuBLAS",                      \
                                cublasGetStatusString(e_));                                                      \
    } while (0)
#define LT_CUDNN_CHECK(err, call)                                                                                \
    do {                                                                                                         \
        cudnnStatus_t e_ = (call);                                                                               \
        if (e_ != CUDNN_STATUS_SUCCESS)                                                                          \
            return lt_cuda_errf((err), LT_ERR_RUNTIME, __FILE__, __LINE__, #call, "cuDNN",                       \
                                cudnnGetErrorString(e_));                                                        \
    } while (0)
/* The kernel forms (k is the lt_kctx): the node's label comes first. */
#define LT_CUDA_K(k, call)                                                                                       \
    do {                                                                                                         \
        cudaError_t e_ = (call);                                                                                 \
        if (e_ != cudaSuccess)                                                                                   \
            return lt_cuda_kfail((k), __FILE__, __LINE__, #call, "CUDA", cudaGetErrorString(e_));                \
    } while (0)
#define LT_CUBLAS_K(k, call)                                                                                     \
    do {                                                                                                         \
        cublasStatus_t e_ = (call);                                                                              \
        if (e_ != CUBLAS_STATUS_SUCCESS)                                                                         \
            return lt_cuda_kfail((k), __FILE__, __LINE__, #call, "cuBLAS", cublasGetStatusString(e_));           \
    } while (0)
#define LT_CUDNN_K(k, call)                                                                                      \
    do {                                                                                                         \
        cudnnStatus_t e_ = (call);                                                                               \
        if (e_ != CUDNN_STATUS_SUCCESS)                                                                          \
            return lt_cuda_kfail((k), __FILE__, __LINE__, #call, "cuDNN", cudnnGetErrorString(e_));              \
    } while (0)

/* ---- the backend state ---- */
#define LT_CU_CLASSES 192 /* size classes: four per power of two from 512 B */
#define LT_CU_STAGE_SLOTS 256       /* the staging ring: 256 slots of 16 KiB (4 MiB pinned) */
#define LT_CU_STAGE_SLOT (16 << 10)

typedef struct lt_cu_algo lt_cu_algo; /* conv.c */

typedef struct lt_cuda {
    int device;
    bool ready;
    char why[512]; /* why it is not ready */
    cudaStream_t stream;
    cublasHandle_t blas;
    cudnnHandle_t dnn;
    bool tf32;      /* LANTERN_TF32=1: TF32 tensor cores for float32 (off by default) */
    bool benchmark; /* cuDNN algorithms by timing (cudnnFind*AlgorithmEx); LANTERN_CUDNN_BENCHMARK=0: heuristics */
    bool log_algos; /* LANTERN_CUDNN_LOG=1: each convolution algorithm chosen, on stderr */
    int force_algo[3]; /* LANTERN_CUDNN_ALGO: forward, backward data, backward filter (-1: choose) */
    /* the caching pool: per class a stack of free blocks */
    pthread_mutex_t mu;
    lt_buf **freel[LT_CU_CLASSES];
    int nfree[LT_CU_CLASSES], capfree[LT_CU_CLASSES];
    size_t in_use, peak, cached, mallocs;
    /* one workspace, grown to the largest request */
    lt_buf *ws;
    /* cuDNN algorithms chosen per shape key */
    lt_cu_algo *algos;
    /* the pinned staging ring of small uploads: slot i is free again once
     * stage_ev[i] (recorded after its copy) has completed */
    pthread_mutex_t stage_mu;
    unsigned char *stage;
    cudaEvent_t stage_ev[LT_CU_STAGE_SLOTS];
    bool stage_used[LT_CU_STAGE_SLOTS];
    int stage_next;
} lt_cuda;

lt_cuda *lt_cuda_of(const lt_backend *be);
/* Device memory from the pool (NULL: out of memory, even after the cache
 * was given back to the driver). Released with lt_buf_release. */
lt_buf *lt_cuda_alloc(const lt_backend *be, size_t bytes);
/* The workspace, at least bytes long (NULL: out of memory). Valid until the
 * next call; kernels run in order on the one stream. */
void *lt_cuda_workspace(const lt_backend *be, size_t bytes);
/* cudaMalloc calls made so far (a steady-state step makes none). */
size_t lt_cuda_mallocs(const lt_backend *be);
/* Damaged guards seen so far (LANTERN_CUDA_GUARD=1; backend.c). */
size_t lt_cuda_guard_breaks(void);
/* Gives every cached block back to the driver. */
void lt_cuda_trim(const lt_backend *be);

/* The kernel table (kernels.c). */
typedef struct lt_cu_op {
    lt_kernel_fn fn;
    uint64_t host_inputs; /* inputs read on the host */
    uint64_t any_inputs;  /* inputs of any element type (indices, labels, conditions) */
    bool (*fits)(const lt_node *n); /* NULL: every node of the op */
    bool cells; /* input 0 (or, for AccZerosLike, output 0) is an accumulation cell */
} lt_cu_op;
void lt_cuda_register_kernels(lt_cu_op *tab);
void lt_cuda_register_blas(lt_cu_op *tab);
void lt_cuda_register_dnn(lt_cu_op *tab);
void lt_cuda_register_norm(lt_cu_op *tab);
void lt_cuda_register_index(lt_cu_op *tab);
void lt_cuda_register_cells(lt_cu_op *tab);
void lt_cuda_register_rnn(lt_cu_op *tab);
void lt_cuda_register_fused(lt_cu_op *tab);

/* The kernel the cuda backend would run node n with (NULL: the host runs
 * it), as at plan time; needs no device (tests of the kernel table). */
lt_kernel_fn lt_cuda_kernel_for(const lt_node *n, uint64_t *host_inputs);

/* The training hooks (train.c). */
lt_status lt_cuda_optim_update(const lt_backend *be, const lt_optim_update *u, lt_err *err);
lt_status lt_cuda_sum_squares(const lt_backend *be, const lt_tensor *t, double *out, lt_err *err);
lt_status lt_cuda_accumulate(const lt_backend *be, lt_tensor *dst, const lt_tensor *src, lt_err *err);

/* Row-major y [m, n] = alpha op(a) op(b) + beta y on cuBLAS (blas.c), op(a)
 * [m, kk] with leading dimension lda, op(b) [kk, n] with ldb, y dense. */
lt_status lt_cuda_gemm(lt_kctx *k, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                       const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *y);
/* The same into rows of y ldy elements apart. */
lt_status lt_cuda_gemm_ld(lt_kctx *k, bool f64, bool ta, bool tb, int64_t m, int64_t n, int64_t kk, double alpha,
                          const void *a, int64_t lda, const void *b, int64_t ldb, double beta, void *y, int64_t ldy);

/* Device scratch for one kernel: a pool buffer the kernel releases. */
lt_status lt_cuda_scratch(lt_kctx *k, size_t bytes, lt_buf **b);

/* n bytes of the host's at src into device memory at dst, in stream order.
 * src may be reused as soon as this returns: up to LT_CU_STAGE_SLOT bytes
 * go through a slot of a pinned staging ring and the host does not wait
 * for the device; larger copies wait for the stream. */
cudaError_t lt_cuda_upload_bytes(const lt_backend *be, void *dst, const void *src, size_t n);


#endif
