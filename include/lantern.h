/* lantern: the one public header. Opaque handles, status codes, the tensor
 * descriptor and the library API the `lantern` command is built on. */
#ifndef LANTERN_H
#define LANTERN_H

#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header; lt_version() gives the library's. */
#define LT_VERSION_MAJOR 0
#define LT_VERSION_MINOR 7
#define LT_VERSION_PATCH 0
#define LT_VERSION_NUMBER (LT_VERSION_MAJOR * 10000 + LT_VERSION_MINOR * 100 + LT_VERSION_PATCH)

/* "MAJOR.MINOR.PATCH" of the library linked in. */
const char *lt_version(void);

/* Threads and lifetimes.
 * - A model must outlive every session made from it (lt_session_free each
 *   before lt_model_free); a trainer owns the models and sessions it makes.
 * - Each session plans the blocks it runs itself, so several sessions of one
 *   model may run in different threads at once. One session (or one
 *   trainer) must not be used by two threads at once.
 * - lt_model_grad, lt_model_tie_transposed and lt_model_to_f64 rewrite the
 *   model: they refuse (LT_ERR_INVALID) while sessions of it are live.
 *   lt_model_grad runs once per model; a second call is refused.
 * - lt_set_interrupt and lt_set_num_threads are process-wide.
 * - Arguments: the functions returning lt_status refuse a NULL for a pointer
 *   they need with LT_ERR_INVALID and a message naming the function and the
 *   argument (err itself may be NULL everywhere); accessors give NULL (-1
 *   for kinds and ranks) for an index out of range. A caller's lt_tensor has
 *   numel equal to the product of its dims and data holding that many
 *   elements (lt_value_from_tensor, lt_model_set_param and
 *   lt_dataset_from_arrays refuse a numel that disagrees). */

typedef enum lt_status {
    LT_OK = 0,
    LT_ERR_INVALID,     /* malformed input: model, tensor file, arguments */
    LT_ERR_UNSUPPORTED, /* valid input that lantern cannot handle (yet) */
    LT_ERR_NOMEM,       /* an allocation failed; the message gives the size */
    LT_ERR_IO,          /* a file could not be read or written */
    LT_ERR_RUNTIME,     /* a failure of the run itself: a CUDA, cuBLAS or cuDNN call, a thread that
                           would not start, a training loss that diverged (a CPU kernel refusing
                           what a model or its values hold is LT_ERR_INVALID) */
    LT_ERR_INTERNAL,    /* a lantern bug */
    LT_ERR_INTERRUPTED  /* stopped by the flag given to lt_set_interrupt (Ctrl-C) */
} lt_status;

/* A status's name ("ok", "invalid input", ...), static storage; "unknown
 * status" for a value outside the enum. */
const char *lt_status_str(lt_status s);

/* Error message carrier: library functions that fail fill msg with one line
 * naming the file, node and op involved. */
#define LT_ERR_MSG_MAX 1024
typedef struct lt_err {
    char msg[LT_ERR_MSG_MAX];
} lt_err;

/* Strings from files (names, producer, op types, string tensor values) for a
 * terminal: control and non-printable bytes, C1 controls and bidi overrides
 * become \xNN; UTF-8 text stays as it is. lt_str_printable truncates to fit
 * len and returns buf. */
void lt_fputs_printable(const char *s, FILE *f);
const char *lt_str_printable(const char *s, char *buf, size_t len);

/* Element types use ONNX TensorProto.DataType numbering. The types narrower
 * than a byte (int4, uint4, int2, uint2, float4e2m1) are held one element
 * per byte in memory: int4/int2 as a sign-extended int8, uint4/uint2 as a
 * uint8, float4e2m1 as its 4-bit code in the low bits. Files pack them
 * (two or four to a byte, first element in the low bits) as ONNX does. The
 * float8 types are their 8-bit codes. */
typedef enum lt_dtype {
    LT_UNDEFINED = 0,
    LT_F32 = 1,
    LT_U8 = 2,
    LT_I8 = 3,
    LT_U16 = 4,
    LT_I16 = 5,
    LT_I32 = 6,
    LT_I64 = 7,
    LT_STRING = 8,
    LT_BOOL = 9,
    LT_F16 = 10,
    LT_F64 = 11,
    LT_U32 = 12,
    LT_U64 = 13,
    LT_C64 = 14,
    LT_C128 = 15,
    LT_BF16 = 16,
    LT_F8E4M3FN = 17,
    LT_F8E4M3FNUZ = 18,
    LT_F8E5M2 = 19,
    LT_F8E5M2FNUZ = 20,
    LT_U4 = 21,
    LT_I4 = 22,
    LT_F4E2M1 = 23,
    LT_F8E8M0 = 24,
    LT_U2 = 25,
    LT_I2 = 26,
    LT_DTYPE_COUNT
} lt_dtype;

/* The type's ONNX-style name ("float32", "int64", ...), static storage;
 * "invalid" for a value outside the enum. */
const char *lt_dtype_name(lt_dtype t);
size_t lt_dtype_size(lt_dtype t); /* 0 for types lantern cannot hold */

#define LT_MAX_RANK 8

/* A dense, row-major tensor. `data` points at numel * lt_dtype_size(dtype)
 * bytes (STRING tensors hold numel `char *`). */
typedef struct lt_tensor {
    lt_dtype dtype;
    int rank;
    int64_t dims[LT_MAX_RANK];
    int64_t numel;
    void *data;
    struct lt_buf *buf; /* owning storage; NULL when data is borrowed */
} lt_tensor;

