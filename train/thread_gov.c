/* The trainer's thread governor (thread_gov.h). The cost of a run is its
 * time per input element, so runs over samples of different sizes (trees,
 * sentences) compare. A probe alternates all threads and one thread,
 * LT_GOV_PROBE runs each, so a change of load during it falls on both; each
 * counted run follows an uncounted one with the same setting, since the
 * first run after a change pays for it (on a loaded machine the threads
 * take a while to find their CPUs again, and one thread then looked 30 %
 * slower than it runs). It takes each setting's median cost (with another process on a core, a run
 * on all threads now and then finds that core free and runs fast, which a
 * least cost would take for the setting's); all threads are kept only when
 * they were clearly faster (LT_GOV_MARGIN): on an idle machine they are
 * (1.4-2x on the models that gain from them), and where they were about
 * even the machine is busy or the model too small to share, and one thread
 * runs steadier and leaves the other core to whoever needs it. Between
 * probes the median of the last LT_GOV_RECENT runs on all threads is held
 * against one thread's probe cost (LT_GOV_DRIFT).
 * The first probe waits out the first runs (planning, first allocations,
 * the pool's threads starting) and the second comes soon after it. */
#include "thread_gov.h"
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

void lt_set_num_threads(int n);

enum { GOV_WARM, GOV_PROBE, GOV_SETTLED };

#define LT_GOV_WARM 3      /* runs before the first probe */
#define LT_GOV_FIRST 12    /* settled runs before the second probe */
#define LT_GOV_EVERY 100   /* settled runs between later probes */
#define LT_GOV_MARGIN 0.95 /* all threads are kept when they cost less than this times one */
#define LT_GOV_SLOW 1.5    /* a settled run this much costlier than base counts as slow */
#define LT_GOV_SLOW_RUNS 3 /* slow runs in a row that start a probe early */
#define LT_GOV_DRIFT 1.05  /* recent runs this much costlier than one thread was: change over */

double lt_thread_gov_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int pool_size(void)
{
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

static void use(lt_thread_gov *g, int threads)
{
    if (threads != pool_size())
        lt_set_num_threads(threads);
    g->cur = threads;
}

void lt_thread_gov_init(lt_thread_gov *g, int max)
{
    *g = (lt_thread_gov){.max = max > 0 ? max : pool_size(), .phase = GOV_WARM};
    g->cur = g->max;
}

void lt_thread_gov_before(lt_thread_gov *g)
{
    if (g->max > 1 && pool_size() != g->cur)
        lt_set_num_threads(g->cur);
}

/* The median of n costs (n <= LT_GOV_PROBE, LT_GOV_RECENT), sorted in a copy. */
static double median(const double *c, int n)
{
    double s[LT_GOV_PROBE > LT_GOV_RECENT ? LT_GOV_PROBE : LT_GOV_RECENT];
    for (int i = 0; i < n; i++) {
        int j = i;
        for (; j > 0 && s[j - 1] > c[i]; j--)
            s[j] = s[j - 1];
        s[j] = c[i];
    }
    return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

static void start_probe(lt_thread_gov *g)
{
    g->phase = GOV_PROBE;
    g->n = 0;
    g->probes++;
    use(g, g->max);
}

void lt_thread_gov_after(lt_thread_gov *g, double seconds, double work)
{
    if (g->max <= 1)
        return;
    double cost = seconds / (work > 0 ? work : 1);
    if (g->phase == GOV_WARM) {
        if (++g->n >= LT_GOV_WARM)
            start_probe(g);
    } else if (g->phase == GOV_PROBE) {
        /* runs come in pairs that alternate: all threads twice, one twice,
         * all twice, ...; the first run of a pair settles the change (the
         * threads' caches and CPUs) and is not counted */
        int k = g->cur == 1, slot = g->n / 2;
        if (g->n % 2)
            g->seen[k][slot / 2] = cost;
        if (++g->n < 4 * LT_GOV_PROBE) {
            if (g->n % 2 == 0)
                use(g, k ? g->max : 1);
            return;
        }
        double med[2] = {median(g->seen[0], LT_GOV_PROBE), median(g->seen[1], LT_GOV_PROBE)};
        int one = !(med[0] < LT_GOV_MARGIN * med[1]);
        g->one += one;
        use(g, one ? 1 : g->max);
        g->base = med[one];
        g->alt = med[!one];
        g->phase = GOV_SETTLED;
        g->settled = 0;
        g->slow = 0;
    } else {
        /* a probe's runs on all threads can come out fast where the runs
         * that follow do not (under load the threads drift onto the busy
         * core over some runs): all threads, when kept, are held against
         * what one thread cost, and given up once they clearly cost more.
         * Not the other way round: one thread's runs slow down with the
         * load as well, and changing back and forth on that costs runs on
         * the worse setting each time; the regular probe goes back to all
         * threads when the load is gone. */
        g->recent[g->settled % LT_GOV_RECENT] = cost;
        if (g->cur != 1 && g->settled + 1 >= LT_GOV_RECENT) {
            double now = median(g->recent, LT_GOV_RECENT);
            if (now > LT_GOV_DRIFT * g->alt) {
                g->one++;
                use(g, 1);
                g->base = g->alt;
                g->alt = now;
                g->settled = 0;
                g->slow = 0;
                return;
            }
        }
        g->slow = cost > LT_GOV_SLOW * g->base ? g->slow + 1 : 0;
        if (++g->settled >= (g->probes == 1 ? LT_GOV_FIRST : LT_GOV_EVERY) || g->slow >= LT_GOV_SLOW_RUNS)
            start_probe(g);
    }
}

void lt_thread_gov_fini(lt_thread_gov *g)
{
    if (g->max > 1 && pool_size() != g->max)
        lt_set_num_threads(g->max);
}
