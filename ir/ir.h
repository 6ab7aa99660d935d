/* The staged IR: modules, blocks, nodes, SSA values with types (element type,
 * rank, constant or symbolic dims). Internal to lantern. */
#ifndef LT_IR_H
#define LT_IR_H

#include "lantern.h"
#include <stdbool.h>

typedef enum lt_op {
#define LT_OP(id, name, dom) LT_OP_##id,
#include "ops.def"
#undef LT_OP
    LT_OP_COUNT
} lt_op;

enum { LT_DOMAIN_ONNX = 0, LT_DOMAIN_TRAINING = 1, LT_DOMAIN_LANTERN = 2, LT_DOMAIN_PREVIEW = 3, LT_DOMAIN_ML = 4 };

extern const char *const lt_op_names[LT_OP_COUNT];
extern const int lt_op_domains[LT_OP_COUNT];
/* LT_OP_COUNT when the (name, domain) pair is not an op lantern knows. */
lt_op lt_op_lookup(const char *name, int domain);

/* The arity of a standard op at an opset version (ir/op_arity.c): input
 * and output counts, and bit i of req_in / req_out set where position i
 * must hold a value; NULL for an op or version the schemas do not have. */
typedef struct lt_op_arity {
    const char *name;
    int domain, since, min_in, max_in, min_out, max_out;
    uint32_t req_in, req_out;
    int variadic_in; /* inputs from here on are a variadic parameter's: none may be empty (-1: none) */
} lt_op_arity;
const lt_op_arity *lt_op_arity_find(const char *name, int domain, int64_t version);

/* ---- types ---- */
typedef enum lt_kind {
    LT_KIND_TENSOR = 0,
    LT_KIND_SEQUENCE, /* sequence of tensors of dtype */
    LT_KIND_OPTIONAL, /* optional; `inner` says tensor or sequence */
    LT_KIND_FUNCTION, /* a function value (emitted by the AD only) */
    LT_KIND_CELL      /* an accumulation cell: AccZerosLike, AccAdd, AccRead */
} lt_kind;

/* One dimension: sym >= 0 names a symbol in the module's table (then v is
 * meaningless); otherwise v >= 0 is the size, or v < 0 unknown. */
typedef struct lt_dim {
    int64_t v;
    int sym;
} lt_dim;

/* What shape inference knows of a sequence's elements (lt_type.inner):
 * LT_SEQ_ELEMS: every element has the type's rank and dims; LT_SEQ_NONE: it
 * has no element yet (SequenceEmpty's), so the first inserted gives them.
 * A file's declared sequence type says neither (0). */
enum { LT_SEQ_ELEMS = 16, LT_SEQ_NONE = 17 };

typedef struct lt_type {
    uint8_t kind;  /* lt_kind */
    uint8_t inner; /* for LT_KIND_OPTIONAL: LT_KIND_TENSOR or LT_KIND_SEQUENCE; for
                    * LT_KIND_SEQUENCE: LT_SEQ_ELEMS or LT_SEQ_NONE (0: unknown) */
    lt_dtype dtype;
    int rank; /* -1 when shape inference could not tell */
    lt_dim dims[LT_MAX_RANK];
} lt_type;

/* ---- attributes (ONNX AttributeProto kinds and numbering) ---- */
typedef enum lt_attr_kind {
    LT_ATTR_UNDEFINED = 0,
    LT_ATTR_FLOAT = 1,
    LT_ATTR_INT = 2,
    LT_ATTR_STRING = 3,
    LT_ATTR_TENSOR = 4,
    LT_ATTR_GRAPH = 5,
    LT_ATTR_FLOATS = 6,
    LT_ATTR_INTS = 7,
    LT_ATTR_STRINGS = 8,
    LT_ATTR_TENSORS = 9,
    LT_ATTR_GRAPHS = 10,
    LT_ATTR_SPARSE_TENSOR = 11,
    LT_ATTR_SPARSE_TENSORS = 12,
    LT_ATTR_TYPE_PROTO = 13,
    LT_ATTR_TYPE_PROTOS = 14
} lt_attr_kind;

