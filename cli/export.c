/* `lantern export`: writes a model's ONNX file again with other parameter
 * values: those a training checkpoint holds (CHECKPOINT --model MODEL), or
 * those of .npy files named after the parameters (MODEL --weights DIR). */
#include "cli.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

#define EXPORT_USAGE                                                                                          \
    "usage: lantern export CHECKPOINT --model MODEL -o OUT.onnx\n"                                            \
    "       lantern export MODEL [--weights DIR] -o OUT.onnx\n"                                               \
    "  writes MODEL again (external data inlined) with the parameters of a training checkpoint\n"             \
    "  (DIR/checkpoint.ltck or DIR, from lantern train --checkpoint-dir DIR); with --weights,\n"             \
    "  parameter P takes the values of DIR/P.npy where that file exists\n"

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
        if (s == LT_OK)
            s = lt_model_set_param(m, i, t, err);
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

int lt_cmd_export(int argc, char **argv)
{
    const char *src = NULL, *out = NULL, *weights = NULL, *model = NULL;
    for (int i = 1; i < argc; i++) {
        if ((!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output")) && i + 1 < argc)
            out = argv[++i];
        else if (!strcmp(argv[i], "--weights") && i + 1 < argc)
            weights = argv[++i];
        else if (!strcmp(argv[i], "--model") && i + 1 < argc)
            model = argv[++i];
        else if (argv[i][0] != '-' && !src)
            src = argv[i];
        else {
            fprintf(stderr, "lantern export: unexpected argument '%s'\n", argv[i]);
            return 2;
        }
    }
    if (!src || !out) {
        fprintf(stderr, EXPORT_USAGE);
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
