/* Sessions: run a model's main graph on given inputs. */
#include "exec.h"
#include <omp.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct lt_session {
    lt_model *m;
    lt_exec ex;
    lt_err *err;
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

lt_status lt_session_new(lt_model *m, lt_session **out, lt_err *err)
{
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
    *out = s;
    return LT_OK;
}

void lt_session_free(lt_session *s)
{
    if (!s)
        return;
    lt_exec_fini(&s->ex);
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
    lt_exec *ex;
    const lt_block *b;
    lt_value *const *args;
    lt_value **outputs;
    lt_status st;
} big_run;

static void *run_on_big_stack(void *p)
{
    big_run *r = p;
    r->st = lt_exec_block(r->ex, r->b, r->args, r->outputs);
    return NULL;
}

/* Runs the main block; programs with functions get a deep stack. */
static lt_status run_main(lt_session *s, lt_value *const *args, lt_value **outputs, lt_err *err)
{
    if (s->m->nfuncs == 0) {
        s->ex.max_depth = LT_EXEC_MAX_DEPTH;
        return lt_exec_block(&s->ex, s->m->main, args, outputs);
    }
    pthread_attr_t attr;
    pthread_t th;
    big_run r = {&s->ex, s->m->main, args, outputs, LT_OK};
    if (pthread_attr_init(&attr) != 0 || pthread_attr_setstacksize(&attr, LT_EXEC_BIG_STACK) != 0)
        return lt_errf(err, LT_ERR_NOMEM, "cannot set up a %zu-byte stack for the program", LT_EXEC_BIG_STACK);
    s->ex.max_depth = LT_EXEC_BIG_DEPTH;
    int rc = pthread_create(&th, &attr, run_on_big_stack, &r);
    pthread_attr_destroy(&attr);
    if (rc != 0)
        return lt_errf(err, LT_ERR_NOMEM, "cannot start the program's thread (a %zu-byte stack)", LT_EXEC_BIG_STACK);
    pthread_join(th, NULL);
    return r.st;
}

lt_status lt_session_run(lt_session *s, int n, const char *const *names, lt_value *const *inputs,
                         lt_value **outputs, lt_err *err)
{
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
            const lt_tensor *t = lt_value_tensor(inputs[i]);
            st = lt_errf(err, LT_ERR_INVALID, "%s: input '%s' expects %s, got %s of rank %d", m->path, names[i],
                         want, t ? lt_dtype_name(t->dtype) : "a non-tensor", t ? t->rank : -1);
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
        args[k]->t = m->params[d].data;
        args[k]->t.buf = NULL;
    }
    if (st == LT_OK)
        st = run_main(s, args, outputs, err);
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
