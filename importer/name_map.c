/* The importer's name tables: an open-addressing map from names to IR
 * values, and the chain of graph scopes that names resolve through. */
#include "import_impl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (uint8_t)*s++) * 1099511628211ull;
    return h;
}

static lt_ival **map_slot(namemap *mp, const char *k)
{
    size_t i = hash_str(k) & (mp->cap - 1);
    while (mp->keys[i] && strcmp(mp->keys[i], k) != 0)
        i = (i + 1) & (mp->cap - 1);
    return &mp->vals[i];
}

lt_ival *lt_imp_map_get(const namemap *mp, const char *k)
{
    if (!mp->cap)
        return NULL;
    size_t i = hash_str(k) & (mp->cap - 1);
    while (mp->keys[i]) {
        if (strcmp(mp->keys[i], k) == 0)
            return mp->vals[i];
        i = (i + 1) & (mp->cap - 1);
    }
    return NULL;
}

bool lt_imp_map_put(namemap *mp, const char *k, lt_ival *v)
{
    if ((mp->n + 1) * 2 > mp->cap) {
        namemap nm = {0};
        nm.cap = mp->cap ? mp->cap * 2 : 64;
        nm.keys = calloc(nm.cap, sizeof *nm.keys);
        nm.vals = calloc(nm.cap, sizeof *nm.vals);
        if (!nm.keys || !nm.vals) {
            free(nm.keys);
            free(nm.vals);
            return false;
        }
        for (size_t i = 0; i < mp->cap; i++)
            if (mp->keys[i]) {
                lt_ival **s = map_slot(&nm, mp->keys[i]);
                nm.keys[s - nm.vals] = mp->keys[i];
                *s = mp->vals[i];
                nm.n++;
            }
        free(mp->keys);
        free(mp->vals);
        *mp = nm;
    }
    lt_ival **s = map_slot(mp, k);
    if (!mp->keys[s - mp->vals]) {
        mp->keys[s - mp->vals] = k;
        mp->n++;
    }
    *s = v;
    return true;
}

void lt_imp_map_free(namemap *mp)
{
    free(mp->keys);
    free(mp->vals);
    memset(mp, 0, sizeof *mp);
}

lt_ival *lt_imp_scope_lookup(const scope *s, const char *name)
{
    for (; s; s = s->parent) {
        lt_ival *v = lt_imp_map_get(&s->names, name);
        if (v)
            return v;
    }
    return NULL;
}
