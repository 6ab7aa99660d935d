/* Buffers a thread keeps for its later calls (thread_buf.h). */
#include "thread_buf.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef struct slots {
    void *p[LT_THREAD_BUF_SLOTS];
    size_t cap[LT_THREAD_BUF_SLOTS];
} slots;

static pthread_key_t key;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void slots_free(void *v)
{
    slots *s = v;
    for (int i = 0; i < LT_THREAD_BUF_SLOTS; i++)
        free(s->p[i]);
    free(s);
}

static void key_init(void) { (void)pthread_key_create(&key, slots_free); }

void *lt_thread_buf(int slot, size_t bytes)
{
    if (slot < 0 || slot >= LT_THREAD_BUF_SLOTS)
        return NULL;
    pthread_once(&once, key_init);
    slots *s = pthread_getspecific(key);
    if (!s) {
        if (!(s = calloc(1, sizeof *s)))
            return NULL;
        if (pthread_setspecific(key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (s->cap[slot] < bytes) {
        size_t len = (bytes + 63) / 64 * 64;
        void *p = aligned_alloc(64, len);
        if (!p)
            return NULL;
        /* faulted in now: a call uses as much of it as its sizes need, and a
         * larger one many steps later would otherwise fault in a steady step */
        memset(p, 0, len);
        free(s->p[slot]);
        s->p[slot] = p;
        s->cap[slot] = len;
    }
    return s->p[slot];
}
