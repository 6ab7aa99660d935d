/* Sessions: run a model's main graph on given inputs. */
#include "exec.h"
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct big_run;

/* Programs with functions run on a thread with a deep stack (exec.h). It
 * is made once per session and kept: a thread made per run would also get
 * a fresh OpenMP pool (libgomp keeps one per thread that opens parallel
 * regions), so every step would start and stop worker threads. */
typedef struct runner {
    bool started, quit;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct big_run *job; /* set by the caller, cleared by the runner when done */
} runner;

struct lt_session {
    lt_model *m;
    lt_exec ex;
    lt_err *err;
    runner run;
};

/* OpenBLAS's own pool would fight OpenMP's; pin it to one thread so every
 * parallel region comes from OpenMP. */
extern void openblas_set_num_threads(int) __attribute__((weak));

void lt_set_num_threads(int n)
{
    if (n > 0)
        omp_set_num_threads(n);
    if (openblas_set_num_threads)
        openblas_set_num_threads(1);
}

/* Blocks are planned lazily, as they first run; a node no kernel can run
 * is reported here instead, by name and op, before anything runs (an op
 * lantern does not know leaves its outputs undefined, which would only
 * surface later as a value that is missing). */
static lt_status check_runnable(const lt_module *m, const lt_block *b, lt_err *err)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (!lt_cpu_kernels[n->op]) {
            char lb[256];
            return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: %s: no CPU kernel for op %s", m->path,
                           lt_node_label(n, lb, sizeof lb), lt_op_names[n->op]);
        }
        for (int r = 0; r < n->nregions; r++) {
            lt_status st = check_runnable(m, n->regions[r], err);
            if (st != LT_OK)
                return st;
        }
    }
    return LT_OK;
}

static lt_status model_runnable(const lt_module *m, lt_err *err)
{
    if (m->nunsupported > 0) {
        const struct lt_unsupported *u = &m->unsupported[0];
        return lt_errf(err, LT_ERR_UNSUPPORTED, "%s: node '%s' (%s): no CPU kernel for op %s%s%s%s", m->path, u->node,
                       u->op, u->op, *u->domain ? " (domain " : "", u->domain, *u->domain ? ")" : "");
    }
    lt_cpu_kernels_init();
    lt_status st = m->main ? check_runnable(m, m->main, err) : LT_OK;
    for (int i = 0; i < m->nfuncs && st == LT_OK; i++)
        st = check_runnable(m, m->funcs[i]->body, err);
    return st;
}

lt_status lt_session_new(lt_model *m, lt_session **out, lt_err *err)
{
    if (!m || !out)
        return lt_errf(err, LT_ERR_INVALID, "lt_session_new: %s is NULL", !m ? "the model" : "out");
    *out = NULL;
    lt_status rs = model_runnable(m, err);
    if (rs != LT_OK)
        return rs;
    lt_session *s = calloc(1, sizeof *s);
    if (!s)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    if (openblas_set_num_threads)
        openblas_set_num_threads(1);
    s->m = m;
    lt_status st = lt_exec_init(&s->ex, m, err);
    if (st != LT_OK) {
        lt_exec_fini(&s->ex);
        free(s);
        return st;
    }
    __atomic_add_fetch(&m->live_sessions, 1, __ATOMIC_SEQ_CST);
    *out = s;
    return LT_OK;
}

lt_status lt_session_set_backend(lt_session *s, const lt_backend *be, lt_err *err)
{
    if (!be)
        return lt_errf(err, LT_ERR_INVALID, "no backend given");
    /* plans record which nodes run on the backend: make them again */
    lt_module *m = s->m;
    lt_exec_fini(&s->ex);
    lt_status st = lt_exec_init(&s->ex, m, err);
    if (st == LT_OK)
        s->ex.be = be;
    return st;
}

const lt_backend *lt_session_backend(const lt_session *s) { return s->ex.be; }

lt_status lt_session_bind_param(lt_session *s, int p, const lt_tensor *t, lt_err *err)
{
    s->ex.err = err;
    return lt_exec_bind_param(&s->ex, p, t);
}

void lt_session_keep_results(lt_session *s, bool keep) { s->ex.keep_results = keep; }

void lt_session_copy_stats(const lt_session *s, lt_copy_stats *out) { *out = s->ex.stats; }

static void runner_stop(runner *r)
{
    if (!r->started)
        return;
    pthread_mutex_lock(&r->mu);
    r->quit = true;
    pthread_cond_broadcast(&r->cv);
    pthread_mutex_unlock(&r->mu);
    pthread_join(r->th, NULL);
    pthread_cond_destroy(&r->cv);
    pthread_mutex_destroy(&r->mu);
    r->started = false;
}

void lt_session_free(lt_session *s)
{
    if (!s)
        return;
    runner_stop(&s->run);
    lt_exec_fini(&s->ex);
    __atomic_sub_fetch(&s->m->live_sessions, 1, __ATOMIC_SEQ_CST);
    free(s);
}

