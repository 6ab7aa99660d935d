/* State shared by the transform's files. */
#ifndef LT_AD_IMPL_H
#define LT_AD_IMPL_H

#include "ad.h"

struct lt_ad {
    lt_module *m;
    lt_err *err;
    const lt_ad_spec *spec;
    lt_block *out;  /* block being written */
    int nsrc;       /* values of the source program: ids below nsrc */
    lt_ival **map;  /* source value -> value in the new program */
    lt_ival **cell; /* source value -> its adjoint cell in the new program */
    bool *active;   /* source value depends on something differentiated */
    /* activity through differentiable inputs only (ad.c's note_unreached):
     * the first node met whose input lt_ad_nondiff leaves out, and that
     * input */
    bool diff_only;
    const lt_node *blocked;
    int blocked_in;
    int counter;    /* fresh names */
    lt_ival *loss_src, *loss_cell;
    /* values a loop iteration returns upward (its scan-output adjoints),
     * as the block being written holds them: made by the recursive call
     * deep in the iteration's continuations, and carried out of each
     * continuation function an If or a Loop in the body made (its results,
     * its calls' and the If's outputs) until the iteration's own block */
    lt_ival **esc;
    int nesc;
};

typedef struct lt_ad_kont {
    lt_status (*fn)(lt_ad *c, void *env);
    void *env;
} lt_ad_kont;

typedef struct lt_ad_captures {
    lt_ival **v;
    int n, cap;
} lt_ad_captures;

lt_status lt_ad_block(lt_ad *c, const lt_block *b, int i, lt_ad_kont k);
lt_status lt_ad_loop(lt_ad *c, const lt_block *b, int i, lt_ad_kont k);
lt_status lt_ad_close_all(lt_ad *c, lt_block *top, int first);
lt_status lt_ad_extend_call(lt_ad *c, lt_node *call, int n, lt_ival *const *extra);
lt_node *lt_ad_call(lt_ad *c, lt_func *f, int nin, lt_ival *const *args, int nout);
lt_ival *lt_ad_mapped(lt_ad *c, const lt_ival *v);
lt_ival *lt_ad_new_cell(lt_ad *c, lt_ival *v);
/* a Constant of that type and shape holding data (NULL: zeros) */
lt_ival *lt_ad_const(lt_ad *c, lt_dtype dt, int rank, const int64_t *dims, const void *data);
lt_status lt_ad_make_cells(lt_ad *c, lt_ival *const *src, int n);
lt_status lt_ad_clone_node(lt_ad *c, const lt_node *n);
/* runs the shape rule of an emitted node (inputs and attributes set) */
void lt_ad_infer(lt_ad *c, lt_node *n);
/* the rules of Attention, RotaryEmbedding, TensorScatter
 * (rules_attention.c), CumProd and AffineGrid (their own files),
 * registered with the others */
void lt_ad_register_attention(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_cumprod(lt_ad_rule *tab, uint32_t *nondiff);
void lt_ad_register_affine_grid(lt_ad_rule *tab, uint32_t *nondiff);
/* SequenceAt of a SplitToSequence (rules_sequence.c): the adjoint goes to
 * the split tensor; lt_ad_seq_split gives that SplitToSequence, or NULL */
void lt_ad_register_sequence(lt_ad_rule *tab, uint32_t *nondiff);
const lt_node *lt_ad_seq_split(const lt_node *n);
/* A DequantizeLinear reading a QuantizeLinear's output (fake quantization):
 * that QuantizeLinear, whose x takes the pair's straight-through gradient
 * (rules_quant.c, which refuses a pair through a type it has no rule for,
 * such as float8), or NULL */
const lt_node *lt_ad_fake_quant(const lt_node *n);
/* drops adjoints nobody reads and values nobody uses */
lt_status lt_ad_dce(lt_module *m, lt_err *err);

/* activity.c: mark v (a float tensor of the source) active, true when it
 * was not yet; one pass over b that marks what depends on an active value,
 * true when anything changed */
bool lt_ad_mark(lt_ad *c, const lt_ival *v);
bool lt_ad_activity_pass(lt_ad *c, const lt_block *b);
/* activity.c: marks in taint[] the values computed from a differentiated
 * value through a sequence the AD cannot follow; *why gets the first node
 * that made one. True when something new was marked. */
bool lt_ad_taint_pass(lt_ad *c, const lt_block *b, bool *taint, const lt_node **why);
/* loss.c: the loss appended to the source program (seeded, or from the
 * spec over an output): its scalar in *loss, the extra inputs it needs in
 * extra */
lt_status lt_ad_append_loss(lt_module *m, const lt_ad_spec *spec, lt_ival **loss, int *nextra, lt_ival **extra,
                            lt_err *err);

/* padding_rows.c: the Gathers along axis 0 of each named parameter marked
 * with its padding row (attribute padding_idx), which their gradients skip */
lt_status lt_ad_mark_padding(lt_module *m, int n, const lt_padding_row *rows, lt_err *err);

/* flex_expand.c: every FlexAttention node written out as ordinary ops, its
 * score_mod and prob_mod graphs moved inline, so the transform
 * differentiates through them */
lt_status lt_ad_expand_flex_attention(lt_module *m, lt_err *err);

#endif
