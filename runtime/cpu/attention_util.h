/* Private interface of the Attention kernels (runtime/cpu/attention*.c):
 * the geometry of one Attention node's inputs, read once and shared by the
 * forward kernel and its gradient, and the additive bias of one score. */
#ifndef LT_CPU_ATTENTION_UTIL_H
#define LT_CPU_ATTENTION_UTIL_H

#include "../runtime.h"
#include <math.h>

typedef struct lt_attn {
    int64_t B, Hq, Hkv, S, L, P, T, D, Dv; /* T = P + L keys in all */
    int64_t group;                         /* Hq / Hkv query heads per key head */
    bool in3d;
    /* element strides of (batch, head, position) in Q, K, V and Y; the
     * head's elements are contiguous in every layout */
    int64_t qs[3], ks[3], vs[3], ys[3];
    const double *q, *k, *v;   /* inputs in double */
    const double *pk, *pv;     /* past_key, past_value [B, Hkv, P, D|Dv] or NULL */
    const double *mask;        /* attn_mask in double or NULL */
    bool mask_bool;            /* true: 0 masks, else the value is added */
    int64_t ms[4], Tm;         /* mask strides over (b, h, i, j), 0 where broadcast; its last dim */
    const int64_t *nonpad;     /* nonpad_kv_seqlen [B] or NULL */
    int64_t *offset;           /* per batch: the keys before the query block */
    double scale, softcap;     /* softcap 0: none */
    bool causal;
    int64_t left, right;       /* sliding window (opset 25), -1: unbounded */
    int mode;                  /* qk_matmul_output_mode */
} lt_attn;

/* Reads and checks the inputs from index base on (Q, K, V, attn_mask,
 * past_key, past_value, nonpad_kv_seqlen) and the node's attributes. Fails
 * the kernel with one line naming what is wrong. */
lt_status lt_attn_setup(lt_kctx *k, lt_attn *a, int base);

/* The additive bias of the score of query i against key j in batch b, head
 * h: the mask's value (0 or -inf for a boolean mask, -inf past its last
 * column), -inf outside the causal frontier, the window or the non-padded
 * keys. */
static inline double lt_attn_bias(const lt_attn *a, int64_t b, int64_t h, int64_t i, int64_t j)
{
    double bias = 0;
    if (a->mask) {
        if (j >= a->Tm)
            return -INFINITY;
        double m = a->mask[b * a->ms[0] + h * a->ms[1] + i * a->ms[2] + j * a->ms[3]];
        if (a->mask_bool) {
            if (m == 0)
                return -INFINITY;
        } else {
            bias = m;
        }
    }
    int64_t p = i + a->offset[b];
    if (a->causal && j > p)
        return -INFINITY;
    if (a->left >= 0 && p - j > a->left)
        return -INFINITY;
    if (a->right >= 0 && j - p > a->right)
        return -INFINITY;
    if (a->nonpad && j >= a->nonpad[b])
        return -INFINITY;
    return bias;
}

/* Key j (of T) of key head g in batch b: from past_key for j < P. */
static inline const double *lt_attn_key(const lt_attn *a, int64_t b, int64_t g, int64_t j)
{
    if (j < a->P)
        return a->pk + ((b * a->Hkv + g) * a->P + j) * a->D;
    return a->k + b * a->ks[0] + g * a->ks[1] + (j - a->P) * a->ks[2];
}

static inline const double *lt_attn_value(const lt_attn *a, int64_t b, int64_t g, int64_t j)
{
    if (j < a->P)
        return a->pv + ((b * a->Hkv + g) * a->P + j) * a->Dv;
    return a->v + b * a->vs[0] + g * a->vs[1] + (j - a->P) * a->vs[2];
}

/* The scores of query row i (qi its values) of head h against every key:
 * z[j] = scale q.k_j, c[j] = z[j] softcapped, s[j] = c[j] + bias. Keys
 * whose bias is -inf are skipped (s = -inf, z = c = 0) unless all is set.
 * Returns false for a fully masked row (every bias -inf): then the row's
 * output is 0. */
bool lt_attn_scores(const lt_attn *a, int64_t b, int64_t h, int64_t i, const double *qi, double *z, double *c,
                    double *s, bool all);
/* s (T scores) turned into probabilities in place; a row with no finite
 * score gives 0. */
void lt_attn_softmax(double *s, int64_t n);

#endif