typedef struct lt_attr {
    const char *name;
    lt_attr_kind kind;
    int64_t i;
    float f;
    const char *s; /* NUL-terminated; slen bytes (may contain NULs) */
    size_t slen;
    int n;           /* element count for the list kinds */
    int64_t *ints;   /* LT_ATTR_INTS */
    float *floats;   /* LT_ATTR_FLOATS */
    const char **strings;
    lt_tensor *t;    /* LT_ATTR_TENSOR (owned by the module) */
    int region;      /* LT_ATTR_GRAPH: index into node->regions */
} lt_attr;

struct lt_block;
struct lt_node;

/* An SSA value. Defined by a node output, a block parameter, or a module
 * parameter (initializer). */
typedef struct lt_ival {
    int id; /* unique in the module; indexes module->values */
    const char *name;
    lt_type type;
    struct lt_node *def;    /* defining node, NULL for parameters */
    struct lt_block *block; /* block it is visible in (defined in) */
    int param;              /* module parameter index, or -1 */
    int uses;               /* number of node inputs / results reading it */
} lt_ival;

typedef struct lt_node {
    lt_op op;
    int opset; /* the version of the op's domain that the model imports */
    const char *name;
    const char *domain_name;
    int nin, nout;
    lt_ival **in;  /* in[i] NULL for an omitted optional input */
    lt_ival **out; /* out[i] NULL for an omitted optional output */
    int nattr;
    lt_attr *attrs;
    int nregions;
    struct lt_block **regions; /* If: then, else; Loop/Scan: body */
    struct lt_block *block;    /* enclosing block */
    int index;                 /* position in the block */
    /* from torch's exporter's node metadata (importer/torch_meta.c), NULL
     * where the file has none: the module path the node came from
     * ("h.0.ln"; "" for the root module) and the onnxscript rewrite rule
     * that made it ("FuseBatchNormIntoConv") */
    const char *scope, *rule;
    /* the torch.fx node it was made from (pkg.torch.onnx.fx_node): its
     * name ("layer_norm_1") and the text after "NAME : ... = ", which
     * names the fx values it read as %NAME; NULL where the file has none */
    const char *fx_name, *fx_call;
} lt_node;

typedef struct lt_block {
    int nparams;
    lt_ival **params;
    int nnodes, cap;
    lt_node **nodes;
    int nresults;
    lt_ival **results;
    struct lt_block *parent;
    lt_node *owner; /* the node whose region this is; NULL for the main graph */
    const char *name;
} lt_block;