/* ---- runtime values: tensors, sequences, optionals ---- */
typedef struct lt_value lt_value;

typedef enum lt_value_kind { LT_VALUE_TENSOR = 0, LT_VALUE_SEQUENCE, LT_VALUE_OPTIONAL } lt_value_kind;

/* Reads a .npy file, or a .pb file holding an ONNX TensorProto (or, by kind,
 * a SequenceProto / OptionalProto). *out is the caller's: lt_value_free. */
lt_status lt_value_load(const char *path, lt_value **out, lt_err *err);
/* As lt_value_load, with the .pb file read as kind says (TensorProto,
 * SequenceProto or OptionalProto); a .npy file is always a tensor.
 * lt_value_load is lt_value_load_as(path, LT_VALUE_TENSOR, ...). */
lt_status lt_value_load_as(const char *path, lt_value_kind kind, lt_value **out, lt_err *err);
/* Writes tensor value v (it stays the caller's) as a .npy file at path,
 * atomically (a temp file in the same folder, then rename); the folder must
 * exist. Types NumPy lacks are widened: int4/int2 as int8, uint4/uint2 as
 * uint8, bfloat16, float8 and float4 as float32. Sequences and optionals
 * are LT_ERR_UNSUPPORTED. */
lt_status lt_value_save_npy(const lt_value *v, const char *path, lt_err *err);
/* Releases a value (NULL does nothing). */
void lt_value_free(lt_value *v);
/* A float64 copy of a float32, float16 or bfloat16 tensor value; any other
 * value is shared as it is (free the result with lt_value_free). NULL when
 * out of memory or v is NULL. */
lt_value *lt_value_to_f64(const lt_value *v);
/* The tensor inside a tensor value, NULL for sequences and empty optionals. */
const lt_tensor *lt_value_tensor(const lt_value *v);
/* One-line description ("float32[2,3] 0.1 0.2 ..." or "seq(3)"; "null"
 * for NULL). */
void lt_value_describe(const lt_value *v, int max_elems, FILE *f);
/* Compares two values (releases neither) with ONNX backend tolerances,
 * |a-b| <= atol + rtol*|b|: 1 when every element is close, else 0 with the
 * first difference described in why (may be NULL, why_len bytes). A NULL
 * value gives 0. */
int lt_value_close(const lt_value *got, const lt_value *want, double rtol, double atol,
                   char *why, size_t why_len);
/* A value holding a copy of t's elements (t stays the caller's; borrowed
 * data is fine); *out is the caller's: lt_value_free. t->numel must equal
 * the product of t->dims (LT_ERR_INVALID naming both otherwise). */
lt_status lt_value_from_tensor(const lt_tensor *t, lt_value **out, lt_err *err);

/* ---- models ---- */
typedef struct lt_model lt_model;

/* Reads, validates, imports, infers shapes and verifies. *out is the
 * caller's: lt_model_free (NULL does nothing), after every session made
 * from it. Names it returns (inputs, outputs, parameters) live as long as
 * the model. */
lt_status lt_model_load(const char *path, lt_model **out, lt_err *err);
/* As lt_model_load, from the len bytes of an ONNX ModelProto at data, which
 * are only read during the call (the model keeps copies of what it needs;
 * the buffer may be freed at once). name stands for the file in messages
 * and lt_model_export's (NULL: "<buffer>"); base_dir is the folder that
 * external data locations are relative to (NULL: a model with external
 * data is refused). */
lt_status lt_model_load_buffer(const void *data, size_t len, const char *name,
                               const char *base_dir, lt_model **out, lt_err *err);
void lt_model_free(lt_model *m);

/* Human summary for `lantern import`; sets *n_unsupported (may be NULL) to
 * the number of nodes whose op has no CPU kernel. */
void lt_model_summary(const lt_model *m, FILE *f, int *n_unsupported);
/* The IR in its text form. */
void lt_model_print(const lt_model *m, FILE *f);

/* The main graph's inputs (initializers with a default included) and
 * outputs, in the file's order. Names are owned by the model; an index out
 * of range gives NULL for a name and (lt_value_kind)-1 for a kind. After
 * lt_model_grad the outputs are the training program's ("loss", then the
 * gradients). */
int lt_model_num_inputs(const lt_model *m);
const char *lt_model_input_name(const lt_model *m, int i);
int lt_model_num_outputs(const lt_model *m);
const char *lt_model_output_name(const lt_model *m, int i);
lt_value_kind lt_model_input_kind(const lt_model *m, int i);
/* Declared or inferred shape of input i: *rank (-1 unknown, or i out of
 * range) and dims (LT_MAX_RANK slots; -1 for symbolic or unknown sizes). */
void lt_model_input_shape(const lt_model *m, int i, int *rank, int64_t *dims);
lt_value_kind lt_model_output_kind(const lt_model *m, int i);

/* ---- differentiation ---- */
typedef enum lt_loss_kind {
    LT_LOSS_SUM = 0, /* sum of the first output */
    LT_LOSS_MEAN,    /* mean of the first output */
    LT_LOSS_SOFTMAX_CROSS_ENTROPY, /* batch mean against int64 labels (input "labels") */
    LT_LOSS_SEEDS,   /* sum of output * seed over seeded outputs (inputs "<output>_seed") */
    LT_LOSS_NLL,     /* batch mean negative log-likelihood: the output holds log-probabilities [N, C] */
    LT_LOSS_MSE,     /* mean squared error against float input "targets" shaped like the output */
    LT_LOSS_BCE_LOGITS, /* mean binary cross-entropy with logits against float "targets" in [0,1] */
    LT_LOSS_MODEL    /* the output already is the scalar loss */
} lt_loss_kind;

