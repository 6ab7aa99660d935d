/* torch's dynamo exporter optimises the graph it writes, and one of its
 * passes merges initializers of up to 1024 elements that hold the same
 * values: one is kept and every node reads it. In a freshly initialised
 * model that joins every LayerNorm and BatchNorm scale (ones) with every
 * running variance (ones too), and every zero bias with every running mean.
 * Trained as found, one tensor would take the updates of all of them and
 * the running statistics of a BatchNorm would overwrite its own scale.
 *
 * The file still says what the source module had: each node carries the
 * module path it came from (metadata pkg.torch.onnx.name_scopes) and the
 * main graph the exported program's signature, which names every
 * parameter and buffer. A node of module S reading the initializer in an
 * input slot that stands for S's tensor LEAF (a BatchNormalization's slot 4
 * is its running_var; elsewhere the leaf of the initializer's own name)
 * read S.LEAF in the source; when the signature names S.LEAF and it is not
 * the initializer itself, the readers of S.LEAF get a parameter of that
 * name holding a copy of the values. The exporter writes it back as an
 * initializer and points those node inputs at it (importer/export.c).
 * Values that are not one number repeated are split only where the names
 * differ in layer numbers alone (clones of one layer, as
 * nn.TransformerEncoder deep-copies its layer): a tie the source meant
 * (an embedding read by the output layer) stays one tensor, as does one
 * module's tensor read by several nodes, and without the metadata (other
 * exporters, TorchScript) nothing changes. An all-ones or all-zeros tensor
 * the source tied across modules of different names on purpose cannot be
 * told from a merged one and is split. A node inside a control-flow body
 * (a LayerNorm in a scan's combine function) has no module path there
 * and its fx call reads the body graph's placeholders (%arg3_1), which
 * stand for the operands of the higher-order op in the fx call of the
 * If, Loop or Scan around it (%p_ln_step_weight): it reads that tensor. */
#include "torch_names.h"
#include <stdlib.h>
#include <string.h>

typedef struct reader {
    lt_node *n;
    int slot;
} reader;

typedef struct readers {
    int *start; /* per parameter: its readers are at[start[p] .. start[p + 1]) */
    reader *at;
} readers;

static void walk(const lt_module *m, const lt_block *b, int *count, reader *at, int *fill)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *n = b->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            const lt_ival *v = n->in[k];
            if (!v || v->param < 0 || v->param >= m->nparams || m->params[v->param].value != v)
                continue;
            if (at)
                at[fill[v->param]++] = (reader){n, k};
            else
                count[v->param]++;
        }
        for (int r = 0; r < n->nregions; r++)
            walk(m, n->regions[r], count, at, fill);
    }
}

/* Every node input (at any depth) reading a parameter, by parameter. */
static bool find_readers(const lt_module *m, readers *rd)
{
    int np = m->nparams;
    int *count = calloc((size_t)np + 1, sizeof *count), *fill = calloc((size_t)np + 1, sizeof *fill);
    rd->start = calloc((size_t)np + 1, sizeof *rd->start);
    rd->at = NULL;
    if (count && fill && rd->start) {
        walk(m, m->main, count, NULL, NULL);
        for (int p = 0; p < np; p++)
            rd->start[p + 1] = rd->start[p] + count[p];
        memcpy(fill, rd->start, sizeof *fill * (size_t)np);
        rd->at = malloc(sizeof *rd->at * ((size_t)rd->start[np] + 1));
        if (rd->at)
            walk(m, m->main, NULL, rd->at, fill);
    }
    free(count);
    free(fill);
    return rd->start && rd->at;
}

/* The source tensor a node input read, as a signature name: the slot's own
 * tensor under the node's module (a BatchNormalization's running_var),
 * else the parameter's path below its home module (the module of a reader
 * its name starts with) under the node's module, so that
 * layers.0.attn.out_proj.weight read by a product of layers.1.attn is
 * layers.1.attn.out_proj.weight, else the one tensor of that last name
 * below the node's module that was merged away. NULL when the signature
 * does not tell. */
/* What the node's torch.fx call says it read: of the parameters and
 * buffers it names as placeholders (inside a torch.cond, while_loop or
 * scan body, through the body graph's placeholders, which name the
 * higher-order op's operands: lt_torch_node_tensors), the one whose last
 * part is leaf (a BatchNormalization's input 4 its running_var), or the
 * only one; NULL when it does not tell (no metadata; a linear layer's
 * call naming weight and bias, for an input of neither). */
static const char *fx_source(const lt_module *m, const lt_node *n, const char *leaf)
{
    const char *fx[2], *by_leaf = lt_torch_node_leaf(m, n, leaf);
    return by_leaf ? by_leaf : lt_torch_node_tensors(m, n, fx, 2) == 1 ? fx[0] : NULL;
}