typedef struct lt_param {
    const char *name;
    lt_ival *value;
    lt_tensor data; /* owned; data allocated with malloc */
    bool trainable;
    bool is_input_default; /* a graph input's default value */
    /* set when the parameter was an Identity of initializer `untied_from`
     * (an exporter that merged equal initializers); the exporter writes it
     * back as an initializer of its own and drops that Identity */
    const char *untied_from;
    /* set when the parameter held exactly the transpose of the main-graph
     * parameter of this name, an exporter's folded copy of a tied weight
     * (ir/tie_transposed.c): its readers read a Transpose of that one, it
     * is not trained, and lt_ir_refresh_tied writes it from that one */
    const char *transpose_of;
    /* set when the parameter is an exporter's second folded copy of one
     * weight, equal to the parameter of this name (ir/tie_folded.c): its
     * readers read that one, it is not trained, and lt_ir_refresh_tied
     * writes it from that one */
    const char *copy_of;
    /* set by the AD when the parameter feeds an op input that takes no
     * gradient by design (BatchNormalization's running statistics, a
     * loss's class weights, Resize's scales, ...): "Op input K", so that a
     * gradient check can tell that zero from a missing one */
    const char *no_grad;
    /* set when the parameter is a table the exporter gathered from a
     * smaller one and folded (ir/gathered_table.c): its readers read
     * Gather(gathered_from, gather_index), it is not trained, and
     * lt_ir_refresh_tied writes it from those */
    const char *gathered_from, *gather_index;
    /* what torch's dynamo optimizer folded the initializer from, as its
     * metadata on the value lists them (pkg.onnxscript.optimizer.
     * folded_from: "['A_log', 'exp']", the parameters, buffers, constants
     * and fx nodes it read), NULL where the file does not say
     * (importer/torch_meta.c) */
    const char *folded_from;
    /* set when the initializer is parameter fold_param of the source
     * computed through fx operation fold_op (exp, of -exp(A_log)), a fold
     * lantern cannot undo (ir/gathered_table.c): training refuses it
     * unless it is frozen */
    const char *fold_param, *fold_op;
    /* set when the initializer is parameter computed_from of the source
     * through the invertible operations compute_ops ("Exp,Neg"), undone
     * (ir/unfold_computed.c): its readers read those operations of that
     * parameter, it is not trained, and lt_ir_refresh_tied writes it */
    const char *computed_from, *compute_ops;
    /* set when the parameter is one of the separate tensors an exporter
     * merged into initializer `split_from` (ir/split_merged.c): the nodes
     * (by file name) and input slots that read it; the exporter writes it
     * as an initializer of its own and points those inputs at it */
    const char *split_from;
    /* set when the parameter (an exporter's val_N holding one value) is
     * a parameter of the source folded into a constant of another shape
     * (GroupNorm's weight as [C, 1, 1]; ir/split_merged.c): trained, not
     * kept as a graph constant */
    const char *torch_source;
    /* a buffer of the source module (graph signature), kept out of
     * training as PyTorch keeps it (ir/freeze_buffers.c) */
    bool torch_buffer;
    /* a float initializer every node reads only as one of its settings
     * (a Resize's scales or roi, a Dropout's ratio, a loss's class
     * weights), which get no gradient: kept out of training, as no
     * optimizer in PyTorch moves them (ir/freeze_buffers.c) */
    bool op_setting;
    /* set when the parameter is a bias the exporter dropped for holding
     * zeros, given back (ir/restore_bias.c): the exporter adds it as the
     * input split_slot[0] of node split_node[0] */
    bool restored;
    int nsplit;
    /* the reader nodes: a main-graph node's name, a body node's path
     * OWNER/GRAPH/NODE (lt_torch_node_path; names repeat across bodies) */
    const char **split_node;
    int *split_slot;
} lt_param;

typedef struct lt_opset {
    const char *domain;
    int64_t version;
} lt_opset;

typedef struct lt_chunk lt_chunk;

/* A main-graph node copied per module (ir/unshare.c): node `from` of the
 * file, the copy's name and output names (`nout`, NULL where the node's
 * output is omitted) and the module whose nodes read the copy */
typedef struct lt_clone {
    const char *from, *name, *scope;
    int nout;
    const char **out;
    int nread; /* the node inputs (by node name and slot) that read output read_out[i] of the copy */
    const char **read_node;
    int *read_slot, *read_out;
    /* a copy of a node that stood for two modules' computations of one
     * tensor (ir/unmerge.c), not of a parameter-only node (ir/unshare.c) */
    bool whole;
} lt_clone;

/* A BatchNormalization the importer gave back after the product whose
 * weight the exporter had folded it into (ir/unfold_bn.c): written after
 * node `after` of the file as node `name`, reading `in` (that node's
 * result) and the parameters param[0..3] (scale, bias, running mean and
 * variance), giving `out`, which the node inputs read_node[i]:read_slot[i]
 * read instead of `in` */
typedef struct lt_bn_insert {
    const char *after, *name, *in, *out;
    const char *param[4];
    float epsilon, momentum;
    int nread;
    const char **read_node;
    int *read_slot;
} lt_bn_insert;