/* The loss's name (sum, mean, softmax-cross-entropy, nll, mse, bce-logits,
 * model; "?" for the seeded vector-Jacobian product, which has none);
 * lt_loss_parse gives 0 for a name it does not know. */
const char *lt_loss_name(lt_loss_kind k);
int lt_loss_parse(const char *name, lt_loss_kind *out);

/* An embedding's padding row, as PyTorch's padding_idx: the lookups of
 * parameter `param` (Gather along axis 0, as exporters write an embedding)
 * send no gradient to row `row` (negative: counted from the end); the
 * parameter's other uses (a tied output projection) still do. */
typedef struct lt_padding_row {
    const char *param;
    int64_t row;
} lt_padding_row;

typedef struct lt_grad_opts {
    lt_loss_kind loss;
    int nseeds;
    const char *const *seed_outputs;
    int wrt_inputs; /* gradients for float graph inputs too */
    const char *output; /* the output the loss is attached to (NULL: the first) */
    /* softmax-cross-entropy, nll: labels equal to ignore_index count for
     * nothing (the mean runs over the others); -100 (PyTorch's) unless set */
    int set_ignore_index;
    int64_t ignore_index;
    /* embeddings' padding rows (lt_padding_row): a name the model lacks, a
     * parameter no Gather reads along axis 0, or a row out of range is an
     * error */
    int npadding;
    const lt_padding_row *padding;
    /* tie_transposed: a trainable 2-D initializer holding exactly the
     * transpose of another (torch's dynamo exporter folds a tied weight's
     * transpose into such a copy) is read as a Transpose of that one and is
     * no longer a parameter: the source's gradient sums both uses, as
     * PyTorch's does for the tie (lt_model_tie_transposed names the pairs) */
    int tie_transposed;
    /* softmax-cross-entropy, nll on scores of rank >= 3: 1 reads the
     * classes on axis 1 (scores [N, C, d1, ...], labels [N, d1, ...]: a
     * segmentation map, as PyTorch's losses take it); anything else on the
     * last axis (scores [N, d1, ..., C]: per-token scores).
     * lt_model_class_axis says which labels of a shape fit. */
    int class_axis;
} lt_grad_opts;

/* For softmax-cross-entropy and nll on output `output` (NULL: the first)
 * of m: the class axis labels of dims[0..rank) (their batch first) fit, as
 * lt_grad_opts.class_axis takes it: 1 (axis 1) or -1 (the last). Scores of
 * rank <= 2 give -1. LT_ERR_INVALID where the labels fit neither, or both
 * (scores [N, 4, 4, 4] and labels [N, 4, 4]: say which). */
lt_status lt_model_class_axis(const lt_model *m, const char *output, int rank, const int64_t *dims, int *axis,
                              lt_err *err);

/* Turns the model into its combined forward/backward program (reverse-mode
 * AD as a CPS transform): outputs become "loss" then "<param>_grad" for each
 * trainable float parameter (then "<input>_grad" with wrt_inputs). */
lt_status lt_model_grad(lt_model *m, const lt_grad_opts *opts, lt_err *err);

/* The ties of lt_grad_opts.tie_transposed, made in m now: *ntied gets how
 * many copies were tied, list (may be NULL; len bytes) the first four as
 * "COPY = transpose of SOURCE", comma-separated, then ", ..." where there
 * are more. */
lt_status lt_model_tie_transposed(lt_model *m, int *ntied, char *list, size_t len, lt_err *err);

/* Turns a float32 (or float16/bfloat16) model into the same model in
 * float64: parameters, constants, casts and value types. Its float inputs
 * then take float64 tensors (lt_value_to_f64). */
lt_status lt_model_to_f64(lt_model *m, lt_err *err);

/* Finite-difference check of a model's gradients at the given inputs: the
 * model is evaluated in float64, each parameter's analytic gradient (from
 * the AD, in float64 and in float32) is compared with central differences
 * on up to max_per_param seeded elements. One row per parameter. */
typedef struct lt_gradcheck_row {
    char name[256];
    int checked;      /* elements compared */
    double err64;     /* worst relative error, float64 AD vs finite differences */
    double err32;     /* worst relative error, float32 AD vs finite differences */
    double max_grad;  /* largest |gradient| seen */
    /* empty, or why the parameter is not held to the finite differences:
     * "no gradient through BatchNormalization input 3" (an op input lantern
     * gives no gradient by design: running statistics, a loss's class
     * weights, Resize's scales), or "a graph constant, which train keeps
     * fixed" (an exporter's single value, val_N: GELU's 3.0) */
    char no_grad[96];
} lt_gradcheck_row;

/* *rows (*nrows of them) is the caller's: free(). */
lt_status lt_grad_check(const char *path, const lt_grad_opts *opts, int n, const char *const *names,
                        lt_value *const *inputs, int max_per_param, lt_gradcheck_row **rows, int *nrows,
                        lt_err *err);

/* ---- execution ---- */
typedef struct lt_session lt_session;

/* A session borrows m, which must outlive it; lt_session_free (NULL does
 * nothing) before lt_model_free. */
