/* Time per op kind, for finding where a step goes: with LANTERN_PROFILE=1
 * in the environment the executor times every kernel it calls and the
 * process prints, when it exits, a table of op kinds by total time on
 * stderr. Each kind gets its own time only: a control-flow op (Loop, If,
 * Call, ...) is charged what its kernel spent outside the nodes its bodies
 * ran, which are counted under their own kinds. On a device backend a
 * kernel's time is what the host spent queueing it (the device runs it
 * later), so there the host column matters most: calls that ran on the
 * host, with the copies that brought their inputs there (uploads and
 * downloads of a kind's inputs, made for its nodes). */
#include "runtime.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int profile_on = -1;
static double op_ns[LT_OP_COUNT];
static long long op_calls[LT_OP_COUNT], op_host[LT_OP_COUNT], op_up[LT_OP_COUNT], op_down[LT_OP_COUNT];
static bool any_device;

static void profile_report(void)
{
    double total = 0;
    int order[LT_OP_COUNT], n = 0;
    for (int i = 0; i < LT_OP_COUNT; i++)
        if (op_calls[i]) {
            order[n++] = i;
            total += op_ns[i];
        }
    /* insertion sort by time, largest first: a few dozen kinds at most */
    for (int i = 1; i < n; i++)
        for (int j = i; j > 0 && op_ns[order[j]] > op_ns[order[j - 1]]; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    fprintf(stderr, "lantern profile: %-28s %12s %10s %7s%s\n", "op", "total ms", "calls", "share",
            any_device ? "  on host   uploads downloads" : "");
    for (int i = 0; i < n; i++) {
        int o = order[i];
        fprintf(stderr, "lantern profile: %-28s %12.2f %10lld %6.1f%%", lt_op_names[o], op_ns[o] / 1e6, op_calls[o],
                total > 0 ? 100.0 * op_ns[o] / total : 0.0);
        if (any_device)
            fprintf(stderr, " %9lld %9lld %9lld", op_host[o], op_up[o], op_down[o]);
        fputc('\n', stderr);
    }
}

bool lt_profile_enabled(void)
{
    if (profile_on < 0) {
        const char *e = getenv("LANTERN_PROFILE");
        profile_on = e && *e && strcmp(e, "0") != 0;
        if (profile_on)
            atexit(profile_report);
    }
    return profile_on == 1;
}

void lt_profile_copy(int op, bool upload)
{
    if (op >= 0 && op < LT_OP_COUNT)
        (upload ? op_up : op_down)[op]++;
}

/* time the kernels called inside the current one took (nested blocks) */
static double child_ns;

double lt_profile_enter(void)
{
    double outer = child_ns;
    child_ns = 0;
    return outer;
}

void lt_profile_leave(int op, double ns, double outer, bool on_device)
{
    if (op >= 0 && op < LT_OP_COUNT) {
        op_ns[op] += ns - child_ns;
        op_calls[op]++;
        op_host[op] += !on_device;
        any_device |= on_device;
    }
    child_ns = outer + ns;
}
