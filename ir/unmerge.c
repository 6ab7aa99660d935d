/* torch's dynamo exporter's optimizer merges nodes that compute the same
 * thing from the same inputs. Once equal initializers are merged too, two
 * modules of a fresh model that apply equal parameters to one tensor
 * compute the same thing: GPT-NeoX's parallel block normalises its input
 * twice, with input_layernorm and post_attention_layernorm, both starting
 * at ones and zeros, and the file keeps one LayerNormalization that the
 * attention and the MLP both read. Trained as found, both modules would
 * share one scale and one bias.
 *
 * The nodes' metadata tells: each node says which torch.fx node it was
 * made from (pkg.torch.onnx.fx_node) and which fx values that node read.
 * A node that reads the result of node N but names, where N's fx value
 * should be, a value of N's kind (layer_norm_1 for layer_norm) that no node
 * of the file was made from, read the merged-away copy. Its module is
 * found in the graph signature: the module whose tensors of the leaf names
 * N reads (weight, bias) the file has none of, nearest the readers'
 * modules (GPT-NeoX layer 0's MLP reads layers.0.post_attention_layernorm,
 * not layers.1's). The nodes of N's module from which N depends on a
 * parameter (N alone for a LayerNormalization; a product and its bias for
 * a linear layer) are copied for that module, placed after the ones they
 * copy, and those readers read the copy. split_merged.c then gives the
 * copies their own parameters, and the exporter writes them
 * (lt_model.clones). Without the metadata nothing changes; where two
 * modules fit equally well nothing changes either (the trainer's note on
 * signature parameters the file lacks names them). */
#include "torch_names.h"
#include <stdlib.h>
#include <string.h>

enum { MAX_LEAVES = 8, MAX_CAND = 16 };

static bool ident_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

/* The length of name without one trailing "_DIGITS" (layer_norm_1 and
 * layer_norm are both of kind layer_norm). */
static size_t kind_len(const char *name, size_t len)
{
    size_t e = len;
    while (e > 0 && name[e - 1] >= '0' && name[e - 1] <= '9')
        e--;
    return e > 1 && e < len && name[e - 1] == '_' ? e - 1 : len;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

typedef struct fx_names {
    const char **at;
    int n, cap;
} fx_names;

static bool collect(const lt_block *b, fx_names *f)
{
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (n->fx_name) {
            if (f->n == f->cap) {
                int nc = f->cap ? f->cap * 2 : 256;
                const char **g = realloc(f->at, sizeof *g * (size_t)nc);
                if (!g)
                    return false;
                f->at = g;
                f->cap = nc;
            }
            f->at[f->n++] = n->fx_name;
        }
        for (int r = 0; r < n->nregions; r++)
            if (!collect(n->regions[r], f))
                return false;
    }
    return true;
}

static bool has_name(const fx_names *f, const char *s, size_t len, char *buf, size_t cap)
{
    if (len >= cap)
        return true; /* too long to be one of ours: leave it alone */
    memcpy(buf, s, len);
    buf[len] = 0;
    const char *key = buf;
    return bsearch(&key, f->at, (size_t)f->n, sizeof *f->at, cmp_str) != NULL;
}

/* In an fx call's text, the one value of the kind of `of` that no node was
 * made from, when the text does not name `of` itself; NULL otherwise. *len
 * gets its length. */
static const char *merged_away(const char *call, const char *of, const fx_names *f, size_t *len)
{
    size_t ol = strlen(of), ok = kind_len(of, ol);
    const char *found = NULL;
    char buf[512];
    for (const char *p = strchr(call, '%'); p; p = strchr(p + 1, '%')) {
        const char *s = p + 1, *e = s;
        while (ident_char(*e))
            e++;
        size_t l = (size_t)(e - s);
        if (l == ol && !memcmp(s, of, ol))
            return NULL; /* it read N's own value */
        if (!l || kind_len(s, l) != ok || memcmp(s, of, ok) != 0 || has_name(f, s, l, buf, sizeof buf))
            continue;
        if (found && (*len != l || memcmp(found, s, l) != 0))
            return NULL; /* two such values: which one is not known */
        found = s;
        *len = l;
    }
    return found;
}

/* A group of node inputs that read output `out` of node n where the
 * source read the merged-away value x. */
typedef struct group {
    lt_node *n;
    const char *x;
    size_t xlen;
    int nread;
    lt_node **reader;
    int *slot, *out;
} group;

typedef struct groups {
    group *at;
    int n, cap;
} groups;