/* An IR function: a closed block (no enclosing scope; what it would capture
 * is passed as parameters) called by Call nodes through attribute "callee"
 * (its index in module->funcs). The AD lifts continuations and loops into
 * functions; recursion is allowed. */
typedef struct lt_func {
    const char *name;
    lt_block *body;
} lt_func;

struct lt_model {
    const char *path;     /* file it came from (for messages) */
    const char *base_dir; /* folder for external data */
    int64_t ir_version;
    const char *producer_name, *producer_version, *graph_name;
    /* metadata_props, in the file's order (ir/metadata.c); keys unique, a
     * repeated key in the file keeps its last value */
    int nmeta, cap_meta;
    const char **meta_key, **meta_value;
    int nopsets;
    lt_opset *opsets;
    /* the parameters and buffers of the source module by their PyTorch
     * names, from the main graph's torch.export graph signature metadata
     * (importer/torch_meta.c); none where the file has no signature */
    int ntorch;
    const char **torch_name;
    const char **torch_placeholder; /* per name: the fx graph's placeholder for it (p_h_0_ln_weight) */
    int nclones;
    lt_clone *clones; /* written into the graph by the exporter */
    int nbn_inserts;
    lt_bn_insert *bn_inserts; /* likewise */
    bool *torch_buffer; /* per name: a buffer (running statistics), not a parameter */

    lt_block *main;
    int nfuncs, cap_funcs;
    lt_func **funcs;
    /* main graph inputs: main->params; for each, the parameter holding its
     * default (initializer of the same name) or -1 */
    int *input_default;

    int nparams, cap_params;
    lt_param *params;

    int nvalues, cap_values;
    lt_ival **values;

    int nsyms, cap_syms;
    const char **syms;

    /* nodes whose op lantern does not know: reported by `lantern import`,
     * refused by sessions */
    int nunsupported, cap_unsupported;
    struct lt_unsupported {
        const char *op, *domain, *node;
    } *unsupported;

    lt_chunk *arena; /* owns every IR object and string */
    /* sessions made of this model and not yet freed (atomic): a transform
     * that rewrites the IR (lt_model_grad) waits for none */
    int live_sessions;
    bool differentiated; /* lt_model_grad made it its forward/backward program */
};
typedef struct lt_model lt_module;

/* ---- construction (allocations come from the module's arena) ---- */
lt_module *lt_module_new(void);
void lt_module_free(lt_module *m);
void *lt_ir_alloc(lt_module *m, size_t bytes); /* zeroed; NULL on OOM */
const char *lt_ir_strdup(lt_module *m, const char *s);
const char *lt_ir_strndup(lt_module *m, const char *s, size_t n);
lt_block *lt_block_new(lt_module *m, lt_block *parent, const char *name);
lt_ival *lt_ival_new(lt_module *m, lt_block *b, const char *name);
lt_node *lt_node_new(lt_module *m, lt_block *b, lt_op op, int nin, int nout);
/* Moves n, which lt_node_new just appended to b, to index at (the nodes
 * from at on move one place down). */
void lt_block_place_at(lt_block *b, lt_node *n, int at);
/* Whether every element of t has the first one's bits (true for one
 * element): a constant's or a fresh scale's, not a trained weight's. */
bool lt_ir_one_value(const lt_tensor *t);
/* whether p is one of the graph's constants, an exporter's single value
 * (ir/graph_constant.c) */
bool lt_ir_graph_constant(const lt_module *m, const lt_param *p);
lt_status lt_block_set_params(lt_module *m, lt_block *b, int n);
lt_status lt_block_set_results(lt_module *m, lt_block *b, int n);
lt_status lt_node_set_attrs(lt_module *m, lt_node *n, int nattr);
lt_status lt_node_set_regions(lt_module *m, lt_node *n, int nregions);
/* uses[v->id] += the node inputs (regions' included) and block results of
 * b reading v; uses holds one counter per value id of the module. */
void lt_block_count_uses(const lt_block *b, int *uses);
/* Drops the nodes i of b with dead[i] (dead indexed by node position),
 * keeping the others in order with their index fields renumbered. */
