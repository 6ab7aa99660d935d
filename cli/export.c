/* `lantern export`: writes a model's ONNX file again with other parameter
 * values: those a training checkpoint holds (CHECKPOINT --model MODEL), or
 * those of .npy files named after the parameters (MODEL --weights DIR). */
#include "options.h"
#include "train/checkpoint.h"
#include "importer/export_external.h"
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>


/* Parameter P from weights/P.npy (name sanitized) where that file exists. */
static lt_status from_npy(lt_model *m, const char *weights, int *replaced, lt_err *err)
{
    lt_status s = LT_OK;
    for (int i = 0; s == LT_OK && i < lt_model_num_params(m); i++) {
        char fn[1024], file[PATH_MAX + 1100];
        lt_cli_sanitize(lt_model_param_name(m, i), fn, sizeof fn);
        snprintf(file, sizeof file, "%s/%s.npy", weights, fn);
        if (access(file, F_OK) != 0)
            continue;
        lt_value *v = NULL;
        s = lt_value_load(file, &v, err);
        const lt_tensor *t = s == LT_OK ? lt_value_tensor(v) : NULL;
        if (s == LT_OK && !t) {
            snprintf(err->msg, sizeof err->msg, "%.900s: not a tensor", file);
            s = LT_ERR_INVALID;
        }
        if (s == LT_OK && lt_model_set_param(m, i, t, err) != LT_OK) {
            char why[sizeof err->msg];
            snprintf(why, sizeof why, "%s", err->msg);
            s = lt_errf(err, LT_ERR_INVALID, "%.900s: %s", file, why);
        }
        *replaced += s == LT_OK;
        lt_value_free(v);
    }
    return s;
}

/* Two parameters that read the same DIR/<name>.npy would take one's values. */
static int params_distinct(lt_model *m, const char *weights)
{
    int n = lt_model_num_params(m);
    const char **names = calloc((size_t)n + 1, sizeof *names);
    if (!names) {
        fprintf(stderr, "lantern: out of memory\n");
        return 0;
    }
    for (int i = 0; i < n; i++)
        names[i] = lt_model_param_name(m, i);
    int ok = lt_cli_npy_names_distinct(names, n, "parameters", weights);
    free(names);
    return ok;
}

/* -o against the files the command reads: the checkpoint and its folder's
 * lock (NULL: none), the model's external data; the data file -o may take
 * against those and the model. */
static int outputs_apart(const char *out, const char *model, const char *ck, const char *lock)
{
    char **ext = NULL;
    int next = 0;
    const char **files = NULL, **what = NULL;
    if (lt_model_external_files(model, &ext, &next)) {
        files = calloc((size_t)next + 3, sizeof *files);
        what = calloc((size_t)next + 3, sizeof *what);
    }
    if (!files || !what) {
        free(files);
        free(what);
        lt_export_free_files(ext, next);
        fprintf(stderr, "lantern: out of memory\n");
        return 0;
    }
    int n = 0;
    files[n] = ck;
    what[n++] = "the checkpoint";
    files[n] = lock;
    what[n++] = "the checkpoint folder's lock";
    for (int i = 0; i < next; i++) {
        files[n] = ext[i];
        what[n++] = "the model's external data";
    }
    int ok = lt_cli_out_distinct(out, "-o", files, what, n);
    files[n] = model;
    what[n++] = "the model";
    ok = ok && lt_cli_out_data_distinct(out, "-o", files, what, n);
    free(files);
    free(what);
    lt_export_free_files(ext, next);
    return ok;
}

#define EXPORT_OPTIONS(X, A)                                                                                         \
    X(E_OUT, "-o", "OUT.onnx", "the file to write (required)", NULL, 0)                                              \
    A(E_OUT, "--output", "OUT.onnx", "the file to write (required)", NULL, 0)                                        \
    X(E_MODEL, "--model", "MODEL", "the model a checkpoint was trained from (export CHECKPOINT)", NULL, 0)           \
    X(E_WEIGHTS, "--weights", "DIR", "parameter P takes DIR/P.npy where that file exists (export MODEL)",            \
      "the model's own values", 0)
typedef enum { EXPORT_OPTIONS(LT_OPT_ENUM, LT_OPT_SKIP) } export_opt;
static const lt_cli_opt export_opts[] = {EXPORT_OPTIONS(LT_OPT_ROW, LT_OPT_ROW){0, NULL, NULL, NULL, NULL, 0}};