static bool add_read(groups *g, lt_node *n, const char *x, size_t xlen, lt_node *reader, int slot, int out)
{
    group *gr = NULL;
    for (int i = 0; i < g->n && !gr; i++)
        if (g->at[i].n == n && g->at[i].xlen == xlen && !memcmp(g->at[i].x, x, xlen))
            gr = &g->at[i];
    if (!gr) {
        if (g->n == g->cap) {
            int nc = g->cap ? g->cap * 2 : 8;
            group *grown = realloc(g->at, sizeof *grown * (size_t)nc);
            if (!grown)
                return false;
            g->at = grown;
            g->cap = nc;
        }
        gr = &g->at[g->n++];
        *gr = (group){n, x, xlen, 0, NULL, NULL, NULL};
    }
    lt_node **r = realloc(gr->reader, sizeof *r * (size_t)(gr->nread + 1));
    if (r)
        gr->reader = r;
    int *s = r ? realloc(gr->slot, sizeof *s * (size_t)(gr->nread + 1)) : NULL;
    if (s)
        gr->slot = s;
    int *o = s ? realloc(gr->out, sizeof *o * (size_t)(gr->nread + 1)) : NULL;
    if (!o)
        return false;
    gr->out = o;
    gr->reader[gr->nread] = reader;
    gr->slot[gr->nread] = slot;
    gr->out[gr->nread++] = out;
    return true;
}

static void free_groups(groups *g)
{
    for (int i = 0; i < g->n; i++) {
        free(g->at[i].reader);
        free(g->at[i].slot);
        free(g->at[i].out);
    }
    free(g->at);
}

/* Whether input k of n reads a tensor of the source module: a float
 * parameter the signature names, or one not a single number repeated (a
 * weight the exporter folded into its transpose, val_N); not a constant
 * such as an exponent or an epsilon. */
static bool reads_param(const lt_module *m, const lt_node *n, int k)
{
    const lt_ival *v = n->in[k];
    if (!v || v->param < 0 || v->param >= m->nparams || m->params[v->param].value != v)
        return false;
    const lt_param *p = &m->params[v->param];
    return lt_dtype_is_float(p->data.dtype) &&
           ((p->name && lt_torch_named(m, p->name)) || !lt_ir_one_value(&p->data));
}

/* in_set[i] for the main-graph nodes, of n's module, through which n
 * depends on a parameter (n included); false when n does not. */
static bool param_path(const lt_module *m, const lt_block *b, const lt_node *n, bool *in_set)
{
    /* ancestors of n within its module, then, in order, the ones that read
     * a parameter or such an ancestor */
    bool *anc = calloc((size_t)b->nnodes, sizeof *anc);
    if (!anc)
        return false;
    anc[n->index] = true;
    for (int i = n->index; i >= 0; i--) {
        if (!anc[i])
            continue;
        const lt_node *a = b->nodes[i];
        for (int k = 0; k < a->nin; k++) {
            const lt_node *d = a->in[k] ? a->in[k]->def : NULL;
            if (d && d->block == b && d->scope && !strcmp(d->scope, n->scope) && !d->nregions)
                anc[d->index] = true;
        }
    }
    for (int i = 0; i <= n->index; i++) {
        in_set[i] = false;
        if (!anc[i])
            continue;
        const lt_node *a = b->nodes[i];
        for (int k = 0; k < a->nin && !in_set[i]; k++)
            in_set[i] = reads_param(m, a, k) || (a->in[k] && a->in[k]->def && a->in[k]->def->block == b &&
                                                 in_set[a->in[k]->def->index]);
    }
    free(anc);
    return in_set[n->index];
}

/* The tensor name below module scope that input k of node a stands for:
 * the slot's own (a LayerNormalization's weight), else the parameter's name
 * below scope, else its last part. NULL for a name the signature does not
 * have (the exporter's val_N). */
