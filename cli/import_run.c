/* `lantern import` and `lantern run`. */
#include "cli.h"
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int lt_cmd_import(int argc, char **argv)
{
    const char *path = NULL;
    int print = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--print") == 0)
            print = 1;
        else if (argv[i][0] == '-') {
            fprintf(stderr, "lantern import: unknown option '%s'\n", argv[i]);
            return 2;
        } else if (!path)
            path = argv[i];
        else {
            fprintf(stderr, "lantern import: one model at a time\n");
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: lantern import MODEL [--print]\n");
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
    lt_model_summary(m, stdout, &unsupported);
    if (print)
        lt_model_print(m, stdout);
    lt_model_free(m);
    if (unsupported) {
        fprintf(stderr, "lantern: %s: %d node(s) use ops lantern cannot run (listed above)\n", path, unsupported);
        return 2;
    }
    return 0;
}

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

int lt_cmd_run(int argc, char **argv)
{
    const char *path = NULL, *outdir = NULL;
    int nin = 0, rc = 0;
    const char **names = calloc(argc, sizeof *names);
    lt_value **vals = calloc(argc, sizeof *vals);
    lt_err err;
    lt_model *m = NULL;
    lt_session *sess = NULL;
    lt_value **outs = NULL;
    if (!names || !vals) {
        fprintf(stderr, "lantern: out of memory\n");
        return 1;
    }
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--input") == 0 && i + 1 < argc) {
            char *spec = argv[++i], *eq = strchr(spec, '=');
            if (!eq) {
                fprintf(stderr, "lantern run: --input wants NAME=FILE, got '%s'\n", spec);
                rc = 2;
                goto done;
            }
            *eq = 0;
            if (!lt_cli_input_once(names, nin, spec, "run", "--input")) {
                rc = 2;
                goto done;
            }
            names[nin] = spec;
            lt_status s = lt_value_load(eq + 1, &vals[nin], &err);
            if (s != LT_OK) {
                fprintf(stderr, "lantern: %s\n", err.msg);
                rc = lt_exit_code(s);
                goto done;
            }
            nin++;
        } else if (strcmp(argv[i], "--output-dir") == 0 && i + 1 < argc) {
            outdir = argv[++i];
        } else if (argv[i][0] == '-') {
            fprintf(stderr, "lantern run: unknown option '%s'\n", argv[i]);
            rc = 2;
            goto done;
        } else if (!path) {
            path = argv[i];
        } else {
            fprintf(stderr, "lantern run: unexpected argument '%s'\n", argv[i]);
            rc = 2;
            goto done;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: lantern run MODEL --input NAME=FILE ... [--output-dir DIR]\n");
        rc = 2;
        goto done;
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
