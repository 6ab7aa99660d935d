/* `lantern import` and `lantern run`. */
#include "options.h"
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define IMPORT_OPTIONS(X)                                                                                            \
    X(I_PRINT, "--print", NULL, "also write the staged IR in its text form", NULL, 0)                                \
    X(I_JSON, "--json", NULL, "write the summary as one JSON object (strings escaped, bytes that are not "           \
      "UTF-8 as \\ufffd)", NULL, 0)
typedef enum { IMPORT_OPTIONS(LT_OPT_ENUM) } import_opt;
static const lt_cli_opt import_opts[] = {IMPORT_OPTIONS(LT_OPT_ROW){0, NULL, NULL, NULL, NULL, 0}};

static int cmd_import(const lt_cli_args *a)
{
    const char *path = a->ops[0];
    int print = 0, json = 0;
    for (int i = 0; i < a->nitems; i++)
        switch ((import_opt)a->items[i].id) {
        case I_PRINT: print = 1; break;
        case I_JSON: json = 1; break;
        }
    if (print && json) {
        fprintf(stderr, "lantern import: --print and --json do not go together (both write to stdout)\n");
        return 2;
    }
    lt_err err;
    lt_model *m;
    lt_status s = lt_model_load(path, &m, &err);
    if (s != LT_OK) {
        fprintf(stderr, "lantern: %s\n", err.msg);
        return lt_exit_code(s);
    }
    int unsupported = 0;
    if (json)
        unsupported = lt_cli_import_json(m, stdout);
    else
        lt_model_summary(m, stdout, &unsupported);
    if (print)
        lt_model_print(m, stdout);
    lt_model_free(m);
    if (unsupported) {
        char shown[512];
        fprintf(stderr, "lantern: %s: %d node(s) use ops lantern cannot run (listed %s)\n",
                lt_str_printable(path, shown, sizeof shown), unsupported, json ? "under \"unsupported\"" : "above");
        return 2;
    }
    return 0;
}

const lt_cli_cmd lt_cli_import = {
    "import", "MODEL [--print | --json]",
    "summarize an ONNX model: inputs, outputs, parameters, ops (exit 2 if lantern cannot run one)",
    "MODEL", 1, 1, NULL, import_opts, cmd_import};

void lt_cli_sanitize(const char *name, char *out, size_t len)
{
    size_t i = 0;
    for (; name[i] && i + 1 < len; i++) {
        char c = name[i];
        int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' ||
                 c == '_' || c == '-';
        out[i] = ok ? c : '_';
    }
    out[i] = 0;
}

static volatile sig_atomic_t run_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    run_interrupted = 1;
}

#define RUN_OPTIONS(X)                                                                                               \
    X(R_INPUT, "--input", "NAME=FILE", "the model input NAME from a .npy or TensorProto .pb file", NULL,             \
      LT_OPT_REPEAT)                                                                                                 \
    X(R_OUTPUT_DIR, "--output-dir", "DIR", "also write every output to DIR/<name>.npy (DIR is created)",             \
      "print only", 0)
typedef enum { RUN_OPTIONS(LT_OPT_ENUM) } run_opt;
static const lt_cli_opt run_opts[] = {RUN_OPTIONS(LT_OPT_ROW){0, NULL, NULL, NULL, NULL, 0}};

static int cmd_run(const lt_cli_args *a)
{
    const char *path = a->ops[0], *outdir = NULL;
    int nin = 0, rc = 0;
    const char **names = calloc((size_t)a->nitems + 1, sizeof *names);
    lt_value **vals = calloc((size_t)a->nitems + 1, sizeof *vals);
    lt_err err;
    lt_model *m = NULL;
    lt_session *sess = NULL;
    lt_value **outs = NULL;
    if (!names || !vals) {
        fprintf(stderr, "lantern: out of memory\n");
        free(names);
        free(vals);
        return 1;
    }
    for (int i = 0; i < a->nitems; i++) {
        char *val = a->items[i].val;
        switch ((run_opt)a->items[i].id) {
        case R_OUTPUT_DIR: outdir = val; break;
        case R_INPUT: {
            char *eq = strchr(val, '=');
            if (!eq) {
                char shown[512];
                fprintf(stderr, "lantern run: --input wants NAME=FILE, got '%s'\n",
                        lt_str_printable(val, shown, sizeof shown));
                rc = 2;
                goto done;
            }
            *eq = 0;
            if (!lt_cli_input_once(names, nin, val, "run", "--input")) {
                rc = 2;
                goto done;
            }
            names[nin] = val;
            lt_status s = lt_value_load(eq + 1, &vals[nin], &err);
            if (s != LT_OK) {
                fprintf(stderr, "lantern: %s\n", err.msg);
                rc = lt_exit_code(s);
                goto done;
            }
            nin++;
            break;
        }
        }
    }
    lt_status s = lt_model_load(path, &m, &err);
    int nout = m ? lt_model_num_outputs(m) : 0;
    if (s == LT_OK && outdir) {
        const char **onames = calloc(nout + 1, sizeof *onames);
        for (int i = 0; onames && i < nout; i++)
            onames[i] = lt_model_output_name(m, i);
        if (!onames) {
            fprintf(stderr, "lantern: out of memory\n");
            rc = 1;
            goto done;
        }
        int ok = lt_cli_npy_names_distinct(onames, nout, "outputs", outdir) && lt_cli_out_dir(outdir, "--output-dir", 1);
        free(onames);
        if (!ok) {
            rc = 2;
            goto done;
        }
    }
    if (s == LT_OK)
        s = lt_session_new(m, &sess, &err);
    outs = calloc(nout + 1, sizeof *outs);
    if (s == LT_OK) {
        /* Ctrl-C stops a long run (a Loop that does not end) between nodes
         * and iterations; a second one kills */
        struct sigaction sa, old;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sa.sa_flags = SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        run_interrupted = 0;
        sigaction(SIGINT, &sa, &old);
        lt_set_interrupt(&run_interrupted);
        s = lt_session_run(sess, nin, names, vals, outs, &err);
        lt_set_interrupt(NULL);
        sigaction(SIGINT, &old, NULL);
    }
    if (s != LT_OK) {
        fprintf(stderr, "lantern: %s\n", err.msg);
        rc = lt_exit_code(s);
        goto done;
    }
    for (int i = 0; i < nout; i++) {
        lt_fputs_printable(lt_model_output_name(m, i), stdout);
        printf(": ");
        lt_value_describe(outs[i], 8, stdout);
        printf("\n");
        if (outdir) {
            char fn[1024], file[2048];
            lt_cli_sanitize(lt_model_output_name(m, i), fn, sizeof fn);
            snprintf(file, sizeof file, "%s/%s.npy", outdir, fn);
            s = lt_value_save_npy(outs[i], file, &err);
            if (s != LT_OK) {
                fprintf(stderr, "lantern: %s\n", err.msg);
                rc = lt_exit_code(s);
            }
        }
    }
done:
    if (outs)
        for (int i = 0; m && i < lt_model_num_outputs(m); i++)
            lt_value_free(outs[i]);
    free(outs);
    for (int i = 0; i < nin; i++)
        lt_value_free(vals[i]);
    free(vals);
    free(names);
    lt_session_free(sess);
    lt_model_free(m);
    return rc;
}

const lt_cli_cmd lt_cli_run = {
    "run", "MODEL --input NAME=FILE ... [--output-dir DIR]", "run a model on .npy/.pb inputs and print its outputs",
    "MODEL", 1, 1, NULL, run_opts, cmd_run, true};