static bool value_fits(const lt_ival *iv, const lt_value *v)
{
    if (iv->type.kind == LT_KIND_TENSOR) {
        if (v->kind != LT_VAL_TENSOR)
            return false;
        if (iv->type.dtype != LT_UNDEFINED && iv->type.dtype != v->t.dtype &&
            !(iv->type.dtype == LT_BF16 && v->t.dtype == LT_U16))
            return false;
        if (iv->type.rank >= 0 && iv->type.rank != v->t.rank)
            return false;
        for (int i = 0; i < iv->type.rank; i++)
            if (iv->type.dims[i].sym < 0 && iv->type.dims[i].v >= 0 && iv->type.dims[i].v != v->t.dims[i])
                return false;
        return true;
    }
    if (iv->type.kind == LT_KIND_SEQUENCE)
        return v->kind == LT_VAL_SEQUENCE;
    return true;
}

typedef struct big_run {
    int threads; /* the caller's OpenMP thread count, which the runner takes */
    lt_exec *ex;
    const lt_block *b;
    lt_value *const *args;
    lt_value **outputs;
    lt_status st;
} big_run;

/* The runner: waits for a job, runs it, hands it back, until told to quit. */
static void *runner_main(void *p)
{
    runner *r = p;
    pthread_mutex_lock(&r->mu);
    for (;;) {
        while (!r->job && !r->quit)
            pthread_cond_wait(&r->cv, &r->mu);
        if (!r->job)
            break;
        big_run *j = r->job;
        pthread_mutex_unlock(&r->mu);
        /* OpenMP keeps a thread count per thread: the one the caller set
         * (lt_set_num_threads: --threads, the trainer's governor) holds
         * for the kernels run here too */
        if (omp_get_max_threads() != j->threads)
            omp_set_num_threads(j->threads);
        j->st = lt_exec_block(j->ex, j->b, j->args, j->outputs);
        pthread_mutex_lock(&r->mu);
        r->job = NULL;
        pthread_cond_broadcast(&r->cv);
    }
    pthread_mutex_unlock(&r->mu);
    return NULL;
}

static lt_status runner_start(runner *r, lt_err *err)
{
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0)
        return lt_errf(err, LT_ERR_NOMEM, "cannot set up a %zu-byte stack for the program", LT_EXEC_BIG_STACK);
    if (pthread_attr_setstacksize(&attr, LT_EXEC_BIG_STACK) != 0) {
        pthread_attr_destroy(&attr);
        return lt_errf(err, LT_ERR_NOMEM, "cannot set up a %zu-byte stack for the program", LT_EXEC_BIG_STACK);
    }
    if (pthread_mutex_init(&r->mu, NULL) != 0 || pthread_cond_init(&r->cv, NULL) != 0) {
        pthread_attr_destroy(&attr);
        return lt_errf(err, LT_ERR_NOMEM, "cannot set up the program's thread");
    }
    r->job = NULL;
    r->quit = false;
    int rc = pthread_create(&r->th, &attr, runner_main, r);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        pthread_cond_destroy(&r->cv);
        pthread_mutex_destroy(&r->mu);
        return lt_errf(err, LT_ERR_NOMEM, "cannot start the program's thread (a %zu-byte stack)", LT_EXEC_BIG_STACK);
    }
    r->started = true;
    return LT_OK;
}

/* Runs the main block; programs with functions get a deep stack. */
static lt_status run_main(lt_session *s, lt_value *const *args, lt_value **outputs, lt_err *err)
{
    if (s->m->nfuncs == 0) {
        s->ex.max_depth = LT_EXEC_MAX_DEPTH;
        return lt_exec_block(&s->ex, s->m->main, args, outputs);
    }
    runner *r = &s->run;
    if (!r->started) {
        lt_status st = runner_start(r, err);
        if (st != LT_OK)
            return st;
    }
    s->ex.max_depth = LT_EXEC_BIG_DEPTH;
    big_run j = {omp_get_max_threads(), &s->ex, s->m->main, args, outputs, LT_OK};
    pthread_mutex_lock(&r->mu);
    r->job = &j;
    pthread_cond_broadcast(&r->cv);
    while (r->job)
        pthread_cond_wait(&r->cv, &r->mu);
    pthread_mutex_unlock(&r->mu);
    return j.st;
}

/* The arguments of lt_session_run: present, each input named once. */
static lt_status check_run_args(const lt_session *s, int n, const char *const *names, lt_value *const *inputs,
                                lt_value **outputs, lt_err *err)
{
    if (!s)
        return lt_errf(err, LT_ERR_INVALID, "lt_session_run: the session is NULL");
    if (!outputs)
        return lt_errf(err, LT_ERR_INVALID, "lt_session_run: outputs is NULL (it needs lt_model_num_outputs slots)");
    if (n < 0)
        return lt_errf(err, LT_ERR_INVALID, "lt_session_run: n is %d; the count of inputs cannot be negative", n);
    if (n > 0 && (!names || !inputs))
        return lt_errf(err, LT_ERR_INVALID, "lt_session_run: %s is NULL with %d input(s) given",
                       !names ? "names" : "inputs", n);
    for (int i = 0; i < n; i++) {
        if (!names[i])
            return lt_errf(err, LT_ERR_INVALID, "lt_session_run: the name of input %d is NULL", i);
        if (!inputs[i])
            return lt_errf(err, LT_ERR_INVALID, "lt_session_run: input %d ('%s') is NULL", i, names[i]);
        for (int j = 0; j < i; j++)
            if (!strcmp(names[j], names[i]))
                return lt_errf(err, LT_ERR_INVALID, "%s: input '%s' is given twice (inputs %d and %d)", s->m->path,
                               names[i], j, i);
    }
    return LT_OK;
}