lt_status lt_session_new(lt_model *m, lt_session **out, lt_err *err);
void lt_session_free(lt_session *s);
/* Runs the main graph. inputs[i] belongs to input names[i] (each name once;
 * the inputs stay the caller's); graph inputs not given fall back to their
 * initializer. outputs, lt_model_num_outputs(m) slots, receives one value
 * per model output (caller frees each with lt_value_free). */
lt_status lt_session_run(lt_session *s, int n, const char *const *names,
                         lt_value *const *inputs, lt_value **outputs, lt_err *err);
/* While *flag is nonzero (a SIGINT handler sets it), every run stops between
 * nodes and between Loop/Scan iterations with LT_ERR_INTERRUPTED naming the
 * node it stopped in. Process-wide; NULL turns it off. */
void lt_set_interrupt(const volatile sig_atomic_t *flag);

/* ---- datasets ---- */
typedef struct lt_dataset lt_dataset;

/* Specs:
 *   fashion-mnist[=DIR]  IDX files, gzip (default DIR: Debian's dataset-fashion-mnist)
 *   mnist=DIR            IDX files, gzip
 *   cifar10=DIR          CIFAR-10 binary batches (data_batch_1..5.bin, test_batch.bin)
 *   npz=FILE             arrays x, y and optionally x_test, y_test (stored or deflated)
 *   onnx-pb=DIR          TensorProto files x.pb, y.pb and optionally x_test.pb, y_test.pb
 *   csv=FILE[,TEST]      rows of numbers, an optional header row; the label is the last
 *                        column or opts->label_column (integer text: class labels; else
 *                        float targets); the other columns are the features
 *   npy=X,Y[,XT,YT]      .npy files: samples and labels (and the test split's)
 *   images=DIR[,TEST]    one folder of images per class (sorted names: labels 0, 1, ...;
 *                        DIR/train and DIR/test as the splits when both exist), PNG, JPEG,
 *                        BMP, PNM, TIFF, WebP, JPEG 2000, all of one size: bytes [C,H,W]
 * split 0 = train, 1 = test. Samples are float32: 8-bit pixels are scaled to
 * [0,1], float data (float16, bfloat16 as ml_dtypes saves it: descr '<V2',
 * float32, float64) are taken as they are; then (x - mean) / std when set.
 * Labels are class indices (integer y of shape [N]) or float targets (float
 * y of shape [N, ...]). */
typedef struct lt_dataset_opts {
    int nmean, nstd;       /* 0: none; 1: every value; C: per channel (first sample dim) */
    double mean[16], std[16];
    /* csv: the label's column, a header name or a column number (1 the
     * first, -1 the last); NULL: the last column */
    const char *label_column;
    /* images: 1 (grey) or 3 (RGB) channels; 0: 3 when any image has colour,
     * else 1 (lt_train and lt_model_evaluate take it from the model's input
     * [N,C,H,W] when the model says) */
    int channels;
} lt_dataset_opts;

/* opts may be NULL; *out is the caller's: lt_dataset_free (NULL does
 * nothing). Opening a split the data does not have (npz/onnx-pb
 * without x_test) is an error naming the missing array; callers ask
 * lt_dataset_has_split first. */
lt_status lt_dataset_open(const char *spec, int split, lt_dataset **out, lt_err *err);
lt_status lt_dataset_open_opts(const char *spec, int split, const lt_dataset_opts *opts, lt_dataset **out,
                               lt_err *err);
/* 1 when spec names data with that split (checks files exist, reads nothing
 * else; a test file or folder named in the spec itself, as csv=A,B, counts
 * even when missing, so that opening it says why); 0 otherwise. */
int lt_dataset_has_split(const char *spec, int split);
/* A dataset of the caller's arrays, copied: x holds the samples along its
 * first axis (uint8 pixels scaled to [0,1], or float32/float64), y their
 * class labels (integers, [n]) or float targets ([n, ...]); opts (may be
 * NULL) gives mean / std. For lt_train_opts.train_set / test_set. Each
 * tensor's numel must equal the product of its dims. Negative class
 * labels are kept: the ignore index (lt_train_opts.ignore_index, -100
 * unless set) counts for nothing under softmax-cross-entropy and nll, and
 * lt_train refuses any other before its first step, naming the sample. */
lt_status lt_dataset_from_arrays(const lt_tensor *x, const lt_tensor *y, const lt_dataset_opts *opts,
                                 lt_dataset **out, lt_err *err);
void lt_dataset_free(lt_dataset *d);
/* The number of samples of the split opened. */
int64_t lt_dataset_size(const lt_dataset *d);
/* The shape of one sample (e.g. [28,28], [3,32,32], an npz's x.shape[1:])
 * into *rank and dims (LT_MAX_RANK slots, the caller's), and its number of
 * values. */
void lt_dataset_sample_shape(const lt_dataset *d, int *rank, int64_t *dims);
int64_t lt_dataset_sample_numel(const lt_dataset *d);
/* Labels: 1 = class indices (int64 [n]); 0 = float targets with the given
 * per-sample shape (float32 [n, ...]). */
int lt_dataset_has_classes(const lt_dataset *d);
int64_t lt_dataset_num_classes(const lt_dataset *d); /* max label + 1 (10 for the image sets) */
/* Class c's name where the data names its classes (an image folder's class
 * folders), else NULL. */
