/* Planned memory: one arena per block, offsets from liveness.
 *
 * The first frame of a block with a new input-shape signature (the dtypes
 * and dims of its parameters) runs on the caching pool and records, for
 * every output a kernel allocates (node i, output j), its size, the backend
 * it went to, the node that made it and the node during which its buffer
 * was released (views and copies included: the buffer's own release is
 * watched, not the value's). Outputs that outlive the frame (block results,
 * loop-carried values, anything kept by the caller), that a kernel asks for
 * twice or whose size changes from run to run stay on the pool. The rest get
 * offsets in one arena (greedy by size over the intervals [made, released]);
 * an output of a kernel that can write over its input (lt_k_out_over) takes
 * that input's offset when the input's buffer dies at that node.
 *
 * Later frames with the same signature hand out arena slices: a steady-state
 * step takes nothing from the system. Every assumption is checked as it
 * runs: an output asked with more bytes than planned, on another backend,
 * or an in-place input still referenced elsewhere goes to the pool instead;
 * a buffer still alive after the node the plan expects it to die at turns
 * the arena off for the rest of the frame (nothing planned after it can
 * overlap it) and the layout is planned again without it. A frame that
 * starts while a slice of the arena is still held elsewhere gets a new
 * arena (the old one goes when its last slice does).
 *
 * Layouts are kept per signature (the most recent LT_MPLAN_KEEP per block).
 * LANTERN_MEMPLAN=0 turns planning off (the pool alone); checked memory
 * mode turns it off too. LANTERN_MEMPLAN_CHECK=1 checks every layout made
 * (no two slices alive at once overlap) and, at run time, that no slice is
 * handed out over a live one; a failure is an LT_ERR_INTERNAL status. */
#ifndef LT_MEMPLAN_H
#define LT_MEMPLAN_H

#include "runtime.h"

#define LT_MPLAN_KEEP 64

typedef struct lt_mlayout lt_mlayout;
typedef struct lt_arena lt_arena;

/* A block's planned memory: its layouts by signature and its arenas. */
typedef struct lt_mplan {
    lt_mlayout *layouts; /* most recently used first */
    int nlayouts;
    lt_arena *arena[2]; /* [0] host, [1] the session's device-path backend */
} lt_mplan;

struct lt_exec;

/* Whether planning is on for this executor (LANTERN_MEMPLAN, checked mode). */
bool lt_mplan_enabled(void);
/* A frame of block b begins with these parameter values: the layout it
 * runs under (NULL: the pool alone). dies_in[i] has bit j set when the
 * block's plan releases node i's input j right after node i. */
lt_status lt_mplan_begin(struct lt_exec *ex, lt_mplan *mp, const lt_block *b, lt_value *const *args,
                         const uint64_t *dies_in, lt_mlayout **out);
/* Node i of the frame is about to run. */
void lt_mplan_node(lt_mlayout *lay, int i);
/* Node i has run and its dead values are released. */
void lt_mplan_after_node(lt_mlayout *lay, int i);
/* The frame ended (ok: it ran to its end) and released what it defined. */
lt_status lt_mplan_end(struct lt_exec *ex, lt_mplan *mp, lt_mlayout *lay, bool ok);
/* Output i of the running node as a slice of the arena, NULL when the
 * pool must serve it; over >= 0: the kernel can write it over input over. */
lt_buf *lt_mplan_alloc(lt_kctx *k, int i, int over, lt_dtype dtype, size_t bytes);
void lt_mplan_free(lt_mplan *mp);

/* Totals for lantern train --stats and tests. */
typedef struct lt_mplan_stats {
    uint64_t layouts;       /* layouts made (one per block and signature seen) */
    uint64_t arenas;        /* arenas allocated */
    uint64_t replans;       /* layouts planned again after a check failed */
    uint64_t planned, pooled; /* outputs served from an arena / the pool in planned frames */
    uint64_t inplace;       /* outputs written over their input */
    size_t arena_bytes;     /* bytes of arenas held now */
    size_t arena_peak;      /* most arena bytes held at once */
    uint64_t check_failures; /* LANTERN_MEMPLAN_CHECK failures */
} lt_mplan_stats;
void lt_mplan_stats_get(lt_mplan_stats *out);
void lt_mplan_stats_reset(void);

#endif
