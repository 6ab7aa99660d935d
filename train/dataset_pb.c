/* Datasets as ONNX TensorProto files (x.pb, y.pb, optionally x_test.pb and
 * y_test.pb in one folder), read with lt_value_load and interpreted as npz
 * arrays are. */
#include "dataset_impl.h"
#include <stdio.h>

static void pb_paths(const char *dir, int split, char *xp, char *yp, size_t len)
{
    snprintf(xp, len, "%s/%s.pb", dir, split ? "x_test" : "x");
    snprintf(yp, len, "%s/%s.pb", dir, split ? "y_test" : "y");
}

int lt_ds_has_pb(const char *dir, int split)
{
    char xp[4200], yp[4200];
    pb_paths(dir, split, xp, yp, sizeof xp);
    return lt_ds_file_exists(xp) && lt_ds_file_exists(yp);
}

lt_status lt_ds_open_pb(lt_dataset *d, const char *dir, int split, lt_err *err)
{
    char xp[4200], yp[4200];
    pb_paths(dir, split, xp, yp, sizeof xp);
    const char *paths[2] = {xp, yp};
    lt_value *v[2] = {NULL, NULL};
    lt_status s = LT_OK;
    for (int i = 0; i < 2 && s == LT_OK; i++) {
        if (!lt_ds_file_exists(paths[i]))
            s = lt_errf(err, LT_ERR_IO,
                        "%s: no such file (onnx-pb=DIR holds x.pb, y.pb and, for a test split, x_test.pb, y_test.pb)",
                        paths[i]);
        else
            s = lt_value_load(paths[i], &v[i], err);
        if (s == LT_OK && !lt_value_tensor(v[i]))
            s = lt_errf(err, LT_ERR_INVALID, "%s: not a tensor", paths[i]);
    }
    if (s == LT_OK)
        s = lt_ds_from_arrays(d, lt_value_tensor(v[0]), lt_value_tensor(v[1]), NULL, xp, yp, err);
    lt_value_free(v[0]);
    lt_value_free(v[1]);
    return s;
}