/* "float32[4,100]", "a sequence" or "none": what the caller gave */
static void given_str(const lt_value *v, char *buf, size_t len)
{
    const lt_tensor *t = lt_value_tensor(v);
    if (!t) {
        snprintf(buf, len, "%s", v->kind == LT_VAL_SEQUENCE ? "a sequence" : "none");
        return;
    }
    size_t a = (size_t)snprintf(buf, len, "%s[", lt_dtype_name(t->dtype));
    for (int d = 0; d < t->rank && a + 24 < len; d++)
        a += (size_t)snprintf(buf + a, len - a, "%s%lld", d ? "," : "", (long long)t->dims[d]);
    if (a + 2 < len)
        snprintf(buf + a, len - a, "]");
}

lt_status lt_session_run(lt_session *s, int n, const char *const *names, lt_value *const *inputs,
                         lt_value **outputs, lt_err *err)
{
    lt_status cs = check_run_args(s, n, names, inputs, outputs, err);
    if (cs != LT_OK)
        return cs;
    lt_module *m = s->m;
    lt_block *b = m->main;
    s->ex.err = err;
    lt_value **args = calloc(b->nparams ? b->nparams : 1, sizeof *args);
    lt_value **owned = calloc(b->nparams ? b->nparams : 1, sizeof *owned);
    lt_status st = LT_OK;
    if (!args || !owned) {
        st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (int i = 0; i < n && st == LT_OK; i++) {
        int k = 0;
        while (k < b->nparams && strcmp(b->params[k]->name, names[i]) != 0)
            k++;
        if (k == b->nparams)
            st = lt_errf(err, LT_ERR_INVALID, "%s: the model has no input named '%s'", m->path, names[i]);
        else if (!value_fits(b->params[k], inputs[i])) {
            char want[256];
            FILE *f = fmemopen(want, sizeof want, "w");
            if (f) {
                lt_type_print(m, &b->params[k]->type, f);
                fclose(f);
            } else {
                strcpy(want, "?");
            }
            char got[256];
            given_str(inputs[i], got, sizeof got);
            st = lt_errf(err, LT_ERR_INVALID, "%s: input '%s' expects %s, got %s", m->path, names[i], want, got);
        } else
            args[k] = inputs[i];
        /* ONNX test data stores bfloat16 tensors as uint16 bit patterns */
        if (st == LT_OK && b->params[k]->type.dtype == LT_BF16 && inputs[i]->kind == LT_VAL_TENSOR &&
            inputs[i]->t.dtype == LT_U16)
            inputs[i]->t.dtype = LT_BF16;
    }
    for (int k = 0; k < b->nparams && st == LT_OK; k++) {
        if (args[k])
            continue;
        int d = m->input_default ? m->input_default[k] : -1;
        if (d < 0) {
            if (b->params[k]->type.kind == LT_KIND_OPTIONAL) {
                owned[k] = args[k] = lt_value_new_none();
                continue;
            }
            st = lt_errf(err, LT_ERR_INVALID, "%s: no value given for input '%s'", m->path, b->params[k]->name);
            break;
        }
        owned[k] = args[k] = lt_value_new_tensor();
        if (!args[k]) {
            st = lt_errf(err, LT_ERR_NOMEM, "out of memory");
            break;
        }
        /* the parameter's data, or the backend's copy it is bound to */
        const lt_value *pv = s->ex.env[m->params[d].value->id];
        if (pv && pv->kind == LT_VAL_TENSOR && pv->t.buf) {
            args[k]->t = pv->t;
            lt_buf_retain(pv->t.buf); /* released with owned[k] */
        } else {
            args[k]->t = m->params[d].data;
            args[k]->t.buf = NULL;
        }
    }
    if (st == LT_OK) {
        memset(&s->ex.stats, 0, sizeof s->ex.stats);
        st = run_main(s, args, outputs, err);
        /* what the caller gets back is on the host */
        if (st == LT_OK && s->ex.be && !s->ex.be->host && !s->ex.keep_results) {
            st = lt_exec_to_host(&s->ex, b->nresults, outputs);
            if (st != LT_OK)
                for (int i = 0; i < b->nresults; i++) {
                    lt_value_free(outputs[i]);
                    outputs[i] = NULL;
                }
        }
    }
done:
    if (owned)
        for (int k = 0; k < b->nparams; k++)
            if (owned[k]) {
                owned[k]->t.data = NULL; /* borrowed from the parameter */
                lt_value_free(owned[k]);
            }
    free(args);
    free(owned);
    return st;
}