void lt_block_drop_nodes(lt_block *b, const bool *dead);
/* uses[v->id] = the reads of v over the whole module (main and every
 * function body; lt_block_count_uses), the counters zeroed first. */
void lt_module_count_uses(const lt_module *m, int *uses);
/* The same, then every value's uses field set from it (after a rewrite). */
void lt_module_recount_uses(lt_module *m, int *uses);
/* fn(b, ctx) on every block of the module, the regions of a block's nodes
 * before the block itself, main first, then each function body; the first
 * status other than LT_OK stops the walk and is returned. */
lt_status lt_module_each_block(lt_module *m, lt_status (*fn)(lt_block *b, void *ctx), void *ctx);
/* Every node input (at any depth) and block result reading from reads to
 * instead, the node that defines to excepted; the uses follow. */
void lt_module_replace_reads(lt_module *m, lt_ival *from, lt_ival *to);
/* When lt_module_rewrite sets the values' uses fields from a fresh count
 * after a clean walk: never, always, or when the pass's *count != 0 */
typedef enum lt_recount { LT_RECOUNT_NEVER, LT_RECOUNT_ALWAYS, LT_RECOUNT_IF_COUNTED } lt_recount;
/* One rewrite pass over a module, for lt_module_rewrite: the pass's block
 * function and the arrays it reads and keeps up to date. */
typedef struct lt_rewrite {
    lt_status (*block)(lt_block *b, void *ctx); /* run on every block, as lt_module_each_block */
    void *ctx;
    int **uses;         /* NULL, or set for the walk to each value id's reads (lt_module_count_uses) */
    int **marks;        /* NULL, or set for the walk to one int per value id, each = mark */
    int mark;
    bool **dead;        /* NULL, or set for each block's call to a false flag per node of it; the
                         * nodes flagged are dropped after a call that returns LT_OK */
    const int *count;   /* NULL, or the pass's count of rewrites, copied out to lt_module_rewrite's n */
    lt_recount recount;
    const char *doing;  /* ends the error "<path>: out of memory <doing>" (NULL: "out of memory") */
} lt_rewrite;
/* The driver the IR rewrite passes share: makes the arrays r asks for,
 * walks every block with r->block (lt_module_each_block; with r->dead,
 * dropping the nodes it flags), recounts the values' uses as r->recount
 * says, frees the arrays (*r->uses and *r->marks left NULL), sets *n from
 * *r->count (where both are given, failure or not) and turns a failure, its
 * own or the walk's, into r->doing's line in err. */
lt_status lt_module_rewrite(lt_module *m, const lt_rewrite *r, int *n, lt_err *err);
int lt_module_sym(lt_module *m, const char *name); /* interns; -1 on OOM */
int lt_module_add_param(lt_module *m, const char *name); /* -1 on OOM */
/* A parameter named name holding t (its data taken over), with its value
 * in the main block; its index, -1 on OOM */
int lt_module_new_param(lt_module *m, const char *name, lt_tensor t, bool trainable);
/* Whether one of n's inputs is v */
bool lt_node_reads(const lt_node *n, const lt_ival *v);
/* A parameter named name holding a copy of parameter src's values,
 * trainable as src is, whose value is v (typed from the data, no longer
 * defined by a node); its index, -1 on OOM. */
int lt_module_copy_param(lt_module *m, int src, const char *name, lt_ival *v);
lt_func *lt_module_add_func(lt_module *m, const char *name); /* body has no parent */

/* ---- attribute access ---- */
const lt_attr *lt_attr_find(const lt_node *n, const char *name);
int64_t lt_attr_int(const lt_node *n, const char *name, int64_t dflt);
float lt_attr_float(const lt_node *n, const char *name, float dflt);
const char *lt_attr_str(const lt_node *n, const char *name, const char *dflt);
/* Returns the list (and its length in *len) or NULL when absent. */
const int64_t *lt_attr_ints(const lt_node *n, const char *name, int *len);
const float *lt_attr_floats(const lt_node *n, const char *name, int *len);
const lt_tensor *lt_attr_tensor(const lt_node *n, const char *name);

