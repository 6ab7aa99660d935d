/* Tensors and their storage: reference-counted buffers served from a caching
 * pool with power-of-two size classes, so memory freed at a value's last use
 * is reused by the next allocation of a similar size. */
#include "runtime.h"
#include "backend.h"
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define LT_POOL_CLASSES 40 /* 64 B .. 2^45 B */
#define LT_POOL_KEEP 512   /* cached blocks kept per class */

/* A caching pool: the host's, and one per device-path backend (backend.c). */
struct lt_pool {
    pthread_mutex_t mu;
    lt_buf *free[LT_POOL_CLASSES][LT_POOL_KEEP];
    int nfree[LT_POOL_CLASSES];
    size_t in_use, peak;
};

static lt_pool host_pool = {.mu = PTHREAD_MUTEX_INITIALIZER};

lt_pool *lt_pool_host(void) { return &host_pool; }

lt_pool *lt_pool_new(void)
{
    lt_pool *p = calloc(1, sizeof *p);
    if (p && pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p);
        p = NULL;
    }
    return p;
}

void lt_pool_free(lt_pool *p)
{
    if (!p || p == &host_pool)
        return;
    lt_pool_trim_pool(p);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static void count_in(lt_pool *p, size_t bytes)
{
    p->in_use += bytes;
    if (p->in_use > p->peak)
        p->peak = p->in_use;
}

static int size_class(size_t bytes)
{
    int c = 0;
    size_t s = 64;
    while (s < bytes && c < LT_POOL_CLASSES - 1) {
        s <<= 1;
        c++;
    }
    return s >= bytes ? c : -1;
}

/* ---- checked memory mode ----
 * Every buffer is its own mapping with an unreadable guard page after it,
 * filled with 0xFF bytes (a NaN in every float type) when made. A released
 * buffer is filled with 0xFF again, made unreadable and kept in a
 * quarantine (the oldest are unmapped past LT_CHECKED_KEEP buffers or
 * LANTERN_CHECKED_QUARANTINE_MB), so a stale read faults and the handler
 * says so before the process dies. */
#define LT_CHECKED_KEEP 8192
#define LT_BUF_CHECKED (-2) /* lt_buf.cls of a checked-mode mapping */

static int checked_mode = -1;

bool lt_checked_memory(void)
{
    int m = __atomic_load_n(&checked_mode, __ATOMIC_ACQUIRE);
    if (m < 0) {
        const char *e = getenv("LANTERN_CHECKED_MEMORY");
        m = e && *e && strcmp(e, "0") != 0;
        __atomic_store_n(&checked_mode, m, __ATOMIC_RELEASE);
    }
    return m == 1;
}

uint64_t lt_bytes_digest(const void *p, size_t n)
{
    const unsigned char *b = p;
    uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, b + i, 8);
        h = (h ^ w) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    for (; i < n; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

static pthread_mutex_t quarantine_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
    void *base[LT_CHECKED_KEEP];
    size_t len[LT_CHECKED_KEEP];
    int head, count;
    size_t bytes, limit;
    bool limit_set;
    struct sigaction prev; /* the handler ours replaced, restored after a report */
} quarantine;

static size_t page_size(void)
{
    long ps = sysconf(_SC_PAGESIZE);
    return ps > 0 ? (size_t)ps : 4096;
}

static void checked_fault(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    uintptr_t a = (uintptr_t)si->si_addr;
    const char *what = "lantern: checked memory: fault outside any released buffer\n";
    for (int i = 0; i < quarantine.count; i++) {
        int at = (quarantine.head + LT_CHECKED_KEEP - 1 - i) % LT_CHECKED_KEEP;
        uintptr_t b = (uintptr_t)quarantine.base[at];
        if (a >= b && a < b + quarantine.len[at]) {
            what = "lantern: checked memory: a released buffer was read or written (use after its last use)\n";
            break;
        }
    }
    ssize_t w = write(2, what, strlen(what));
    (void)w;
    /* the faulting access repeats and goes to the handler before ours (by
     * default it ends the process) */
    sigaction(sig, &quarantine.prev, NULL);
}

static lt_buf *checked_alloc(lt_pool *p, size_t bytes)
{
    size_t ps = page_size(), need = (bytes + 63) & ~(size_t)63;
    size_t body = (need + ps - 1) / ps * ps, len = body + ps;
    lt_buf *b = malloc(sizeof *b);
    if (!b)
        return NULL;
    unsigned char *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED) {
        free(b);
        return NULL;
    }
    mprotect(base + body, ps, PROT_NONE);
    /* the data ends where the guard page begins */
    b->data = base + body - need;
    memset(b->data, 0xFF, need);
    b->size = need;
    b->cls = LT_BUF_CHECKED;
    b->refs = 1;
    b->pool = p;
    b->be = NULL;
    b->release = NULL;
    pthread_mutex_lock(&quarantine_mu);
    if (!quarantine.limit_set) {
        const char *q = getenv("LANTERN_CHECKED_QUARANTINE_MB");
        quarantine.limit = (size_t)(q && atol(q) > 0 ? atol(q) : 4096) << 20;
        quarantine.limit_set = true;
    }
    /* ours stays installed even where the program sets handlers of its own
     * later (a test runner does, around each test) */
    struct sigaction cur;
    if (sigaction(SIGSEGV, NULL, &cur) == 0 && !((cur.sa_flags & SA_SIGINFO) && cur.sa_sigaction == checked_fault)) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = checked_fault;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        quarantine.prev = cur;
        sigaction(SIGSEGV, &sa, NULL);
    }
    pthread_mutex_unlock(&quarantine_mu);
    pthread_mutex_lock(&p->mu);
    count_in(p, b->size);
    pthread_mutex_unlock(&p->mu);
    return b;
}