static const char *source_name(lt_module *m, const lt_node *n, int slot, const char *below_home)
{
    const char *dot = strrchr(below_home, '.');
    const char *leaf = lt_torch_slot_leaf(n->op, slot);
    const char *fx = fx_source(m, n, leaf ? leaf : dot ? dot + 1 : below_home);
    if (fx)
        return fx;
    if (!n->scope)
        return NULL;
    const char *leaves[2] = {lt_torch_slot_leaf(n->op, slot), below_home};
    for (int i = 0; i < 2; i++) {
        const char *name = leaves[i] ? lt_torch_join(m, n->scope, leaves[i]) : NULL;
        if (name && lt_torch_named(m, name))
            return name;
    }
    return lt_torch_missing_below(m, n->scope, leaves[0] ? leaves[0] : dot ? dot + 1 : below_home);
}

/* The part of the parameter's name below the longest reader module its
 * name starts with (the whole name under the root; the last part when no
 * reader's module is a prefix). */
static const char *below_home(const char *own, const reader *r, int nr)
{
    const char *dot = strrchr(own, '.');
    const char *best = dot ? dot + 1 : own;
    size_t best_len = 0;
    for (int i = 0; i < nr; i++) {
        const char *sc = r[i].n->scope;
        size_t l = sc ? strlen(sc) : 0;
        if (sc && l > best_len && !strncmp(own, sc, l) && own[l] == '.') {
            best = l ? own + l + 1 : own;
            best_len = l;
        }
    }
    return best;
}

/* A parameter named name copying p's values, read by the readers r[i]
 * with src[i] == name. */
static lt_status split_off(lt_module *m, int p, const char *name, const reader *r, const char **src, int nr,
                           lt_err *err)
{
    int nread = 0;
    for (int i = 0; i < nr; i++)
        nread += src[i] == name;
    lt_ival *v = lt_ival_new(m, m->main, name);
    int q = v ? lt_module_copy_param(m, p, name, v) : -1;
    const char **nodes = lt_ir_alloc(m, sizeof *nodes * (size_t)nread);
    int *slots = lt_ir_alloc(m, sizeof *slots * (size_t)nread);
    if (q < 0 || !nodes || !slots)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_param *sp = &m->params[p], *np = &m->params[q];
    np->split_from = sp->name;
    for (int i = 0, j = 0; i < nr; i++) {
        if (src[i] != name)
            continue;
        r[i].n->in[r[i].slot] = v;
        sp->value->uses--;
        v->uses++;
        nodes[j] = r[i].n->name ? lt_torch_node_path(m, r[i].n) : NULL; /* a body's node by its path */
        if (r[i].n->name && !nodes[j])
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        slots[j++] = r[i].slot;
    }
    np->nsplit = nread;
    np->split_node = nodes;
    np->split_slot = slots;
    return LT_OK;
}

/* The separate tensors a parameter's readers read in the source module,
 * src[i] for reader i (NULL: the parameter itself). Named in the signature:
 * by source_name. Not named there (the exporter's own name for a folded
 * transpose, val_N, of clones' weights): one tensor per reader module,
 * named MODULE.NAME, where the modules are clones of one layer. */
static bool find_sources(lt_module *m, const char *own, bool named, const reader *r, int nr, const char **src)
{
    if (named) {
        const char *home = below_home(own, r, nr);
        for (int i = 0; i < nr; i++) {
            const char *s = source_name(m, r[i].n, r[i].slot, home);
            /* readers of one source tensor share one pointer */
            for (int j = 0; s && j < i; j++)
                if (src[j] && !strcmp(src[j], s))
                    s = src[j];
            src[i] = s && strcmp(s, own) ? s : NULL;
        }
        return true;
    }
    const char *first = r[0].n->scope;
    if (strncmp(own, "val_", 4) != 0)
        return false; /* a table folded at a graph node's name (rotary cos, sin) is no layer's weight */
    for (int i = 0; i < nr; i++) {
        const char *sc = r[i].n->scope;
        if (!first || !sc || !lt_torch_same_but_numbers(sc, first))
            return false;
        src[i] = NULL;
        for (int j = 0; j < i && strcmp(sc, first); j++)
            if (!strcmp(r[j].n->scope, sc))
                src[i] = src[j];
        if (!src[i] && strcmp(sc, first) && !(src[i] = lt_torch_join(m, sc, own)))
            return false;
    }
    return true;
}

/* The parameter a node read through a constant the exporter folded it
 * into: GroupNorm's affine weight and bias, reshaped to [C, 1, 1] for the
 * Mul and Add after the InstanceNormalization its export uses, become
 * val_N initializers. A Mul or Add of module S reads S.weight or S.bias
 * when the signature names it and the file has no initializer of it;
 * NULL otherwise (the graph's own constants: GELU's 0.5, a scale). */
static const char *folded_source(lt_module *m, const lt_node *n)
{
    const char *leaf = n->op == LT_OP_MUL ? "weight" : n->op == LT_OP_ADD ? "bias" : NULL;
    const char *name = leaf && n->scope ? lt_torch_join(m, n->scope, leaf) : NULL;
    return name && lt_torch_named(m, name) && !lt_torch_is_param(m, name) ? name : NULL;
}