static int cmd_export(const lt_cli_args *a)
{
    const char *src = a->ops[0], *out = NULL, *weights = NULL, *model = NULL;
    for (int i = 0; i < a->nitems; i++)
        switch ((export_opt)a->items[i].id) {
        case E_OUT: out = a->items[i].val; break;
        case E_MODEL: model = a->items[i].val; break;
        case E_WEIGHTS: weights = a->items[i].val; break;
        }
    if (!out) {
        fprintf(stderr, "lantern export: -o OUT.onnx is required\n");
        return 2;
    }
    if (model && weights) {
        fprintf(stderr, "lantern export: --model (export from a checkpoint) and --weights do not go together\n");
        return 2;
    }
    /* the old form given a checkpoint would fail as "not an ONNX model" */
    if (!model && lt_is_checkpoint(src)) {
        fprintf(stderr, "lantern export: %s is a training checkpoint; name the model it was trained from with "
                        "--model MODEL\n", src);
        return 2;
    }
    if (!lt_cli_out_file(out, "-o", 0))
        return 2;
    /* -o may replace the model (written whole, at the end), never the
     * checkpoint, its folder's lock, a file of the model's external data or
     * a .npy the weights come from; nor may the data file -o may take */
    char ckfile[PATH_MAX + 32], lockfile[PATH_MAX + 32], outdir[PATH_MAX];
    struct stat ss;
    const char *ck = NULL, *lock = NULL;
    if (model && stat(src, &ss) == 0 && S_ISDIR(ss.st_mode) &&
        snprintf(ckfile, sizeof ckfile, "%s/%s", src, LT_CKPT_FILE) < (int)sizeof ckfile)
        ck = ckfile;
    else if (model)
        ck = src;
    if (ck && strlen(ck) < sizeof outdir) {
        memcpy(outdir, ck, strlen(ck) + 1);
        if (snprintf(lockfile, sizeof lockfile, "%s/checkpoint.lock", dirname(outdir)) < (int)sizeof lockfile)
            lock = lockfile;
    }
    if (!outputs_apart(out, model ? model : src, ck, lock))
        return 2;
    size_t ol = strlen(out);
    if (weights && ol > 4 && !strcmp(out + ol - 4, ".npy") && ol < sizeof outdir) {
        memcpy(outdir, out, ol + 1);
        if (lt_cli_same_file(dirname(outdir), weights)) {
            char shown[512];
            fprintf(stderr, "lantern export: -o %s is a .npy file in --weights, a parameter's source; give -o "
                    "another file\n", lt_str_printable(out, shown, sizeof shown));
            return 2;
        }
    }
    struct stat ws;
    const char *bad = !weights                        ? NULL
                      : stat(weights, &ws) != 0       ? (errno == ENOENT ? "no such folder" : strerror(errno))
                      : !S_ISDIR(ws.st_mode)          ? "not a folder"
                                                      : NULL;
    if (bad) {
        char shown[512];
        fprintf(stderr, "lantern export: --weights %s: %s\n", lt_str_printable(weights, shown, sizeof shown), bad);
        return 2;
    }
    lt_err err;
    lt_model *m = NULL;
    int replaced = 0;
    lt_status s = lt_model_load(model ? model : src, &m, &err);
    if (s == LT_OK && weights && !params_distinct(m, weights)) {
        lt_model_free(m);
        return 2;
    }
    if (s == LT_OK && model)
        s = lt_model_load_checkpoint(m, src, &err);
    else if (s == LT_OK && weights)
        s = from_npy(m, weights, &replaced, &err);
    /* a folder that names no parameter is most likely the wrong folder */
    if (s == LT_OK && weights && !replaced)
        s = lt_errf(&err, LT_ERR_INVALID, "--weights %s: no .npy file there names a parameter of %s (lantern import "
                    "--print lists them)", weights, src);
    if (s == LT_OK)
        s = lt_model_export(m, model ? model : src, out, &err);
    lt_model_free(m);
    if (s != LT_OK) {
        fprintf(stderr, "lantern: %s\n", err.msg);
        return lt_exit_code(s);
    }
    if (model)
        printf("parameters from %s\n", src);
    else if (weights)
        printf("%d parameter(s) from %s\n", replaced, weights);
    printf("wrote %s\n", out);
    return 0;
}

const lt_cli_cmd lt_cli_export = {
    "export", "CHECKPOINT --model MODEL -o OUT.onnx | MODEL [--weights DIR] -o OUT.onnx",
    "write the model again with a training checkpoint's weights, or with parameters from DIR/*.npy",
    "CHECKPOINT or MODEL", 1, 1,
    "Writes MODEL again with the parameters of a training checkpoint (the .ltck file or the folder\n"
    "holding it, from lantern train --checkpoint-dir DIR), or with --weights those of DIR/<name>.npy\n"
    "(names sanitized as lantern grad writes them). A MODEL with external data, or one past 2 GiB,\n"
    "is written with its initializers of 1 KiB or more in OUT.onnx.data beside OUT.onnx.\n",
    export_opts, cmd_export};
