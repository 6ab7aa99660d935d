/* A relative position bias (T5's relative_attention_bias, Swin's
 * relative_position_bias_table) is a small table of learned values that
 * the forward pass gathers into an attention-shaped one through a buffer of
 * indices. Both the table and the indices are constant to torch's dynamo
 * exporter, which folds the gather: the file holds the gathered
 * (1, heads, L, L) tensor, where each learned value appears many times.
 * Trained as found, every copy would move on its own; PyTorch moves the
 * value once, by the sum of its copies' gradients.
 *
 * Repeated values alone do not show a gather: a parameter initialised
 * with repeats (Mamba's A_log, log(1..N) for every channel) and folded
 * through exp into -exp(A_log) repeats just as well, and tying its equal
 * entries trains something PyTorch never does. The evidence is what the
 * exporter's optimizer records of each value it folded (folded_from, the
 * values it read: the table, the index buffer, and the fx nodes between,
 * each named after its aten operation; importer/torch_meta.c). A gathered
 * table's record names a parameter the file has no tensor of (the table),
 * holds an operation that copies entries several times (a gather: index,
 * embedding, index_select; or expand, repeat), and the initializer itself
 * is the result of an operation that copies entries (unsqueeze, permute,
 * view). A fold of copies that makes each entry once (a view of A_log)
 * holds no copies of one entry, and any values it repeats are the
 * parameter's own. Other operations in a record with a gather are taken
 * for the index's own computation (T5 computes its buckets with log,
 * where, min from positions): the record is a set, and does not tell
 * which path an operation was on; without a gather they make the fold
 * one lantern cannot undo (below). The initializer's own operation counts
 * too: GPT-2's position embedding read at arange(T) + offset is folded
 * into embedding_1 with a record of [add, arange, wpe, unsqueeze], the
 * rows of the table the model reads. A file without the record (an older
 * exporter) shows nothing, and its tensors are left alone.
 *
 * So a trainable float initializer that the graph signature does not name
 * (the source module's tensors are named there), folded from a gather as
 * above, whose entries are copies of a few values (copies_of_few: random
 * or trained values repeat, bit for bit, only as copies do), is read as a
 * gather: the distinct values become a parameter of their own
 * (NAME@table, one dimension), the positions an int64 constant
 * (NAME@index), and the readers read Gather(NAME@table, NAME@index).
 * A tensor of one value, or one whose few values repeat as a mask's do,
 * is left alone. The tensor itself
 * is no longer trained, and lt_ir_refresh_tied writes it from the table
 * for export, so the written model keeps its shape and name.
 *
 * An initializer whose record names a parameter of the source and an
 * operation that computes new values (the exp of -exp(A_log); a product
 * or a sigmoid after a gather, as Swin V2's 16 * sigmoid(table)) is that
 * parameter through a function the file does not hold: trained as found
 * it would follow another parameterisation than PyTorch's, frozen it
 * would not train at all. It gets fold_param and fold_op, and the trainer
 * refuses it unless --freeze names it (train/trainer.c).
 *
 * So does a product the optimizer folded whole (folded_product): where a
 * module multiplies a weight by a constant the exporter sees (DETR's first
 * decoder layer's self-attention on its learned queries: linear(q, W) of
 * the query table expanded over the batch and the in-projection W), the
 * file holds only the product, in a val_N the aten operation's
 * decomposition made (the bias is added after it). Its record holds only
 * copying operations (expand, transpose) besides the parameters, so it
 * looks like a gathered table, but its values are sums of products of two
 * tensors, and W, the file lacking it, cannot be had back from them:
 * trained as found, its copies would train apart and W not at all. */
#include "torch_names.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t bits; /* the entry's bytes */
    int64_t at;
} entry;

static int by_bits(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->bits != y->bits)
        return x->bits < y->bits ? -1 : 1;
    return (x->at > y->at) - (x->at < y->at);
}