/* ---- types ---- */
void lt_type_unknown(lt_type *t, lt_dtype dtype, int rank); /* dims all unknown */
void lt_type_tensor(lt_type *t, lt_dtype dtype, int rank, const int64_t *dims);
bool lt_type_equal(const lt_type *a, const lt_type *b);
void lt_type_print(const lt_module *m, const lt_type *t, FILE *f);

/* "node 'name' (Op)" for messages */
const char *lt_node_label(const lt_node *n, char *buf, size_t len);

/* Text form of the IR. */
void lt_ir_print(const lt_module *m, FILE *f);

/* Verifier: SSA, scoping, operand counts, types where known. */
lt_status lt_ir_verify(const lt_module *m, lt_err *err);

/* Turns the module into float64 for gradient checks: the float32, float16
 * and bfloat16 values that depend on a float graph input or a trained
 * parameter (through subgraphs too), those parameters, and the float
 * constants and frozen initializers only widened nodes read. Float values computed from integer or
 * bool values alone (relative position buckets, Shape arithmetic, masks
 * made from integer masks) and the constants only they read keep their
 * type; a widened node reads such a value through a Cast to float64. A
 * module that already holds functions (the AD's program) widens whole. */
lt_status lt_ir_to_f64(lt_module *m, lt_err *err);
/* Main-graph Identity nodes reading an initializer become parameters of
 * their own, named after the Identity's output (see ir/untie.c). */
lt_status lt_ir_untie_identity_params(lt_module *m, lt_err *err);
/* Initializers an exporter merged because their values were equal (torch's
 * dynamo exporter's optimizer, for a fresh model's norm scales, zero biases
 * and running statistics) become the source module's separate tensors
 * again, told apart by the readers' module paths and the graph signature
 * (see ir/split_merged.c); *nsplit gets how many tensors were made */
lt_status lt_ir_split_merged_params(lt_module *m, int *nsplit, lt_err *err);
/* Main-graph nodes without a module path that read only initializers and
 * serve several modules (the exporter's common-subexpression merging) are
 * copied per module, each copy taking its readers' path (ir/unshare.c);
 * split_merged.c runs it first */
lt_status lt_ir_unshare_nodes(lt_module *m, int *ncloned, lt_err *err);
/* Whether v is a result of block b or read by a node of a region below b
 * (a node that makes it cannot be copied or followed freely) */
bool lt_ir_read_elsewhere(const lt_block *b, const lt_ival *v);
/* Nodes the same optimizer merged from two modules' computations on one
 * tensor (two fresh LayerNorms of one input) are copied for the module
 * whose computation was merged away, as the nodes' torch.fx metadata and
 * the graph signature tell (ir/unmerge.c); split_merged.c runs it first */
lt_status lt_ir_unmerge_nodes(lt_module *m, int *ncopied, lt_err *err);
/* A copy of main-graph node n for module scope, named "NAME@scope" (its
 * outputs likewise), reading n's inputs, placed right after n; NULL on
 * OOM. lt_ir_record_clone records copy c of n for the exporter: the node
 * inputs (by node name and slot) that read output read_out[i] of it. */
lt_node *lt_ir_copy_node(lt_module *m, lt_block *b, const lt_node *n, const char *scope);
lt_status lt_ir_record_clone(lt_module *m, const lt_node *n, const lt_node *c, const char *scope, int nread,
                             const char **read_node, int *read_slot, int *read_out);
/* Gemm/Conv biases the same optimizer dropped for holding zeros are
 * parameters of zeros again where the graph signature names them (see
 * ir/restore_bias.c); *nrestored gets how many */