const char *lt_dataset_class_name(const lt_dataset *d, int64_t c);
void lt_dataset_target_shape(const lt_dataset *d, int *rank, int64_t *dims);
/* Samples idx[0..n) into x (float32, numel n * sample numel, any shape) and
 * y (int64 [n] or float32 of n targets), both allocated by the caller. */
lt_status lt_dataset_gather(const lt_dataset *d, const int64_t *idx, int64_t n, lt_tensor *x, lt_tensor *y,
                            lt_err *err);
/* Samples [start, start+n) as a float32 tensor of the given shape (its first
 * dim is n; the rest must hold one sample) and labels, both allocated here
 * (the caller's: lt_value_free each). */
lt_status lt_dataset_batch(const lt_dataset *d, int64_t start, int64_t n, int rank, const int64_t *shape,
                           lt_value **x, lt_value **y, lt_err *err);

/* Threads used by kernels (OpenMP), and BLAS pinned to the same pool. */
void lt_set_num_threads(int n);

/* ---- training and export ---- */

/* Writes original_onnx again to out_path with every initializer (main graph
 * and If/Loop/Scan subgraphs at any depth) replaced by the trained model's
 * parameter of the same name and scope, as raw_data (typed fields
 * cleared); a sparse initializer whose values changed becomes a dense one.
 * Where original_onnx had external data, or the file would pass 2 GiB, the
 * initializers of 1024 bytes or more go to one file out_path + ".data"
 * beside it (offsets multiples of 4096), never to the input's data files.
 * Nothing else changes. The files are written atomically (temp files in the
 * same folder, fsync, rename: the data file first). */
lt_status lt_model_export(const lt_model *trained, const char *original_onnx, const char *out_path, lt_err *err);

/* Loads the parameters a training checkpoint holds (the checkpoint file,
 * or the folder lantern train --checkpoint-dir wrote it to) into m, matched
 * by name, element type and shape; every check runs before anything
 * changes. The checkpoint must hold exactly m's parameters. */
lt_status lt_model_load_checkpoint(lt_model *m, const char *checkpoint, lt_err *err);
/* 1 when path is a training checkpoint (or a folder holding one). */
int lt_is_checkpoint(const char *path);

/* A model's parameters (initializers, subgraphs' included) in module order. */
int lt_model_num_params(const lt_model *m);
const char *lt_model_param_name(const lt_model *m, int i);
/* Copies t's values into parameter i (same element type and shape). */
lt_status lt_model_set_param(lt_model *m, int i, const lt_tensor *t, lt_err *err);
/* Parameter i's tensor, owned by the model (NULL when i is out of range). */
const lt_tensor *lt_model_param(const lt_model *m, int i);

typedef enum lt_optim_kind {
    LT_OPTIM_SGD = 0,
    LT_OPTIM_MOMENTUM, /* v = mu v + g;  p -= lr v */
    LT_OPTIM_NESTEROV, /* v = mu v + g;  p -= lr (g + mu v) */
    LT_OPTIM_ADAGRAD,  /* s += g^2;      p -= lr g / (sqrt(s) + eps) */
    LT_OPTIM_ADAM,     /* bias-corrected moments; weight decay added to g */
    LT_OPTIM_ADAMW     /* Adam with decoupled weight decay: p -= lr wd p */
} lt_optim_kind;

typedef struct lt_optim_opts {
    lt_optim_kind kind;
    double momentum;     /* momentum, nesterov */
    double beta1, beta2; /* adam, adamw */
    double eps;          /* adagrad, adam, adamw */
    double weight_decay; /* added to the gradient as wd * p (adamw: decoupled) */
} lt_optim_opts;

/* PyTorch's defaults: momentum 0.9, betas 0.9/0.999, eps 1e-10 (adagrad) or
 * 1e-8 (adam), no weight decay (adamw: 0.01). */
void lt_optim_defaults(lt_optim_kind kind, lt_optim_opts *o);

/* Optimizer state for n float32/float64 parameter tensors; *out is the
 * caller's: lt_optim_free. */
typedef struct lt_optim lt_optim;
lt_status lt_optim_new(const lt_optim_opts *o, int n, const lt_tensor *const *params, lt_optim **out,
                       lt_err *err);
void lt_optim_free(lt_optim *o);
/* One update of every parameter in place with gradients grads[i] * grad_scale
 * at learning rate lr. */
lt_status lt_optim_step(lt_optim *o, double lr, double grad_scale, lt_tensor *const *params,
                        const lt_tensor *const *grads, lt_err *err);
/* Euclidean norm of all gradients together (for clipping). */
double lt_grad_global_norm(int n, const lt_tensor *const *grads);

typedef enum lt_schedule_kind {
    LT_SCHEDULE_CONSTANT = 0,
    LT_SCHEDULE_STEP,  /* lr * gamma^floor((step - warmup) / step_size) */
    LT_SCHEDULE_COSINE /* lr * (1 + cos(pi (step - warmup) / (total - warmup))) / 2 */
} lt_schedule_kind;

typedef struct lt_schedule {
    lt_schedule_kind kind;
    double lr;
    int64_t warmup;    /* steps of linear warmup: lr * (step + 1) / warmup */
    int64_t total;     /* steps in the run */
    int64_t step_size; /* LT_SCHEDULE_STEP; <= 0: a third of the steps after warmup */
    double gamma;      /* LT_SCHEDULE_STEP */
} lt_schedule;

/* Learning rate of (0-based) step `step`. */
double lt_schedule_lr(const lt_schedule *s, int64_t step);