/* A single-valued initializer folded under a graph node's name from a
 * parameter that every reader's module has (Gemma's norms multiply by
 * 1 + weight, folded into add_N, all ones when fresh): one tensor per
 * reader module, as the parameters are, named OWN@MODULE (the first
 * module's keeps the name), since it holds the folded values, not the
 * parameter's. Nothing where a reader's module lacks such a parameter. */
static bool computed_sources(lt_module *m, int p, const reader *r, int nr, const char **src)
{
    const char *first = r[0].n->scope;
    for (int i = 0; i < nr; i++) {
        if (!folded_source(m, r[i].n))
            return false;
        const char *sc = r[i].n->scope;
        src[i] = NULL;
        for (int j = 0; j < i && strcmp(sc, first); j++)
            if (!strcmp(r[j].n->scope, sc))
                src[i] = src[j];
        if (!src[i] && strcmp(sc, first)) {
            size_t lo = strlen(m->params[p].name), ls = strlen(sc);
            char *name = lt_ir_alloc(m, lo + ls + 2);
            if (!name)
                return false;
            memcpy(name, m->params[p].name, lo);
            name[lo] = '@';
            memcpy(name + lo + 1, sc, ls + 1);
            src[i] = name;
        }
    }
    return true;
}

/* A single-valued initializer without a signature name whose every reader
 * reads a folded parameter (folded_source) stands for those: src[i] gets
 * each reader's, NULL where it is the first reader's, which the parameter
 * itself records (torch_source: trained, not kept as a graph constant). */
static bool folded_sources(lt_module *m, int p, const reader *r, int nr, const char **src)
{
    if (m->params[p].data.numel < 2)
        return false; /* a scalar is a constant (an eps, a scale), not a channel's weights */
    const char *own = m->params[p].name;
    if (strncmp(own, "val_", 4) != 0)
        return computed_sources(m, p, r, nr, src);
    for (int i = 0; i < nr; i++) {
        const char *s = folded_source(m, r[i].n);
        if (!s)
            return false;
        for (int j = 0; j < i; j++)
            if (src[j] && !strcmp(src[j], s))
                s = src[j];
        src[i] = s;
    }
    m->params[p].torch_source = src[0];
    for (int i = nr - 1; i >= 0; i--)
        if (src[i] == m->params[p].torch_source || !strcmp(src[i], m->params[p].torch_source))
            src[i] = NULL;
    return true;
}

static lt_status split_param(lt_module *m, int p, const reader *r, int nr, int *nsplit, lt_err *err)
{
    const char **src = calloc((size_t)nr, sizeof *src);
    if (!src)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    const char *own = m->params[p].name;
    bool one = lt_ir_one_value(&m->params[p].data);
    /* values that are not one number repeated were equal as clones of one
     * layer are (nn.TransformerEncoder deep-copies its layer): the names
     * then differ in layer numbers only; anything else is a tie. A
     * single-valued one without a signature name is a graph constant. */
    bool named = lt_torch_named(m, own);
    bool split = one && !named ? folded_sources(m, p, r, nr, src) : find_sources(m, own, named, r, nr, src);
    for (int i = 0; i < nr && split && !one && named; i++)
        split = !src[i] || lt_torch_same_but_numbers(src[i], own);
    lt_status st = LT_OK;
    for (int i = 0; i < nr && st == LT_OK && split; i++) {
        bool first = src[i] != NULL;
        for (int j = 0; first && j < i; j++)
            first = src[j] != src[i];
        if (!first || lt_torch_name_taken(m, src[i]))
            continue;
        st = split_off(m, p, src[i], r, src, nr, err);
        ++*nsplit;
    }
    free(src);
    return st;
}

lt_status lt_ir_split_merged_params(lt_module *m, int *nsplit, lt_err *err)
{
    *nsplit = 0;
    if (!m->ntorch)
        return LT_OK;
    int ncloned;
    lt_status cs = lt_ir_unmerge_nodes(m, &ncloned, err);
    if (cs == LT_OK)
        cs = lt_ir_unshare_nodes(m, &ncloned, err);
    if (cs != LT_OK)
        return cs;
    readers rd;
    if (!find_readers(m, &rd)) {
        free(rd.start);
        free(rd.at);
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    lt_status st = LT_OK;
    int np = m->nparams; /* the ones split off come after */
    for (int p = 0; p < np && st == LT_OK; p++) {
        const lt_param *pp = &m->params[p];
        int nr = rd.start[p + 1] - rd.start[p];
        if (nr < 1 || !pp->name || pp->is_input_default || !pp->value || pp->value->block != m->main ||
            !lt_dtype_is_float(pp->data.dtype))
            continue;
        /* one reader: only a folded parameter to find (a tie read once
         * stays as it is) */
        if (nr == 1 && (lt_torch_named(m, pp->name) || !lt_ir_one_value(&pp->data)))
            continue;
        st = split_param(m, p, rd.at + rd.start[p], nr, nsplit, err);
    }
    free(rd.start);
    free(rd.at);
    return st;
}
