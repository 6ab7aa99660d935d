/* Looking up the source module's tensor names (torch's graph signature,
 * lt_model.torch_name) for the passes that give back what torch's dynamo
 * exporter's optimizer merged or dropped (ir/torch_names.c). */
#ifndef LT_IR_TORCH_NAMES_H
#define LT_IR_TORCH_NAMES_H

#include "ir.h"

/* whether the signature names the tensor */
bool lt_torch_named(const lt_module *m, const char *name);
/* scope.leaf in the module's arena (leaf alone under the root module "") */
const char *lt_torch_join(lt_module *m, const char *scope, const char *leaf);
/* whether a parameter of the module has the name */
bool lt_torch_is_param(const lt_module *m, const char *name);
/* The one signature name below module scope whose last part is leaf and
 * that the file has no initializer of (the optimizer took it away), else
 * NULL: the tensor a module's function call read from a submodule
 * (attention's out_proj.bias, read by the attention module's product). */
const char *lt_torch_missing_below(const lt_module *m, const char *scope, const char *leaf);
/* whether a parameter, a graph input or a node output (in the main graph
 * or any subgraph, whose names a main-graph initializer must not shadow)
 * has the name */
bool lt_torch_name_taken(const lt_module *m, const char *name);

/* whether a and b are the same once every run of digits counts as one
 * (layers.0.attn and layers.11.attn: clones of one layer) */
bool lt_torch_same_but_numbers(const char *a, const char *b);

/* The tensor an input slot of op stands for in PyTorch's module of that
 * op (a BatchNormalization's slot 4 is its running_var), or NULL where the
 * slot has no fixed meaning. */
const char *lt_torch_slot_leaf(lt_op op, int slot);

/* The signature names of the parameters and buffers an fx call's text
 * reads as placeholders (%p_h_0_ln_weight is h.0.ln.weight, as the
 * signature pairs them), each once, in the text's order: up to cap into
 * out; their count. */
int lt_torch_fx_tensors(const lt_module *m, const char *call, const char **out, int cap);
/* Of those, the one whose last part is leaf ("bias": qkv.bias), or NULL
 * when none or two are. */
const char *lt_torch_fx_leaf(const lt_module *m, const char *call, const char *leaf);

/* lt_torch_fx_tensors and lt_torch_fx_leaf of node n's fx call, where a
 * node inside a control-flow body also reads the body graph's
 * placeholders (%arg3_1 in a scan's combine function): each stands for
 * that operand of the torch.cond, while_loop, scan or map the If, Loop or
 * Scan around it was made from (its fx call: "scan(%scan_combine_graph_0,
 * [%zeros], [%permute], (%p_u, %p_ln_step_weight, ...))"; arg3_1 is
 * p_ln_step_weight), looked up where that node sits in turn. */
int lt_torch_node_tensors(const lt_module *m, const lt_node *n, const char **out, int cap);
const char *lt_torch_node_leaf(const lt_module *m, const lt_node *n, const char *leaf);

/* Where node n sits, as lt_param.split_node names the nodes that read a
 * split or restored parameter: its name in the main graph; in a
 * subgraph, the path of the node that holds it, '/', the graph's
 * name (its attribute's where it has none, as lt_block.name), '/', its name ("node_scan__1/body/node_Gemm_1": node
 * names repeat across subgraphs, as torch.cond's two branches' Gemms
 * do). NULL for a node without a name, or out of memory. */
const char *lt_torch_node_path(lt_module *m, const lt_node *n);

/* The elements of a Python list literal of names, as torch's optimizer
 * writes folded_from ("['A_log', 'exp']"): call with *at at the list
 * first; each call gives the next element (its length in *len), NULL
 * after the last or at anything else. */
const char *lt_torch_list_next(const char **at, size_t *len);

/* What a name in folded_from stands for (lt_torch_fold_kind) */
typedef enum {
    LT_FOLD_LEAF,    /* a tensor of the source (parameter, buffer), a constant, or an exporter value (val_N) */
    LT_FOLD_COPY,    /* an fx node that moves or selects entries, each once (view, permute, unsqueeze, slice) */
    LT_FOLD_EXPAND,  /* an fx node that copies entries several times (expand, repeat, tile) */
    LT_FOLD_GATHER,  /* an fx node that gathers entries by index (index, embedding, index_select, gather) */
    LT_FOLD_COMPUTE, /* any other fx node: it computes new values (exp, neg, mul, sigmoid) */
} lt_fold_kind;

/* The kind of the name's len characters: torch.fx names a node after its
 * aten operation, with _N appended from the second on (exp, exp_1). */
lt_fold_kind lt_torch_fold_kind(const lt_module *m, const char *name, size_t len);

#endif
