/* Background batch gathering (see prefetch.h). The worker gathers without
 * OpenMP: the calling thread's kernels own the OpenMP pool, and a team
 * started from a second thread would compete with them for the cores. */
#include "prefetch.h"
#include "dataset_impl.h"
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

struct lt_prefetch {
    const lt_dataset *d;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* signalled on every state change, both ways */
    bool pending;      /* submitted and not yet waited for */
    bool running;      /* submitted and not yet finished by the worker */
    bool quit;
    const int64_t *idx;
    int64_t n;
    lt_tensor *x, *y;
    lt_ds_aug aug;
    bool has_aug;
    lt_status st;
    lt_err err;
};

static void *worker(void *arg)
{
    lt_prefetch *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->running && !p->quit)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->running)
            break;
        pthread_mutex_unlock(&p->mu);
        lt_status st = lt_ds_gather_aug(p->d, p->idx, p->n, p->x, p->y, 0, p->has_aug ? &p->aug : NULL, &p->err);
        pthread_mutex_lock(&p->mu);
        p->st = st;
        p->running = false;
        pthread_cond_broadcast(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

lt_status lt_prefetch_new(const lt_dataset *d, lt_prefetch **out, lt_err *err)
{
    *out = NULL;
    lt_prefetch *p = calloc(1, sizeof *p);
    if (!p)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    p->d = d;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    /* signals (the trainer's SIGINT) stay with the threads that expect them */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&p->thread, NULL, worker, p);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        pthread_cond_destroy(&p->cv);
        pthread_mutex_destroy(&p->mu);
        free(p);
        return lt_errf(err, LT_ERR_RUNTIME, "cannot start the prefetch thread: %s", strerror(rc));
    }
    *out = p;
    return LT_OK;
}

lt_status lt_prefetch_submit(lt_prefetch *p, const int64_t *idx, int64_t n, lt_tensor *x, lt_tensor *y,
                             lt_err *err)
{
    return lt_prefetch_submit_aug(p, idx, n, x, y, NULL, err);
}

lt_status lt_prefetch_submit_aug(lt_prefetch *p, const int64_t *idx, int64_t n, lt_tensor *x, lt_tensor *y,
                                 const lt_ds_aug *aug, lt_err *err)
{
    pthread_mutex_lock(&p->mu);
    if (p->pending) {
        pthread_mutex_unlock(&p->mu);
        return lt_errf(err, LT_ERR_INTERNAL, "prefetch: a batch was submitted before the previous one was waited for");
    }
    p->idx = idx;
    p->n = n;
    p->x = x;
    p->y = y;
    p->has_aug = aug != NULL;
    if (aug)
        p->aug = *aug;
    p->pending = p->running = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return LT_OK;
}

lt_status lt_prefetch_wait(lt_prefetch *p, lt_err *err)
{
    pthread_mutex_lock(&p->mu);
    lt_status st = LT_OK;
    if (p->pending) {
        while (p->running)
            pthread_cond_wait(&p->cv, &p->mu);
        p->pending = false;
        st = p->st;
        if (st != LT_OK && err)
            memcpy(err->msg, p->err.msg, sizeof err->msg);
    }
    pthread_mutex_unlock(&p->mu);
    return st;
}

void lt_prefetch_free(lt_prefetch *p)
{
    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    p->quit = true;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