lt_status lt_ir_restore_biases(lt_module *m, int *nrestored, lt_err *err);
/* Legacy broadcasts (opset < 7 binary ops with broadcast = 1, B aligned at
 * `axis`) rewritten as numpy broadcasts: B read through an Unsqueeze that
 * appends the dims of 1, the attributes dropped (see ir/legacy_bcast.c);
 * needs inferred ranks. *n gets how many nodes were rewritten. */
lt_status lt_ir_legacy_broadcast(lt_module *m, int *n, lt_err *err);
/* The initializers the graph signature names as buffers (not a
 * BatchNormalization's running statistics), and in any model the float
 * initializers read only as operators' settings (op_setting), are not
 * trainable (see ir/freeze_buffers.c); returns how many */
int lt_ir_freeze_buffers(lt_module *m);
/* ir/tie_transposed.c: every trainable 2-D parameter of the main graph
 * that holds exactly the transpose of another (not constant-valued) is
 * read through a Transpose of that one instead and no longer trained;
 * *ntied gets how many, list (may be NULL; len bytes, cut short where
 * full) the first LT_TIE_LISTED pairs as "COPY = transpose of SOURCE",
 * comma-separated, then ", ..." where there are more */
#define LT_TIE_LISTED 4
lt_status lt_ir_tie_transposed_params(lt_module *m, int *ntied, char *list, size_t len, lt_err *err);
/* Whether p holds, bit for bit (dims of 1 aside), the transpose of another
 * trainable 2-D parameter of the main graph: a copy the tie above reads
 * through that one, not a constant (ir/freeze_buffers.c). */
bool lt_ir_transposed_copy(const lt_module *m, const lt_param *p);
/* the tied copies' values written again from their sources */
void lt_ir_refresh_tied(lt_module *m);
/* Equal val_N initializers that the products reading them say stand for
 * one parameter (a module applied twice) become one tensor (see
 * ir/tie_folded.c); the number tied */
int lt_ir_tie_folded_copies(lt_module *m);
/* BatchNorms torch's dynamo optimizer folded, fresh, into the Conv, Gemm
 * or ConvTranspose before them come back as BatchNormalization nodes after
 * it (see ir/unfold_bn.c); *nunfolded gets how many */
lt_status lt_ir_unfold_batch_norms(lt_module *m, int *nunfolded, lt_err *err);
/* Initializers the signature does not name whose entries are copies of a
 * few values, folded by gathering a parameter (a folded relative position
 * bias, as the optimizer's folded_from metadata records), train as Gather
 * of those values; ones it computed from a parameter through other
 * operations get fold_param and fold_op (see ir/gathered_table.c);
 * *nfound gets how many were gathered */
lt_status lt_ir_ungather_tables(lt_module *m, int *nfound, lt_err *err);
/* Of those computed ones, a parameter the file lacks computed through
 * elementwise operations lantern can invert (exp, neg, sigmoid, ...)
 * trains as PyTorch trains it (see ir/unfold_computed.c); *nfound gets
 * how many. lt_ir_refresh_computed writes such an initializer from it. */
lt_status lt_ir_unfold_computed(lt_module *m, int *nfound, lt_err *err);
/* Gathers of an embedding whose torch.fx call (dynamo's metadata) gives a
 * padding_idx get that row as attribute padding_idx, whose gradient the
 * lookups then leave out, as PyTorch does (see ir/embedding_padding.c) */
lt_status lt_ir_mark_embedding_padding(lt_module *m, int *nmarked, lt_err *err);
void lt_ir_refresh_computed(lt_module *m, lt_param *cp);
/* Loops that append to a carried list stacked after the loop (TorchScript's
 * list.append and torch.stack) get a scan output instead (loop_lists.c) */
lt_status lt_ir_loop_lists_to_scans(lt_module *m, lt_err *err);
lt_status lt_ir_set_training(lt_module *m, lt_err *err); /* BatchNorm, Dropout to training mode; before the AD */
/* The int attribute lt_ir_set_training gives the batch norms it switches:
 * where it is 1 their running_var output moves towards the batch's unbiased
 * variance (the sum of squares over count - 1, as PyTorch's running_var),
 * not ONNX's population variance; a batch of one value per channel keeps
 * the population variance (0) */
