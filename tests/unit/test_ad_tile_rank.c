/* Tile's gradient at ranks 5 to LT_MAX_RANK, against central finite
 * differences in float64 (rule_fd.h's one-node model): there the view of
 * dy as [rep0, d0, rep1, d1, ...] would need more dims than a tensor has,
 * so the rule sums the copies one axis at a time. Repeats above 1 on
 * several axes with the sizes known, and Tile-1's single count, whose
 * sizes the rule reads at run time. */
#include "rule_fd.h"
#include <stdio.h>
#include <string.h>

typedef struct tcase {
    const char *name;
    int rank;
    int64_t dims[LT_MAX_RANK], reps[LT_MAX_RANK];
} tcase;

/* Tile-6 and later: the repeats are a constant, so the sizes are known */
static const tcase cases[] = {
    {"Tile.r5", 5, {2, 3, 1, 2, 2}, {1, 2, 3, 1, 2}},
    {"Tile.r6", 6, {2, 1, 2, 1, 2, 1}, {2, 3, 1, 2, 1, 2}},
    {"Tile.r7", 7, {1, 2, 1, 2, 1, 2, 1}, {2, 1, 3, 2, 1, 1, 2}},
    {"Tile.r8", 8, {2, 1, 2, 1, 1, 2, 1, 1}, {2, 2, 1, 3, 2, 1, 1, 2}},
    {"Tile.r8.every_axis", 8, {1, 2, 1, 1, 2, 1, 1, 1}, {2, 2, 2, 2, 2, 2, 2, 2}},
    {"Tile.r8.none", 8, {2, 1, 2, 1, 1, 2, 1, 1}, {1, 1, 1, 1, 1, 1, 1, 1}},
};

/* Tile-1: one count along one axis, which inference does not read, so the
 * rule reads the sizes at run time (every axis summed, the others once) */
typedef struct tcase1 {
    const char *name;
    int rank;
    int64_t dims[LT_MAX_RANK];
    int64_t count, axis;
} tcase1;

static const tcase1 cases1[] = {
    {"Tile-1.r5", 5, {2, 1, 3, 1, 2}, 3, 4},
    {"Tile-1.r6", 6, {2, 1, 3, 1, 2, 2}, 3, 2},
    {"Tile-1.r8", 8, {2, 1, 2, 1, 1, 2, 1, 2}, 2, 0},
};

static void tile_ranks(void **state)
{
    (void)state;
    tu_fd_tally t = {.worst_at = ""};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        const tcase *tc = &cases[k];
        tu_fd_in in[2] = {{.rank = tc->rank, .lo = -1, .hi = 1},
                          {.rank = 1, .dims = {tc->rank}, .dt = LT_I64, .frozen = true, .nvals = tc->rank}};
        for (int d = 0; d < tc->rank; d++) {
            in[0].dims[d] = tc->dims[d];
            in[1].vals[d] = (double)tc->reps[d];
        }
        tu_fd_model fm = {.name = tc->name, .op = LT_OP_TILE, .opset = 13, .nin = 2, .nout = 1, .in = in,
                          .seed = 3000 + k};
        tu_fd_check(&fm, &(tu_fd_expect){.checks = 400}, &t);
    }
    for (size_t k = 0; k < sizeof cases1 / sizeof cases1[0]; k++) {
        const tcase1 *tc = &cases1[k];
        tu_fd_in in[3] = {{.rank = tc->rank, .lo = -1, .hi = 1},
                          {.rank = 0, .dt = LT_I64, .frozen = true, .nvals = 1, .vals = {(double)tc->count}},
                          {.rank = 0, .dt = LT_I64, .frozen = true, .nvals = 1, .vals = {(double)tc->axis}}};
        int64_t out[LT_MAX_RANK];
        for (int d = 0; d < tc->rank; d++) {
            in[0].dims[d] = tc->dims[d];
            out[d] = tc->dims[d] * (d == tc->axis ? tc->count : 1);
        }
        tu_fd_model fm = {.name = tc->name, .op = LT_OP_TILE, .opset = 1, .nin = 3, .nout = 1, .in = in,
                          .seed = 3100 + k, .out_rank = tc->rank, .out_dims = out};
        tu_fd_check(&fm, &(tu_fd_expect){.checks = 400}, &t);
    }
    printf("Tile at ranks 5-%d: %d inputs checked by finite differences, worst relative error %.3g (%s)\n",
           LT_MAX_RANK, t.pairs, t.worst, t.worst_at);
    assert_int_equal(t.pairs, (int)(sizeof cases / sizeof cases[0] + sizeof cases1 / sizeof cases1[0]));
    assert_int_equal(t.failures, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(tile_ranks)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
