/* A model's metadata_props (key/value strings): read by the importer, set by
 * training (the normalisation a run used, train/norm_meta.c) and written
 * back by lt_model_export wherever a value differs from the file's. */
#include "ir.h"
#include <string.h>

const char *lt_model_metadata(const lt_model *m, const char *key)
{
    for (int i = 0; m && key && i < m->nmeta; i++)
        if (!strcmp(m->meta_key[i], key))
            return m->meta_value[i];
    return NULL;
}

lt_status lt_model_set_metadata(lt_model *m, const char *key, const char *value, lt_err *err)
{
    if (!key || !value)
        return lt_errf(err, LT_ERR_INVALID, "%s: a metadata entry needs a key and a value", m->path);
    const char *v = lt_ir_strdup(m, value);
    if (!v)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    for (int i = 0; i < m->nmeta; i++)
        if (!strcmp(m->meta_key[i], key)) {
            m->meta_value[i] = v;
            return LT_OK;
        }
    if (m->nmeta == m->cap_meta) {
        int cap = m->cap_meta ? 2 * m->cap_meta : 8;
        const char **k = lt_ir_alloc(m, sizeof *k * (size_t)cap), **vv = lt_ir_alloc(m, sizeof *vv * (size_t)cap);
        if (!k || !vv)
            return lt_errf(err, LT_ERR_NOMEM, "out of memory");
        if (m->nmeta) {
            memcpy(k, m->meta_key, sizeof *k * (size_t)m->nmeta);
            memcpy(vv, m->meta_value, sizeof *vv * (size_t)m->nmeta);
        }
        m->meta_key = k;
        m->meta_value = vv;
        m->cap_meta = cap;
    }
    const char *k = lt_ir_strdup(m, key);
    if (!k)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    m->meta_key[m->nmeta] = k;
    m->meta_value[m->nmeta++] = v;
    return LT_OK;
}