static void checked_release(lt_buf *b)
{
    size_t ps = page_size();
    unsigned char *base = (unsigned char *)((uintptr_t)b->data & ~(uintptr_t)(ps - 1));
    size_t len = (size_t)((unsigned char *)b->data + b->size - base) + ps;
    memset(b->data, 0xFF, b->size);
    mprotect(base, len, PROT_NONE);
    pthread_mutex_lock(&b->pool->mu);
    b->pool->in_use -= b->size;
    pthread_mutex_unlock(&b->pool->mu);
    pthread_mutex_lock(&quarantine_mu);
    while (quarantine.count > 0 && (quarantine.count == LT_CHECKED_KEEP || quarantine.bytes + len > quarantine.limit)) {
        int old = (quarantine.head + LT_CHECKED_KEEP - quarantine.count) % LT_CHECKED_KEEP;
        munmap(quarantine.base[old], quarantine.len[old]);
        quarantine.bytes -= quarantine.len[old];
        quarantine.count--;
    }
    quarantine.base[quarantine.head] = base;
    quarantine.len[quarantine.head] = len;
    quarantine.head = (quarantine.head + 1) % LT_CHECKED_KEEP;
    quarantine.count++;
    quarantine.bytes += len;
    pthread_mutex_unlock(&quarantine_mu);
    free(b);
}

lt_buf *lt_pool_alloc(lt_pool *p, size_t bytes)
{
    if (lt_checked_memory())
        return checked_alloc(p, bytes ? bytes : 1);
    int c = size_class(bytes ? bytes : 1);
    size_t cap = c >= 0 ? ((size_t)64 << c) : bytes;
    lt_buf *b = NULL;
    /* one critical section for a cached block: take it and count it */
    pthread_mutex_lock(&p->mu);
    if (c >= 0 && p->nfree[c] > 0) {
        b = p->free[c][--p->nfree[c]];
        count_in(p, b->size);
    }
    pthread_mutex_unlock(&p->mu);
    if (b) {
        b->refs = 1;
        b->be = NULL;
        return b;
    }
    b = malloc(sizeof *b);
    if (!b)
        return NULL;
    if (posix_memalign(&b->data, 64, cap) != 0) {
        free(b);
        return NULL;
    }
    b->size = cap;
    b->cls = c;
    b->refs = 1;
    b->pool = p;
    b->be = NULL;
    b->release = NULL;
    pthread_mutex_lock(&p->mu);
    count_in(p, b->size);
    pthread_mutex_unlock(&p->mu);
    return b;
}

lt_buf *lt_buf_alloc(size_t bytes) { return lt_pool_alloc(&host_pool, bytes); }

void lt_buf_retain(lt_buf *b)
{
    if (b)
        __atomic_add_fetch(&b->refs, 1, __ATOMIC_RELAXED);
}

void lt_buf_release(lt_buf *b)
{
    if (!b || __atomic_sub_fetch(&b->refs, 1, __ATOMIC_ACQ_REL) != 0)
        return;
    if (b->release) {
        b->release(b);
        return;
    }
    if (b->cls == LT_BUF_CHECKED) {
        checked_release(b);
        return;
    }
    lt_pool *p = b->pool;
    pthread_mutex_lock(&p->mu);
    p->in_use -= b->size;
    if (b->cls >= 0 && p->nfree[b->cls] < LT_POOL_KEEP) {
        p->free[b->cls][p->nfree[b->cls]++] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&p->mu);
    if (b) {
        free(b->data);
        free(b);
    }
}