typedef struct lt_train_progress {
    int epoch, epochs;                 /* 1-based */
    int64_t step, steps;               /* step within the epoch (1-based) of steps */
    int64_t global_step, total_steps;  /* 1-based */
    double loss;                       /* mean training loss of the epoch so far */
    double batch_loss;                 /* this step's */
    double lr;                         /* learning rate of this step */
    double samples_per_s;              /* this epoch's training throughput (of the steps this call ran) */
    double elapsed_s, eta_s;           /* since the start; estimate of what is left */
    int64_t resumed_step;              /* the global step a resumed run picked up at (0: not resumed); the
                                          rate and the ETA count only the steps run since then */
} lt_train_progress;

typedef struct lt_eval_result {
    double loss;      /* mean of the training loss over the samples */
    double accuracy;  /* classes only: argmax (or, for one logit, its sign) against the labels */
    int has_accuracy; /* 0 when the data has no class labels or the loss is the model's */
    int64_t count;    /* samples evaluated */
} lt_eval_result;

/* Memory and backend traffic of a training run so far (lantern train
 * --stats): per program run (a step, or a sample where samples run one at a
 * time), averaged over the runs made. */
typedef struct lt_run_stats {
    int64_t runs;               /* program runs counted */
    size_t peak_bytes;          /* most host pool memory in use at once since the trainer was made
                                   (activations, gradients, batches; parameters are not pooled) */
    size_t peak_backend_bytes;  /* the same in the backend's own pool (0 on the host) */
    double uploads, downloads;  /* tensors copied to / from the backend per run */
    double upload_bytes, download_bytes;
    double device_nodes, host_nodes; /* nodes run on the backend / the host per run */
    /* planned memory (the README's "How it works"): arena bytes held now and
     * at most (they are part of peak_bytes / peak_backend_bytes), layouts
     * made (one per block and input shapes seen), and per run the outputs
     * served from an arena, written over their dying input, and left to the
     * pool in planned frames */
    size_t arena_bytes, arena_peak_bytes;
    int64_t layouts, arenas; /* arenas: allocated (a layout needing more makes a new one) */
    double planned, inplace, pooled;
} lt_run_stats;

typedef struct lt_epoch_result {
    int epoch, epochs;
    double train_loss; /* mean over the epoch's batches, weighted by size */
    lt_eval_result test; /* count 0 when the data has no test split */
    double lr;        /* at the epoch's last step */
    double seconds;   /* the epoch's training time, evaluation excluded */
    int64_t global_step; /* steps done at the epoch's end */
    lt_run_stats stats;  /* since training began */
    /* validation (lt_train_opts.val_split): count 0 when there is none */
    lt_eval_result val;
    int best_epoch;    /* the epoch with the best validation figure so far (0: none) */
    double best_value; /* that figure: accuracy where the data has class labels, else the loss */
    int stop_early;    /* early_stop ends the run after this epoch */
} lt_epoch_result;

typedef struct lt_train_opts {
    const char *data; /* dataset spec for lt_dataset_open, e.g. "fashion-mnist" */
    int epochs;
    int64_t batch;
    lt_optim_opts optim;
    lt_schedule schedule; /* lr, warmup, kind, step_size, gamma; total is filled in */
    double clip_norm;     /* scale gradients down to this global norm; 0: off */
    lt_loss_kind loss;    /* LT_LOSS_SOFTMAX_CROSS_ENTROPY, _NLL, _MSE, _BCE_LOGITS or _MODEL */
    const char *output;   /* the output the loss is attached to (NULL: the first) */
    lt_dataset_opts norm; /* mean / std applied to the samples */
    int nfreeze;          /* parameters (fnmatch patterns) kept fixed */
    const char *const *freeze;
    uint64_t seed;        /* shuffling and --init random */
    int no_shuffle;       /* keep the data's order in every epoch */
    int init_random;      /* re-initialize float parameters first (He/Glorot uniform, zero biases,
                             normalization scales and batch-norm running variances one) */
    int64_t limit;        /* train on the first `limit` training samples (0: all) */
    int64_t test_limit;   /* evaluate on the first `test_limit` test samples (0: all) */
    void (*on_step)(const lt_train_progress *p, void *user);
    void (*on_epoch)(const lt_epoch_result *r, void *user);
    void (*on_note)(const char *msg, void *user); /* one line the user should see (may be NULL) */
    void *user;
    /* Checkpoints: checkpoint_dir/checkpoint.ltck (parameters, optimizer state,
     * position, RNG, data order) every checkpoint_every steps (0: never
     * mid-epoch) and at each epoch's end; resume: continue from it bit-exactly. */
    const char *checkpoint_dir; /* NULL: no checkpoints */
    int64_t checkpoint_every;
    int resume;
    /* when *stop becomes nonzero (a signal handler sets it), training ends
     * after the current step with a checkpoint and *stopped = 1 */
    const volatile sig_atomic_t *stop;
    int *stopped;
    /* in-memory data (lt_dataset_from_arrays) instead of `data`: borrowed,
     * train_set for training, test_set (may be NULL) for the epoch's test */
    const lt_dataset *train_set, *test_set;
    /* npz named inputs (see lt_train): the array holding the labels or
     * targets (NULL: "y"); "INPUT=K" strings fixing an input's batch axis
     * where the model cannot tell it; the label value the loss skips
     * (softmax-cross-entropy, nll; -100 unless set_ignore_index) */
    const char *labels;
    int nbatch_axes;
    const char *const *batch_axes;
    int set_ignore_index;
    int64_t ignore_index;
    /* softmax-cross-entropy, nll on an output of rank >= 3 (npz named
     * arrays): the class axis, 1 ([N, C, d1, ...]) or -1 (the last); 0
     * takes the one the labels' shape fits (refused where both fit) */
    int class_axis;
    /* image augmentation of the training split, "flip", "crop:P" or
     * "flip,crop:P" (NULL: none): a random horizontal flip and a random crop
     * after zero padding by P pixels, drawn per sample from (seed, epoch,
     * sample index), so reruns and resumed runs see the same images; for
     * samples [H,W] or [C,H,W] of the x / y feed (README: lantern train) */
    const char *augment;
    /* Validation: val_split in (0, 1) holds out that fraction of the
     * training samples (after limit; chosen by a generator seeded from
     * seed, so the same for a seed) and scores them after every epoch
     * (lt_epoch_result.val): by accuracy where the data has class labels,
     * else by loss. save_best: *trained gets the parameters of the epoch
     * with the best validation figure instead of the last one's. early_stop
     * N > 0: the run ends after N epochs without a better figure. Both need
     * val_split. */
    double val_split;
    int save_best;
    int early_stop;
    /* where a stop (*stop set) writes its checkpoint when checkpoint_dir is
     * NULL (created if missing); NULL: nowhere */
    const char *stop_checkpoint_dir;
    /* embeddings' padding rows, as lt_grad_opts.padding: they keep their
     * values unless weight decay or a tied use moves them */
    int npadding;
    const lt_padding_row *padding;
    /* a trainable 2-D initializer holding exactly the transpose of another
     * (torch's dynamo exporter folds a tied weight's transpose into a copy)
     * is trained as that one tensor, as PyTorch trains the tie, and written
     * back as its transpose (o->on_note names the pairs); no_tie keeps the
     * copies apart, each trained on its own */
    int no_tie;
    /* float initializers holding one value throughout that an exporter
     * names as its own (torch's dynamo val_N, the TorchScript exporter's
     * onnx::* scalars, lifted or _tensor_constant ones) or that sit in an If/Loop/Scan
     * body are the graph's constants (GELU's 0.5 and 3.0, an attention
     * scale, a mask value, a zero row), not weights: they stay fixed
     * (o->on_note names them) unless train_constants is set */
    int train_constants;
} lt_train_opts;

