/* The order nodes are imported in: each graph's nodes sorted by their
 * dependencies (reads inside subgraphs included), the file's order kept
 * where it already is one; a cycle is an error naming its nodes. */
#include "import_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Names a subgraph defines: they hide outer names for the nodes inside it. */
typedef struct local_names {
    const struct local_names *up;
    namemap names;
} local_names;

static bool is_local(const local_names *l, const char *name)
{
    for (; l; l = l->up)
        if (lt_imp_map_get(&l->names, name))
            return true;
    return false;
}

static void add_read(const char *name, const local_names *l, const namemap *producers, int *deps, int *ndeps,
                     int maxdeps)
{
    if (!name || !*name || is_local(l, name))
        return;
    lt_ival *p = lt_imp_map_get(producers, name);
    if (p && *ndeps < maxdeps)
        deps[(*ndeps)++] = (int)(intptr_t)p - 1;
}

/* The outer values a subgraph reads (at any depth, less the names defined
 * in between); used to order nodes whose regions capture outer values. If
 * memory for the local names runs out, a local name may count as a read:
 * at worst an order that fails later with a clear message. */
static void collect_reads(const Onnx__GraphProto *g, const namemap *producers, const local_names *up, int *deps,
                          int *ndeps, int maxdeps, int depth)
{
    if (depth > LT_MAX_NESTING)
        return;
    local_names l = {up, {0}};
    lt_ival *mark = (lt_ival *)(intptr_t)1;
    for (size_t i = 0; i < g->n_input; i++)
        if (g->input[i] && g->input[i]->name)
            lt_imp_map_put(&l.names, g->input[i]->name, mark);
    for (size_t i = 0; i < g->n_initializer; i++)
        if (g->initializer[i] && g->initializer[i]->name)
            lt_imp_map_put(&l.names, g->initializer[i]->name, mark);
    for (size_t i = 0; i < g->n_sparse_initializer; i++)
        if (g->sparse_initializer[i] && g->sparse_initializer[i]->values && g->sparse_initializer[i]->values->name)
            lt_imp_map_put(&l.names, g->sparse_initializer[i]->values->name, mark);
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t j = 0; g->node[i] && j < g->node[i]->n_output; j++)
            if (g->node[i]->output[j] && *g->node[i]->output[j])
                lt_imp_map_put(&l.names, g->node[i]->output[j], mark);
    for (size_t i = 0; i < g->n_node; i++) {
        const Onnx__NodeProto *np = g->node[i];
        if (!np)
            continue;
        for (size_t j = 0; j < np->n_input; j++)
            add_read(np->input[j], &l, producers, deps, ndeps, maxdeps);
        for (size_t a = 0; a < np->n_attribute; a++)
            if (np->attribute[a] && np->attribute[a]->g)
                collect_reads(np->attribute[a]->g, producers, &l, deps, ndeps, maxdeps, depth + 1);
    }
    for (size_t j = 0; j < g->n_output; j++)
        if (g->output[j])
            add_read(g->output[j]->name, &l, producers, deps, ndeps, maxdeps);
    lt_imp_map_free(&l.names);
}

static void heap_push(int *h, size_t *n, int v)
{
    size_t i = (*n)++;
    while (i > 0 && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static int heap_pop(int *h, size_t *n)
{
    int top = h[0], v = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    h[i] = v;
    return top;
}

/* Kahn's algorithm over this graph's nodes; order[] receives node indices. */
lt_status lt_imp_order_nodes(imp *im, const Onnx__GraphProto *g, int *order)
{
    size_t n = g->n_node;
    lt_status st = LT_OK;
    namemap producers = {0};
    int *indeg = calloc(n + 1, sizeof *indeg), *queue = calloc(n + 1, sizeof *queue);
    int **succ = calloc(n + 1, sizeof *succ), *nsucc = calloc(n + 1, sizeof *nsucc),
        *capsucc = calloc(n + 1, sizeof *capsucc);
    int maxdeps = 1 << 16, *deps = malloc(sizeof *deps * maxdeps);
    if (!indeg || !queue || !succ || !nsucc || !capsucc || !deps) {
        st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        goto done;
    }
    for (size_t i = 0; i < n && st == LT_OK; i++) {
        const Onnx__NodeProto *np = g->node[i];
        if (!np) {
            st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s' has an empty node", im->path, str_or(g->name, "main"));
            break;
        }
        for (size_t j = 0; j < np->n_output; j++) {
            if (!np->output[j] || !*np->output[j])
                continue;
            if (lt_imp_map_get(&producers, np->output[j])) {
                st = lt_imp_node_err(im, np, LT_ERR_INVALID, "output '%s' is defined twice in its graph", np->output[j]);
                break;
            }
            if (!lt_imp_map_put(&producers, np->output[j], (lt_ival *)(intptr_t)(i + 1)))
                st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
        }
    }
    for (size_t i = 0; i < n && st == LT_OK; i++) {
        const Onnx__NodeProto *np = g->node[i];
        int nd = 0;
        for (size_t j = 0; j < np->n_input; j++) {
            if (!np->input[j] || !*np->input[j])
                continue;
            lt_ival *p = lt_imp_map_get(&producers, np->input[j]);
            if (p && nd < maxdeps)
                deps[nd++] = (int)(intptr_t)p - 1;
        }
        for (size_t a = 0; a < np->n_attribute; a++)
            if (np->attribute[a] && np->attribute[a]->g)
                collect_reads(np->attribute[a]->g, &producers, NULL, deps, &nd, maxdeps, 0);
        for (int k = 0; k < nd; k++) {
            int p = deps[k];
            if (nsucc[p] == capsucc[p]) {
                int nc = capsucc[p] ? capsucc[p] * 2 : 4;
                int *q = realloc(succ[p], sizeof *q * nc);
                if (!q) {
                    st = lt_errf(im->err, LT_ERR_NOMEM, "out of memory");
                    break;
                }
                succ[p] = q;
                capsucc[p] = nc;
            }
            succ[p][nsucc[p]++] = (int)i;
            indeg[i]++;
        }
    }
    if (st != LT_OK)
        goto done;
    /* a min-heap on the original index keeps an already sorted graph in its
     * own order */
    size_t hn = 0, done_n = 0;
    for (size_t i = 0; i < n; i++)
        if (indeg[i] == 0)
            heap_push(queue, &hn, (int)i);
    while (hn) {
        int i = heap_pop(queue, &hn);
        order[done_n++] = i;
        for (int k = 0; k < nsucc[i]; k++)
            if (--indeg[succ[i][k]] == 0)
                heap_push(queue, &hn, succ[i][k]);
    }
    if (done_n != n) {
        char list[400] = "";
        int shown = 0;
        for (size_t i = 0; i < n && shown < 4; i++)
            if (indeg[i] > 0) {
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s'%s' (%s)", shown ? ", " : "",
                         str_or(g->node[i]->name, "<unnamed>"), str_or(g->node[i]->op_type, "?"));
                shown++;
            }
        st = lt_errf(im->err, LT_ERR_INVALID, "%s: graph '%s': nodes %s form a cycle or read values never defined before them",
                     im->path, str_or(g->name, "main"), list);
    }
done:
    if (succ)
        for (size_t i = 0; i < n; i++)
            free(succ[i]);
    free(succ);
    free(nsucc);
    free(capsucc);
    free(indeg);
    free(queue);
    free(deps);
    lt_imp_map_free(&producers);
    return st;
}