static const char *leaf_of(const lt_module *m, const lt_node *a, int k)
{
    const char *name = m->params[a->in[k]->param].name;
    if (!name || !lt_torch_named(m, name))
        return NULL;
    const char *own = lt_torch_slot_leaf(a->op, k);
    if (own)
        return own;
    size_t ls = strlen(a->scope);
    if (ls && !strncmp(name, a->scope, ls) && name[ls] == '.')
        return name + ls + 1;
    const char *dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

/* How many leading parts of module paths a and b agree on. */
static int common_parts(const char *a, const char *b)
{
    int n = 0;
    while (*a && *b) {
        const char *ea = strchr(a, '.'), *eb = strchr(b, '.');
        size_t la = ea ? (size_t)(ea - a) : strlen(a), lb = eb ? (size_t)(eb - b) : strlen(b);
        if (la != lb || memcmp(a, b, la) != 0)
            break;
        n++;
        a += la + (ea != NULL);
        b += lb + (eb != NULL);
        if (!ea || !eb)
            break;
    }
    return n;
}

/* Whether a node (at any depth) came from module mod or one below it. */
static bool has_nodes(const lt_block *b, const char *mod)
{
    size_t l = strlen(mod);
    for (int i = 0; i < b->nnodes; i++) {
        const char *sc = b->nodes[i]->scope;
        if (sc && !strncmp(sc, mod, l) && (!sc[l] || sc[l] == '.'))
            return true;
        for (int r = 0; r < b->nodes[i]->nregions; r++)
            if (has_nodes(b->nodes[i]->regions[r], mod))
                return true;
    }
    return false;
}

/* Whether the signature gives modules a and b tensors of the same names
 * below them (two LayerNorms: weight and bias), and a has any. */
static bool same_kind(lt_module *m, const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int na = 0, nb = 0;
    for (int t = 0; t < m->ntorch; t++) {
        const char *name = m->torch_name[t];
        if (!strncmp(name, b, lb) && name[lb] == '.')
            nb++;
        if (strncmp(name, a, la) != 0 || name[la] != '.')
            continue;
        na++;
        const char *other = lt_torch_join(m, b, name + la + 1);
        if (!other || !lt_torch_named(m, other))
            return false;
    }
    return na > 0 && na == nb;
}

/* The modules the merged-away copy may have belonged to: ones of the kind
 * of n's own (same_kind), whose tensors of every leaf the signature names
 * and the file has none of, and that no node came from (a linear layer
 * whose weight was folded into a transpose has its product still; a module
 * already given copies has those), nearest the readers' modules. Up to cap
 * of them into best, in the signature's order; their count (cap + 1 for
 * more than cap). */
static int copy_modules(lt_module *m, const group *g, const char **leaves, int nleaves, const char **best, int cap)
{
    int nbest = 0, best_score = -1;
    size_t l0 = strlen(leaves[0]);
    for (int t = 0; t < m->ntorch; t++) {
        const char *name = m->torch_name[t];
        size_t ln = strlen(name);
        if (ln <= l0 + 1 || strcmp(name + ln - l0, leaves[0]) != 0 || name[ln - l0 - 1] != '.')
            continue;
        const char *mod = lt_ir_strndup(m, name, ln - l0 - 1);
        if (!mod)
            return 0;
        bool fits = strcmp(mod, g->n->scope) != 0 && same_kind(m, g->n->scope, mod);
        for (int i = 0; i < nleaves && fits; i++) {
            const char *full = lt_torch_join(m, mod, leaves[i]);
            fits = full && lt_torch_named(m, full) && !lt_torch_is_param(m, full);
        }
        if (!fits || has_nodes(m->main, mod))
            continue;
        int score = 0;
        for (int r = 0; r < g->nread; r++) {
            int c = g->reader[r]->scope ? common_parts(mod, g->reader[r]->scope) : 0;
            score = c > score ? c : score;
        }
        if (score > best_score) {
            best_score = score;
            nbest = 0;
        }
        if (score == best_score) {
            if (nbest < cap)
                best[nbest] = mod;
            nbest += nbest <= cap;
        }
    }
    return nbest;
}

/* Copies the nodes in_set marks for module scope, rewires the group's
 * readers to the copy of g->n, and records the copies for the exporter,
 * the last first (a copy's readers are written before it is). */
static lt_status copy_for(lt_module *m, lt_block *b, const group *g, const bool *in_set, const char *scope)
{
    int last = g->n->index, ncopy = 0;
    for (int i = 0; i <= last; i++)
        ncopy += in_set[i];
    lt_node **orig = calloc((size_t)ncopy, sizeof *orig), **copy = calloc((size_t)ncopy, sizeof *copy);
    lt_status st = orig && copy ? LT_OK : LT_ERR_NOMEM;
    for (int i = 0, c = 0; i <= last && st == LT_OK; i++)
        if (in_set[i])
            orig[c++] = b->nodes[i];
    for (int c = 0; c < ncopy && st == LT_OK; c++) {
        if (!(copy[c] = lt_ir_copy_node(m, b, orig[c], scope))) {
            st = LT_ERR_NOMEM;
            break;
        }
        /* inputs from the copied nodes read their copies */
        for (int k = 0; k < copy[c]->nin; k++)
            for (int j = 0; j < c; j++)
                for (int o = 0; o < orig[j]->nout; o++)
                    if (copy[c]->in[k] && copy[c]->in[k] == orig[j]->out[o]) {
                        copy[c]->in[k]->uses--;
                        copy[c]->in[k] = copy[j]->out[o];
                        copy[j]->out[o]->uses++;
                    }
    }
    if (st == LT_OK && !(copy[ncopy - 1]->fx_name = lt_ir_strndup(m, g->x, g->xlen)))
        st = LT_ERR_NOMEM;
    for (int r = 0; r < g->nread && st == LT_OK; r++) {
        lt_ival **in = &g->reader[r]->in[g->slot[r]];
        (*in)->uses--;
        *in = copy[ncopy - 1]->out[g->out[r]];
        (*in)->uses++;
    }
    for (int c = ncopy - 1; c >= 0 && st == LT_OK; c--) {
        /* who reads this copy: the group's readers, or later copies */
        int nread = 0;
        for (int pass = 0; pass < 2 && st == LT_OK; pass++) {
            const char **rn = pass ? lt_ir_alloc(m, sizeof *rn * (size_t)(nread + 1)) : NULL;
            int *rs = pass ? lt_ir_alloc(m, sizeof *rs * (size_t)(nread + 1)) : NULL;
            int *ro = pass ? lt_ir_alloc(m, sizeof *ro * (size_t)(nread + 1)) : NULL;
            if (pass && (!rn || !rs || !ro)) {
                st = LT_ERR_NOMEM;
                break;
            }
            int at = 0;
            for (int i = copy[c]->index + 1; i < b->nnodes; i++)
                for (int k = 0; k < b->nodes[i]->nin; k++)
                    for (int o = 0; o < copy[c]->nout; o++) {
                        if (!copy[c]->out[o] || b->nodes[i]->in[k] != copy[c]->out[o])
                            continue;
                        if (pass) {
                            rn[at] = b->nodes[i]->name;
                            rs[at] = k;
                            ro[at] = o;
                        }
                        at++;
                    }
            nread = at;
            if (pass && (st = lt_ir_record_clone(m, orig[c], copy[c], scope, nread, rn, rs, ro)) == LT_OK)
                m->clones[m->nclones - 1].whole = true;
        }
    }
    free(orig);
    free(copy);
    return st;
}

/* Finds the groups: for every main-graph node input reading a main-graph
 * node's result, whether the source read a merged-away value instead. */
static bool find_groups(const lt_block *b, const fx_names *f, groups *g)
{
    for (int i = 0; i < b->nnodes; i++) {
        lt_node *c = b->nodes[i];
        if (!c->fx_call || !c->fx_name)
            continue;
        for (int k = 0; k < c->nin; k++) {
            lt_ival *v = c->in[k];
            lt_node *n = v ? v->def : NULL;
            if (!n || n->block != b || !n->fx_name || !n->scope || n->nregions || !strcmp(n->fx_name, c->fx_name))
                continue;
            size_t xlen = 0;
            const char *x = merged_away(c->fx_call, n->fx_name, f, &xlen);
            int o = 0;
            while (o < n->nout && n->out[o] != v)
                o++;
            if (x && o < n->nout && !add_read(g, n, x, xlen, c, k, o))
                return false;
        }
    }
    return true;
}

/* The nodes of g->n's module through which it depends on parameters
 * (in_set, by node index) and the leaf names of the parameters they read;
 * false where there are none, a node the exporter could not find by name
 * is among them or the readers, or the leaves are too many to match. */
static bool prepare(const lt_module *m, const lt_block *b, const group *g, bool *in_set, const char **leaves,
                    int *nleaves)
{
    if (!param_path(m, b, g->n, in_set))
        return false; /* a merge of parameter-free computations changes nothing */
    for (int j = 0; j <= g->n->index; j++)
        if (in_set[j] && (!b->nodes[j]->name || !*b->nodes[j]->name))
            return false;
    for (int r = 0; r < g->nread; r++)
        if (!g->reader[r]->name || !*g->reader[r]->name)
            return false;
    *nleaves = 0;
    for (int j = 0; j <= g->n->index; j++)
        for (int k = 0; in_set[j] && k < b->nodes[j]->nin; k++) {
            const char *l = reads_param(m, b->nodes[j], k) ? leaf_of(m, b->nodes[j], k) : NULL;
            for (int q = 0; l && q < *nleaves; q++)
                if (!strcmp(leaves[q], l))
                    l = NULL;
            if (l && *nleaves == MAX_LEAVES)
                return false;
            if (l)
                leaves[(*nleaves)++] = l;
        }
    return *nleaves > 0;
}

/* The number at the end of an fx name (layer_norm_2: 2; fx numbers a
 * function's calls in the order the forward pass makes them). */
static long fx_number(const group *g)
{
    size_t k = kind_len(g->x, g->xlen);
    long v = 0;
    for (size_t i = k + 1; i < g->xlen; i++)
        v = v * 10 + (g->x[i] - '0');
    return v;
}

/* One pass over the unresolved groups: every group one module fits is
 * copied for it; where none is, the first cluster of groups that read one
 * node and fit the same k modules equally well, k of them, is copied in
 * order, the first call the forward pass made for the first module the
 * signature names (modules are mostly declared in the order they are
 * called). *progress says whether anything was copied. */
static lt_status resolve_pass(lt_module *m, groups *g, bool *done, int *ncopied, bool *progress)
{
    lt_block *b = m->main;
    const char *leaves[MAX_LEAVES], *cand[MAX_CAND], *other[MAX_CAND];
    int nleaves;
    lt_status st = LT_OK;
    *progress = false;
    for (int unique = 1; unique >= 0 && !*progress; unique--)
        for (int i = 0; i < g->n && st == LT_OK && !(*progress && !unique); i++) {
            if (done[i])
                continue;
            bool *in_set = calloc((size_t)b->nnodes, sizeof *in_set);
            if (!in_set)
                return LT_ERR_NOMEM;
            int nc = prepare(m, b, &g->at[i], in_set, leaves, &nleaves)
                         ? copy_modules(m, &g->at[i], leaves, nleaves, cand, MAX_CAND)
                         : 0;
            if (nc == 0 || nc > MAX_CAND) {
                done[i] = true;
            } else if (nc == 1 && unique) {
                st = copy_for(m, b, &g->at[i], in_set, cand[0]);
                done[i] = *progress = true;
                ++*ncopied;
            } else if (nc > 1 && !unique) {
                /* the cluster: groups of this node fitting the same modules */
                int member[MAX_CAND], nm = 0;
                for (int j = 0; j < g->n && nm <= nc; j++) {
                    if (done[j] || g->at[j].n != g->at[i].n)
                        continue;
                    bool *js = calloc((size_t)b->nnodes, sizeof *js);
                    const char *jl[MAX_LEAVES];
                    int njl, same = js && prepare(m, b, &g->at[j], js, jl, &njl)
                                        ? copy_modules(m, &g->at[j], jl, njl, other, MAX_CAND) == nc
                                        : 0;
                    for (int q = 0; same && q < nc; q++)
                        same = !strcmp(other[q], cand[q]);
                    free(js);
                    if (same && nm < MAX_CAND)
                        member[nm] = j;
                    nm += same;
                }
                if (nm == nc) {
                    for (int x = 0; x < nm; x++) /* by fx number */
                        for (int y = x + 1; y < nm; y++)
                            if (fx_number(&g->at[member[y]]) < fx_number(&g->at[member[x]])) {
                                int t = member[x];
                                member[x] = member[y];
                                member[y] = t;
                            }
                    for (int x = 0; x < nm && st == LT_OK; x++) {
                        group *gx = &g->at[member[x]];
                        bool *xs = calloc((size_t)b->nnodes, sizeof *xs);
                        if (!xs || !param_path(m, b, gx->n, xs))
                            st = LT_ERR_NOMEM;
                        else
                            st = copy_for(m, b, gx, xs, cand[x]);
                        free(xs);
                        done[member[x]] = true;
                        ++*ncopied;
                    }
                    *progress = true;
                }
            }
            free(in_set);
        }
    return st;
}

lt_status lt_ir_unmerge_nodes(lt_module *m, int *ncopied, lt_err *err)
{
    *ncopied = 0;
    if (!m->ntorch)
        return LT_OK;
    fx_names f = {NULL, 0, 0};
    groups g = {NULL, 0, 0};
    bool *done = NULL;
    lt_status st = collect(m->main, &f) ? LT_OK : LT_ERR_NOMEM;
    if (st == LT_OK && f.n) {
        qsort(f.at, (size_t)f.n, sizeof *f.at, cmp_str);
        if (!find_groups(m->main, &f, &g))
            st = LT_ERR_NOMEM;
    }
    if (st == LT_OK && g.n && !(done = calloc((size_t)g.n, sizeof *done)))
        st = LT_ERR_NOMEM;
    for (bool progress = g.n > 0; progress && st == LT_OK;)
        st = resolve_pass(m, &g, done, ncopied, &progress);
    free(done);
    free(f.at);
    free_groups(&g);
    return st == LT_OK ? LT_OK : lt_errf(err, LT_ERR_NOMEM, "out of memory copying merged nodes");
}