/* Fills every field of *o: data "fashion-mnist", 1 epoch, batch 64, SGD at
 * lr 0.01 (constant schedule), softmax-cross-entropy, seed 1, the rest 0 or
 * NULL. */
void lt_train_defaults(lt_train_opts *o);

/* Trains the model in model_path on o->data's training split. The model
 * has one input without a default that takes the samples (flat or shaped:
 * its per-sample size must match), or with --loss model a second that takes
 * the labels or targets. The loss is attached to o->output (first output by
 * default): softmax cross-entropy and nll against class labels; mse and
 * bce-logits against float targets of the output's shape (class labels
 * become one-hot rows, or the class value for a one-logit output); model:
 * the output is the loss. Seeded shuffling, a prefetch thread, the
 * optimizer, schedule and clipping of o; after every epoch the test split's
 * loss and accuracy (when the data has a test split). *trained receives the
 * forward model with the trained parameters (for lt_model_export and
 * lt_model_evaluate; the caller's: lt_model_free). o, its strings and its
 * datasets are read during the call only. An npz whose arrays are named like
 * the model's inputs (or hold other element types, NAME_splits row splits,
 * labels with extra axes) feeds each input its own array instead: see
 * labels, batch_axes and ignore_index above, and the README's train section.
 * For dataset specs (not train_set), a model that stores a normalisation
 * (lt_model_norm) is trained with it where o->norm gives none, and *trained
 * stores the normalisation used (lt_model_set_norm), so that its export
 * carries it. */
lt_status lt_train(const char *model_path, const lt_train_opts *o, lt_model **trained, lt_err *err);

/* ---- training one step at a time, on tensors the caller holds ----
 * A trainer is the model of model_path turned into its training program with
 * o's loss, output, optimizer, clipping, frozen parameters and initialization
 * (o's data, epochs, batch and schedule are not used: the caller picks each
 * batch and each step's learning rate). A step with the same batches and
 * learning rates as lantern train's gives the same parameters bit for bit. */
typedef struct lt_trainer lt_trainer;
/* *out is the caller's: lt_trainer_free (NULL does nothing). o and its
 * strings are read during the call only. */
lt_status lt_trainer_new(const char *model_path, const lt_train_opts *o, lt_trainer **out, lt_err *err);
void lt_trainer_free(lt_trainer *t);
/* One optimizer step at learning rate lr. inputs[i] feeds names[i]: the
 * model's sample input(s) and "labels" (int64 class indices, one per sample)
 * for softmax-cross-entropy and nll, or "targets" (float, the output's
 * shape) for mse and bce-logits; with LT_LOSS_MODEL the model's own inputs.
 * The inputs stay the caller's; an input with a batch of 0 (dims[0] 0) is
 * refused. *loss (may be NULL) gets the batch's loss as computed before the
 * update (nan when the step fails). BatchNormalization runs on batch statistics
 * and its running statistics are updated; Dropout drops. */