static bool some_param_missing(const lt_module *m)
{
    for (int t = 0; t < m->ntorch; t++)
        if (!m->torch_buffer[t] && !lt_torch_is_param(m, m->torch_name[t]))
            return true;
    return false;
}

/* What p's folded_from record (and p's own name, the fx node that made
 * it) shows: a parameter of the source it names (param; a missing one
 * preferred) and whether the file lacks it, whether it holds a gather
 * (gathers) or any operation that copies entries several times
 * (expands), the first operation of the record that computes new values
 * (op, oplen characters), and whether p's own operation copies entries
 * or computes. read_record is false where p has no record. */
typedef struct {
    const char *param;
    bool missing, gathers, expands, last_copies, last_computes;
    const char *op;
    size_t oplen;
} fold_record;

static bool read_record(const lt_module *m, const lt_param *p, fold_record *r)
{
    memset(r, 0, sizeof *r);
    if (!p->folded_from || !p->name)
        return false;
    const char *at = p->folded_from, *el;
    size_t len;
    while ((el = lt_torch_list_next(&at, &len))) {
        for (int t = 0; t < m->ntorch; t++) {
            const char *tn = m->torch_name[t];
            if (m->torch_buffer[t] || strlen(tn) != len || memcmp(tn, el, len) != 0)
                continue;
            bool missing = !lt_torch_is_param(m, tn);
            if (!r->param || (missing && !r->missing)) {
                r->param = tn;
                r->missing = missing;
            }
        }
        lt_fold_kind k = lt_torch_fold_kind(m, el, len);
        r->gathers |= k == LT_FOLD_GATHER;
        r->expands |= k == LT_FOLD_EXPAND || k == LT_FOLD_GATHER;
        if (k == LT_FOLD_COMPUTE && !r->op) {
            r->op = el;
            r->oplen = len;
        }
    }
    lt_fold_kind own = lt_torch_fold_kind(m, p->name, strlen(p->name));
    /* p made by a gather itself (embedding_1: GPT-2's position table read
     * at arange(T) + offset) is a record with a gather: its computing
     * operations are the index's */
    r->gathers |= own == LT_FOLD_GATHER;
    r->last_copies = own == LT_FOLD_COPY || own == LT_FOLD_EXPAND || own == LT_FOLD_GATHER;
    r->expands |= own == LT_FOLD_EXPAND || own == LT_FOLD_GATHER;
    r->last_computes = own == LT_FOLD_COMPUTE;
    return true;
}

/* A gathered table: see the comment at the top. */
static bool gathered(const lt_module *m, const lt_param *p)
{
    fold_record r;
    return read_record(m, p, &r) && r.param && r.missing && r.expands && r.last_copies && (!r.op || r.gathers);
}

static bool candidate(const lt_module *m, const lt_param *p)
{
    const lt_tensor *t = &p->data;
    return p->trainable && p->name && p->value && p->value->block == m->main && p->value->uses > 0 &&
           (t->dtype == LT_F32 || t->dtype == LT_F64) && t->numel >= 8 && t->data && !p->is_input_default &&
           !p->split_from && !p->torch_source && !p->restored && !p->copy_of && !p->transpose_of &&
           !p->untied_from && !lt_torch_named(m, p->name) && !lt_ir_one_value(t) && gathered(m, p);
}

/* The name of an fx node without the _N torch.fx appends from the second
 * on (linear_3 is a linear): its length */
static size_t fx_base(const char *name, size_t len)
{
    size_t d = len;
    while (d > 0 && name[d - 1] >= '0' && name[d - 1] <= '9')
        d--;
    return d > 1 && d < len && name[d - 1] == '_' ? d - 1 : len;
}

static bool in_record(const char *record, const char *name, size_t len)
{
    const char *at = record, *el;
    size_t l;
    while ((el = lt_torch_list_next(&at, &l)))
        if (l == len && !memcmp(el, name, len))
            return true;
    return false;
}