void lt_pool_trim_pool(lt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    for (int c = 0; c < LT_POOL_CLASSES; c++) {
        while (p->nfree[c] > 0) {
            lt_buf *b = p->free[c][--p->nfree[c]];
            free(b->data);
            free(b);
        }
    }
    pthread_mutex_unlock(&p->mu);
}

void lt_pool_trim(void) { lt_pool_trim_pool(&host_pool); }

size_t lt_pool_in_use_of(lt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->in_use;
    pthread_mutex_unlock(&p->mu);
    return n;
}

size_t lt_pool_peak_of(lt_pool *p)
{
    pthread_mutex_lock(&p->mu);
    size_t n = p->peak;
    pthread_mutex_unlock(&p->mu);
    return n;
}

size_t lt_pool_bytes_in_use(void) { return lt_pool_in_use_of(&host_pool); }
size_t lt_pool_peak_bytes(void) { return lt_pool_peak_of(&host_pool); }

void lt_pool_account(lt_pool *p, int64_t n)
{
    pthread_mutex_lock(&p->mu);
    if (n >= 0)
        count_in(p, (size_t)n);
    else
        p->in_use -= (size_t)-n;
    pthread_mutex_unlock(&p->mu);
}

void lt_pool_reset_peak(void)
{
    pthread_mutex_lock(&host_pool.mu);
    host_pool.peak = host_pool.in_use;
    pthread_mutex_unlock(&host_pool.mu);
}

/* ---- tensors ---- */
lt_status lt_tensor_alloc(lt_tensor *t, lt_dtype dtype, int rank, const int64_t *dims, lt_err *err)
{
    return lt_tensor_alloc_on(t, NULL, dtype, rank, dims, err);
}

lt_status lt_tensor_alloc_on(lt_tensor *t, const lt_backend *be, lt_dtype dtype, int rank, const int64_t *dims,
                             lt_err *err)
{
    memset(t, 0, sizeof *t);
    if (rank < 0 || rank > LT_MAX_RANK)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "tensor rank %d is beyond lantern's limit of %d", rank,
                       LT_MAX_RANK);
    size_t es = lt_dtype_size(dtype);
    if (es == 0)
        return lt_errf(err, LT_ERR_UNSUPPORTED, "element type %s is not supported", lt_dtype_name(dtype));
    int64_t n = lt_shape_numel(rank, dims);
    size_t bytes;
    if (n < 0 || __builtin_mul_overflow((size_t)n, es, &bytes))
        return lt_errf(err, LT_ERR_INVALID, "tensor shape overflows or has a negative dim");
    if (dtype == LT_STRING)
        be = NULL; /* strings are the host's */
    lt_buf *b = be && !be->host ? be->alloc(be, bytes) : lt_buf_alloc(bytes);
    if (!b) {
        if (be && !be->host)
            return lt_errf(err, LT_ERR_NOMEM, "out of %s memory allocating %zu bytes (%zu bytes of it in use)",
                           be->name, bytes, be->bytes_in_use(be));
        return lt_errf(err, LT_ERR_NOMEM, "out of memory allocating %zu bytes", bytes);
    }
    t->dtype = dtype;
    t->rank = rank;
    for (int i = 0; i < rank; i++)
        t->dims[i] = dims[i];
    t->numel = n;
    t->buf = b;
    t->data = b->data;
    if (dtype == LT_STRING) {
        const char *empty = lt_str_intern("", 0);
        for (int64_t i = 0; i < n; i++)
            ((const char **)t->data)[i] = empty;
    }
    return LT_OK;
}

void lt_tensor_view(lt_tensor *dst, const lt_tensor *src, int rank, const int64_t *dims)
{
    lt_tensor v = *src;
    v.rank = rank;
    for (int i = 0; i < rank; i++)
        v.dims[i] = dims[i];
    lt_buf_retain(v.buf);
    *dst = v;
}

lt_status lt_tensor_clone(lt_tensor *dst, const lt_tensor *src, lt_err *err)
{
    lt_status s = lt_tensor_alloc(dst, src->dtype, src->rank, src->dims, err);
    if (s == LT_OK && lt_tensor_nbytes(src))
        memcpy(dst->data, src->data, lt_tensor_nbytes(src));
    return s;
}

void lt_tensor_release(lt_tensor *t)
{
    if (t->buf)
        lt_buf_release(t->buf);
    t->buf = NULL;
    t->data = NULL;
}