lt_status lt_trainer_step(lt_trainer *t, double lr, int n, const char *const *names, lt_value *const *inputs,
                          double *loss, lt_err *err);
/* Gradient accumulation, for models that take one sample per run (no batch
 * axis, ragged samples) or batches too large for one run: accumulate runs
 * the training program on inputs as lt_trainer_step does and adds its
 * gradients to the trainer's sums (*loss, may be NULL: its loss); apply
 * makes one optimizer step at lr with their mean over the runs since the
 * last step (clipped as a step's gradients are) and clears them. lantern
 * train's --batch B over such samples is B accumulates and one apply. */
lt_status lt_trainer_accumulate(lt_trainer *t, int n, const char *const *names, lt_value *const *inputs,
                                double *loss, lt_err *err);
lt_status lt_trainer_apply(lt_trainer *t, double lr, lt_err *err);
/* Steps taken (a loaded checkpoint sets it). */
int64_t lt_trainer_num_steps(const lt_trainer *t);
/* Memory and backend traffic of the trainer's steps so far. */
void lt_trainer_stats(const lt_trainer *t, lt_run_stats *out);
/* The forward model (inference mode) holding the trainer's current
 * parameters; owned by the trainer, valid until the next step. Read its
 * parameters with lt_model_param, run it with lt_trainer_forward, evaluate
 * it with lt_model_evaluate. */
lt_model *lt_trainer_model(lt_trainer *t);
/* Runs that forward model; outputs[i] for each model output (caller frees). */
lt_status lt_trainer_forward(lt_trainer *t, int n, const char *const *names, lt_value *const *inputs,
                             lt_value **outputs, lt_err *err);
/* Copies v's values into the parameter named name (same type and shape). */
lt_status lt_trainer_set_param(lt_trainer *t, const char *name, const lt_tensor *v, lt_err *err);
/* lt_model_export of the trainer's current parameters. */
lt_status lt_trainer_export(lt_trainer *t, const char *original_onnx, const char *out_path, lt_err *err);
/* Parameters, optimizer state and the step count, in a checkpoint file in
 * dir (written atomically; dir must exist: it is not created), and back:
 * the same model and options only. */
lt_status lt_trainer_save_checkpoint(lt_trainer *t, const char *dir, lt_err *err);
lt_status lt_trainer_load_checkpoint(lt_trainer *t, const char *dir, lt_err *err);

/* Test-split loss (and accuracy, for class labels) of a model on dataset
 * spec data (limit > 0: the first `limit` samples), with the loss, output and
 * normalisation a training run would use (an npz of named arrays: the mean
 * over the labels counted, those equal to -100 skipped). */
typedef struct lt_eval_opts {
    const char *data;
    int64_t limit;
    lt_loss_kind loss; /* 0 (LT_LOSS_SUM) means softmax cross-entropy here */
    const char *output;
    lt_dataset_opts norm; /* where it gives no mean (or std), the model's stored one is used */
    int no_model_norm;    /* 1: ignore the normalisation stored in the model (lt_model_norm) */
    /* softmax cross-entropy and nll: labels equal to ignore_index count for
     * nothing when set_ignore_index (else -100, as training's default) */
    int set_ignore_index;
    int64_t ignore_index;
    int class_axis; /* as lt_train_opts.class_axis */
} lt_eval_opts;

lt_status lt_model_evaluate(lt_model *m, const lt_eval_opts *o, lt_eval_result *r, lt_err *err);

/* One test sample as lt_model_predict classifies it: the class whose score
 * is highest (the first of equal ones) and the class its label gives, with
 * their names where the data names its classes (class folders, Fashion-MNIST,
 * CIFAR-10; "" otherwise); ignored: the label is the ignore index. */
typedef struct lt_prediction {
    int64_t sample, predicted, truth;
    int ignored;
    char predicted_name[64], truth_name[64];
} lt_prediction;

/* Classifies the first `count` samples of o->data's test split (fewer when
 * it has fewer), fed as lt_model_evaluate feeds them (o->loss is not used:
 * the output's scores are read as classes). pred, the caller's, holds count
 * entries; *n receives how many were filled. A label the output has no
 * score for, float targets, or labels that are not one per sample (tokens)
 * are errors. */
lt_status lt_model_predict(lt_model *m, const lt_eval_opts *o, int64_t count, lt_prediction *pred, int64_t *n,
                           lt_err *err);

/* ---- metadata ---- */

/* The model's metadata_props value for key (NULL when it has none); owned
 * by the model. */
const char *lt_model_metadata(const lt_model *m, const char *key);
/* Sets (or adds) a metadata_props entry; lt_model_export writes every entry
 * whose value differs from the original file's. */
lt_status lt_model_set_metadata(lt_model *m, const char *key, const char *value, lt_err *err);

/* The normalisation a training run used travels with the exported model as
 * metadata_props "lantern.mean" and "lantern.std" (comma-separated numbers,
 * %.17g). lt_model_norm reads them into *out (nmean / nstd 0 where a key is
 * absent); a value that does not parse is an error naming the model and the
 * key. lt_model_set_norm stores n's (nothing for a count of 0). */
#define LT_META_MEAN "lantern.mean"
#define LT_META_STD "lantern.std"
lt_status lt_model_norm(const lt_model *m, lt_dataset_opts *out, lt_err *err);
lt_status lt_model_set_norm(lt_model *m, const lt_dataset_opts *n, lt_err *err);

#ifdef __cplusplus
}
#endif
#endif