#define LT_BN_UNBIASED_ATTR "lantern_unbiased_running_var"

/* Shape inference over the whole module (runs at import). */
lt_status lt_infer_module(lt_module *m, lt_err *err);

/* String tensors hold pointers to interned, immutable strings that live for
 * the process, so kernels may copy them like any other element. NULL on OOM. */
const char *lt_str_intern(const char *s, size_t len);

/* printf into err->msg; returns s. */
lt_status lt_errf(lt_err *err, lt_status s, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));


/* ---- element types and elements (ir/dtype.c) ---- */
int64_t lt_shape_numel(int rank, const int64_t *dims); /* -1 on overflow/negative */
size_t lt_tensor_nbytes(const lt_tensor *t);
/* Generic element access through double / int64 (slow paths, any dtype).
 * Setting an integer element from a double truncates toward zero and
 * saturates at the type's range; NaN gives 0 (never undefined). The narrow
 * types convert as Cast does by default (lt_f64_to_narrow, saturating). */
double lt_tensor_get_f64(const lt_tensor *t, int64_t i);
void lt_tensor_set_f64(lt_tensor *t, int64_t i, double v);
int64_t lt_tensor_get_i64(const lt_tensor *t, int64_t i);
void lt_tensor_set_i64(lt_tensor *t, int64_t i, int64_t v);
float lt_f16_to_f32(uint16_t h);
uint16_t lt_f32_to_f16(float f);
float lt_bf16_to_f32(uint16_t h);
uint16_t lt_f32_to_bf16(float f);
bool lt_dtype_is_float(lt_dtype t); /* f16, bf16, f32, f64 (not the narrow floats) */
bool lt_dtype_is_int(lt_dtype t);   /* signed or unsigned integers (not bool) */
bool lt_dtype_is_signed(lt_dtype t);

/* ---- narrow element types (ir/dtype_narrow.c) ---- */
/* Cast's round_mode for float8e8m0: up (away from zero, the default), down
 * (toward zero), nearest (ties up). */
typedef enum lt_round_mode { LT_ROUND_UP, LT_ROUND_DOWN, LT_ROUND_NEAREST } lt_round_mode;
bool lt_dtype_is_narrow_float(lt_dtype t); /* float8 types and float4e2m1 */
bool lt_dtype_is_narrow_int(lt_dtype t);   /* int4, uint4, int2, uint2 */
int lt_dtype_bits(lt_dtype t);             /* bits per element in a file */
size_t lt_dtype_packed_bytes(lt_dtype t, int64_t n); /* bytes n elements take in a file */
/* Files pack 4-bit types two to a byte and 2-bit types four to a byte, the
 * first element in the lowest bits, an odd tail's padding zero; memory holds
 * one per byte (include/lantern.h). Other types are copied. */
void lt_narrow_unpack(lt_dtype t, const uint8_t *packed, int64_t n, uint8_t *out);
void lt_narrow_pack(lt_dtype t, const uint8_t *in, int64_t n, uint8_t *packed);
/* The value of a narrow element as held in memory (NaN and infinities as
 * the type has them). */
double lt_narrow_to_f64(lt_dtype t, uint8_t code);
/* A double to a narrow type. Float types: round to nearest even (float8e8m0:
 * by rm); beyond the largest value, saturate gives it, else infinity
 * (e5m2), NaN (the other float8 types); float4e2m1 always saturates. The
 * fnuz types have no negative zero. Integer types: truncated toward zero,
 * the low bits kept (two's complement), NaN 0. */
uint8_t lt_f64_to_narrow(lt_dtype t, double v, bool saturate, lt_round_mode rm);
uint8_t lt_narrow_from_i64(lt_dtype t, int64_t v); /* integers wrap; floats round and saturate */

#endif
