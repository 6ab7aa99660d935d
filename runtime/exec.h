/* Executor internals shared by exec.c and session.c. */
#ifndef LT_EXEC_H
#define LT_EXEC_H

#include "runtime.h"
#include "backend.h"
#include "memplan.h"

/* Frames nest on the C stack. Programs with functions (the AD's recursive
 * loops) run on a thread whose stack is reserved large and committed only as
 * it is touched, so recursion depth is bounded by memory; plain models run
 * on the caller's stack with a small limit. */
#define LT_EXEC_MAX_DEPTH 256
#define LT_EXEC_BIG_STACK ((size_t)4 << 30)
#define LT_EXEC_BIG_DEPTH (1 << 20)

typedef struct lt_plan {
    int nnodes;
    lt_kernel_fn *kernels; /* resolved once per block */
    bool *on_dev;          /* node i runs on the session's backend */
    uint64_t *host_in;     /* its inputs read on the host (bit per input) */
    int *free_start;       /* values to release after node i: free_ids[free_start[i]..free_start[i+1]) */
    int *free_ids;
    uint64_t *dies_in; /* bit j: node i's input j is released right after node i */
    int nids, *ids; /* every value the block defines, nested regions included */
    /* its planned memory (memplan.h), one per level of recursion: the
     * frame entered while k frames of the block run takes mem[k] */
    lt_mplan **mem;
    int nmem;
    int active;     /* frames of this block running now (recursion) */
    const lt_block *block; /* the block planned */
    struct lt_plan *next_all;
} lt_plan;

struct lt_scratch_chunk;

typedef struct lt_exec {
    lt_module *m;
    lt_err *err;
    lt_value **env; /* by SSA id */
    lt_plan *plans;
    /* the plans by block: each session plans the blocks it runs itself, so
     * that two sessions of one model share no plan, memory or counter */
    lt_plan **plan_slots;
    int plan_cap, plan_n;
    struct lt_scratch_chunk *scratch, *scratch_free;
    size_t scratch_in_use, scratch_hw; /* scratch bytes taken now, and at most */
    bool memplan;                      /* planned memory is on (memplan.h) */
    struct lt_mlayout *mem;            /* the layout of the innermost frame running */
    uint64_t rng;
    int depth, max_depth;
    const struct lt_backend *be; /* the session's backend; NULL: the host only */
    lt_copy_stats stats;         /* copies at its edges since the last reset */
    bool keep_results;           /* lt_session_keep_results: results stay in the backend's memory */
} lt_exec;

lt_status lt_exec_init(lt_exec *ex, lt_module *m, lt_err *err);
void lt_exec_fini(lt_exec *ex);
lt_status lt_exec_block(lt_exec *ex, const lt_block *b, lt_value *const *args, lt_value **results);
/* Runs read module parameter p from t (memory of the session's backend,
 * retained) instead of the module's host data; t NULL: from the host data
 * again. */
lt_status lt_exec_bind_param(lt_exec *ex, int p, const lt_tensor *t);
/* Brings n values to the host (in place: a moved value replaces vals[i]). */
lt_status lt_exec_to_host(lt_exec *ex, int n, lt_value **vals);
void lt_plan_free(lt_plan *p);

#endif