/* Whether p, named as an exporter names an operation's intermediate
 * (val_N), is the product of an fx call that multiplies its operands
 * (linear, matmul, conv, einsum ...) read by every node that reads p, two
 * or more of whose operands its record names (the constant input the
 * call read and the weight), a parameter the file lacks among them
 * (*param). A copy of several parameters (an LSTM's biases concatenated)
 * is read by no product call, and a weight the call read alone folded
 * into its transpose names one operand. */
static bool folded_product(const lt_module *m, const lt_param *p, const char **param, const char **op, size_t *oplen)
{
    static const char *const products[] = {
        "linear", "matmul", "mm", "bmm", "addmm", "baddbmm", "addbmm", "mv", "addmv", "dot", "einsum", "bilinear",
        "tensordot", "conv1d", "conv2d", "conv3d", "convolution", "_convolution", "conv_transpose1d",
        "conv_transpose2d", "conv_transpose3d", NULL};
    if (lt_torch_fold_kind(m, p->name, strlen(p->name)) != LT_FOLD_LEAF || strncmp(p->name, "val_", 4) != 0)
        return false;
    *param = NULL;
    *op = NULL;
    int readers = 0;
    const lt_block *b = m->main;
    for (int i = 0; i < b->nnodes; i++) {
        const lt_node *n = b->nodes[i];
        if (!lt_node_reads(n, p->value))
            continue;
        if (!n->fx_name || !n->fx_call)
            return false;
        size_t base = fx_base(n->fx_name, strlen(n->fx_name));
        bool product = false;
        for (const char *const *q = products; *q && !product; q++)
            product = strlen(*q) == base && !memcmp(*q, n->fx_name, base);
        const char *args = strstr(n->fx_call, "args = (");
        if (!product || !args)
            return false;
        /* the call's operands, %NAME each: a placeholder stands for the
         * signature's name of the tensor, any other for an fx node */
        int named = 0;
        const char *missing = NULL;
        for (const char *a = strchr(args, '%'); a; a = strchr(a + 1, '%')) {
            const char *s = a + 1, *e = s;
            while ((*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') || (*e >= '0' && *e <= '9') || *e == '_')
                e++;
            const char *tn = NULL;
            for (int t = 0; t < m->ntorch && !tn; t++) {
                const char *ph = m->torch_placeholder[t];
                if (ph && strlen(ph) == (size_t)(e - s) && !memcmp(ph, s, (size_t)(e - s)))
                    tn = m->torch_name[t];
            }
            const char *nm = tn ? tn : s;
            size_t len = tn ? strlen(tn) : (size_t)(e - s);
            if (!len || !in_record(p->folded_from, nm, len))
                continue;
            named++;
            for (int t = 0; tn && !missing && t < m->ntorch; t++)
                if (m->torch_name[t] == tn && !m->torch_buffer[t] && !lt_torch_is_param(m, tn))
                    missing = tn;
        }
        if (named < 2 || !missing)
            return false;
        if (!*param) {
            *param = missing;
            *op = n->fx_name;
            *oplen = base;
        }
        readers++;
    }
    return readers > 0;
}

/* A parameter of the source computed into p through an operation lantern
 * cannot undo: fold_param and fold_op. p's own name counts as the last
 * operation; a record with a gather counts only a last operation, the
 * others being possibly the index's. Refusing such a tensor, rather than
 * training or freezing it, is the one course that gives no number PyTorch
 * would not: PyTorch trains the parameter through the function, of which
 * the file keeps only the result. */
static lt_status mark_computed(lt_module *m, lt_param *p)
{
    fold_record r;
    if (p->fold_op || !p->name || !p->value || p->value->block != m->main || !lt_dtype_is_float(p->data.dtype) ||
        lt_torch_named(m, p->name) || p->split_from || p->torch_source || p->restored || p->copy_of ||
        p->transpose_of || p->untied_from || p->gathered_from || !read_record(m, p, &r) || !r.param)
        return LT_OK;
    const char *op = NULL, *product_param = NULL;
    size_t oplen = 0;
    if (folded_product(m, p, &product_param, &op, &oplen)) {
        r.param = product_param;
    } else if (r.op && !r.gathers) {
        op = r.op;
        oplen = r.oplen;
    } else if (r.last_computes) {
        op = p->name;
        oplen = strlen(p->name);
    }
    if (!op)
        return LT_OK;
    size_t d = oplen; /* exp_1: the operation is exp */
    while (d > 0 && op[d - 1] >= '0' && op[d - 1] <= '9')
        d--;
    if (d > 1 && d < oplen && op[d - 1] == '_')
        oplen = d - 1;
    char *o = lt_ir_alloc(m, oplen + 1);
    if (!o)
        return LT_ERR_NOMEM;
    memcpy(o, op, oplen);
    o[oplen] = 0;
    p->fold_op = o;
    p->fold_param = r.param;
    return LT_OK;
}

/* index[i] gets the distinct value number of entry i (numbered in the
 * order of first appearance); the count of distinct values, -1 on OOM. */
static int64_t distinct(const lt_tensor *t, int64_t *index)
{
    int64_t n = t->numel, runs = 0;
    size_t es = lt_dtype_size(t->dtype);
    entry *e = malloc(sizeof *e * (size_t)n);
    if (!e)
        return -1;
    for (int64_t i = 0; i < n; i++) {
        e[i].bits = 0;
        memcpy(&e[i].bits, (const char *)t->data + (size_t)i * es, es);
        e[i].at = i;
    }
    qsort(e, (size_t)n, sizeof *e, by_bits);
    for (int64_t r = 0; r < n; r++) {
        runs += r == 0 || e[r].bits != e[r - 1].bits;
        index[e[r].at] = runs - 1;
    }
    free(e);
    int64_t *rank = malloc(sizeof *rank * (size_t)(runs ? runs : 1)), next = 0;
    if (!rank)
        return -1;
    for (int64_t r = 0; r < runs; r++)
        rank[r] = -1;
    for (int64_t i = 0; i < n; i++) {
        if (rank[index[i]] < 0)
            rank[index[i]] = next++;
        index[i] = rank[index[i]];
    }
    free(rank);
    return runs;
}

/* A parameter named base+suffix holding t (its data taken over), with its
 * value in the main block; its index, -1 on OOM. */
static int new_param(lt_module *m, const char *base, const char *suffix, lt_tensor t, bool trainable)
{
    size_t lb = strlen(base), ls = strlen(suffix);
    char *name = malloc(lb + ls + 1);
    if (!name)
        return -1;
    memcpy(name, base, lb);
    memcpy(name + lb, suffix, ls + 1);
    int q = lt_module_new_param(m, name, t, trainable);
    free(name);
    return q;
}

static lt_status ungather(lt_module *m, int p, int64_t *index, int64_t runs)
{
    const lt_tensor *x = &m->params[p].data;
    size_t es = lt_dtype_size(x->dtype);
    lt_tensor table = {.dtype = x->dtype, .rank = 1, .dims = {runs}, .numel = runs};
    lt_tensor at = {.dtype = LT_I64, .rank = x->rank, .numel = x->numel};
    memcpy(at.dims, x->dims, sizeof at.dims);
    table.data = malloc(es * (size_t)runs);
    if (!table.data)
        return LT_ERR_NOMEM;
    for (int64_t i = x->numel - 1; i >= 0; i--) /* the first appearance last: any copy holds the value */
        memcpy((char *)table.data + (size_t)index[i] * es, (const char *)x->data + (size_t)i * es, es);
    at.data = index;
    const char *base = m->params[p].name;
    int t = new_param(m, base, "@table", table, true);
    if (t < 0) {
        free(table.data);
        return LT_ERR_NOMEM;
    }
    int q = new_param(m, base, "@index", at, false);
    if (q < 0)
        return LT_ERR_NOMEM;
    lt_param *xp = &m->params[p];
    lt_block *b = m->main;
    lt_node *g = lt_node_new(m, b, LT_OP_GATHER, 2, 1);
    if (!g || lt_node_set_attrs(m, g, 0) != LT_OK)
        return LT_ERR_NOMEM;
    size_t lb = strlen(xp->name);
    char *nm = lt_ir_alloc(m, lb + 9);
    if (!nm)
        return LT_ERR_NOMEM;
    memcpy(nm, xp->name, lb);
    memcpy(nm + lb, "@gather", 8);
    g->name = nm;
    g->opset = 13;
    g->in[0] = m->params[t].value;
    g->in[1] = m->params[q].value;
    g->in[0]->uses++;
    g->in[1]->uses++;
    lt_ival *out = lt_ival_new(m, b, nm);
    if (!out)
        return LT_ERR_NOMEM;
    out->def = g;
    out->param = -1;
    out->type = xp->value->type;
    g->out[0] = out;
    lt_block_place_at(b, g, 0);
    lt_module_replace_reads(m, xp->value, out);
    xp->trainable = false;
    xp->gathered_from = m->params[t].name;
    xp->gather_index = m->params[q].name;
    return LT_OK;
}

/* Whether n entries holding runs distinct values (index: each entry's) are
 * copies of a table: at most 3 distinct values in 5 entries, at least
 * three of them (two are a mask's), and none in more than three quarters
 * of the entries (a mask of one value with a few others). A relative
 * position bias over a 2 x 2 window holds 9 distances in 16 places; a
 * causal one puts every later position in one bucket, about half. */
static bool copies_of_few(const int64_t *index, int64_t n, int64_t runs)
{
    if (runs < 3 || runs * 5 > n * 3)
        return false;
    int64_t *count = calloc((size_t)runs, sizeof *count), most = 0;
    if (!count)
        return false;
    for (int64_t i = 0; i < n; i++)
        if (++count[index[i]] > most)
            most = count[index[i]];
    free(count);
    return most * 4 <= n * 3;
}

/* Whether a large tensor's first PREFIX entries already repeat as
 * copies_of_few asks of the whole: a gathered table repeats within its
 * first rows (a relative position bias shifts one row of values along
 * the next), a weight (every val_N transpose the exporter folds, at any
 * size) not at all, so the sort of all its entries is left out. Tensors of
 * up to PREFIX * 16 entries are looked at whole. */
enum { PREFIX = 4096 };
static bool repeats_early(const lt_tensor *t)
{
    if (t->numel <= PREFIX * 16)
        return true;
    lt_tensor head = *t;
    head.numel = PREFIX;
    int64_t *index = malloc(sizeof *index * PREFIX);
    int64_t runs = index ? distinct(&head, index) : -1;
    free(index);
    return runs >= 0 && runs * 5 <= PREFIX * 3;
}

lt_status lt_ir_ungather_tables(lt_module *m, int *nfound, lt_err *err)
{
    *nfound = 0;
    if (!m->ntorch)
        return LT_OK;
    int np = some_param_missing(m) ? m->nparams : 0;
    for (int p = 0; p < np; p++) {
        if (!candidate(m, &m->params[p]))
            continue;
        int64_t n = m->params[p].data.numel;
        if (!repeats_early(&m->params[p].data))
            continue;
        int64_t *index = malloc(sizeof *index * (size_t)n);
        int64_t runs = index ? distinct(&m->params[p].data, index) : -1;
        if (runs < 0) {
            free(index);
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        }
        if (!copies_of_few(index, n, runs)) {
            free(index);
            continue;
        }
        if (ungather(m, p, index, runs) != LT_OK)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        ++*nfound;
    }
    for (int p = 0; p < m->nparams; p++)
        if (mark_computed(m, &m->params[p]) != LT_OK)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    return LT_OK;
}
