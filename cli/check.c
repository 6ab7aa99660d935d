/* `lantern check`: runs ONNX backend test cases (model.onnx plus
 * test_data_set_N/input_K.pb and output_K.pb). Each case runs in a child
 * process so a crash or a hang is reported as that case's failure. With
 * --expect FILE, the result is compared with a list of expected failures:
 * an unexpected failure and an unexpected pass both fail the run. */
#include "options.h"
#include "importer/open_read.h"
#include <dirent.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define CASE_TIMEOUT_S 120

typedef struct strlist {
    char **v;
    int n, cap;
} strlist;

static void push(strlist *l, const char *s)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        l->v = realloc(l->v, sizeof *l->v * l->cap);
        if (!l->v)
            abort(); /* the CLI has nowhere to go without memory */
    }
    l->v[l->n++] = strdup(s);
}

static void free_list(strlist *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (strlist){0};
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void list_dir(const char *dir, const char *prefix, strlist *out)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)))
        if (strncmp(e->d_name, prefix, strlen(prefix)) == 0)
            push(out, e->d_name);
    closedir(d);
    qsort(out->v, out->n, sizeof *out->v, cmp_str);
}

typedef struct tol {
    char *name;
    double rtol, atol;
} tol;

/* Runs one test data set; writes a reason into why on failure. */
static int run_set(lt_model *m, const char *setdir, double rtol, double atol, char *why, size_t wl)
{
    int nin = lt_model_num_inputs(m), nout = lt_model_num_outputs(m), ok = 0, nfiles = 0;
    lt_err err;
    const char **names = calloc(nin + 1, sizeof *names);
    lt_value **vals = calloc(nin + 1, sizeof *vals), **outs = calloc(nout + 1, sizeof *outs);
    lt_session *s = NULL;
    char file[8192];
    for (int i = 0; i < nin; i++) {
        snprintf(file, sizeof file, "%s/input_%d.pb", setdir, i);
        if (!is_file(file))
            break;
        lt_status st = lt_value_load_as(file, lt_model_input_kind(m, i), &vals[nfiles], &err);
        if (st != LT_OK) {
            snprintf(why, wl, "%s", err.msg);
            goto done;
        }
        names[nfiles] = lt_model_input_name(m, i);
        nfiles++;
    }
    lt_status st = lt_session_new(m, &s, &err);
    if (st == LT_OK)
        st = lt_session_run(s, nfiles, names, vals, outs, &err);
    if (st != LT_OK) {
        snprintf(why, wl, "%s", err.msg);
        goto done;
    }
    ok = 1;
    for (int i = 0; i < nout && ok; i++) {
        snprintf(file, sizeof file, "%s/output_%d.pb", setdir, i);
        if (!is_file(file))
            continue;
        lt_value *want;
        st = lt_value_load_as(file, lt_model_output_kind(m, i), &want, &err);
        if (st != LT_OK) {
            snprintf(why, wl, "%s", err.msg);
            ok = 0;
            break;
        }
        char r[512];
        /* as ONNX's runner: a 16-bit float output is compared to two of its
         * ULPs (bfloat16 2^-6, onnx's rule; float16 2^-9 by the same rule) */
        const lt_tensor *gt = lt_value_tensor(outs[i]);
        double rt = !gt ? rtol : gt->dtype == LT_BF16 ? (rtol > 0x1p-6 ? rtol : 0x1p-6)
                    : gt->dtype == LT_F16               ? (rtol > 0x1p-9 ? rtol : 0x1p-9) : rtol;
        if (!lt_value_close(outs[i], want, rt, atol, r, sizeof r)) {
            snprintf(why, wl, "output '%s': %s", lt_model_output_name(m, i), r);
            ok = 0;
        }
        lt_value_free(want);
    }
done:
    for (int i = 0; i < nfiles; i++)
        lt_value_free(vals[i]);
    for (int i = 0; i < nout; i++)
        lt_value_free(outs[i]);
    lt_session_free(s);
    free(names);
    free(vals);
    free(outs);
    return ok;
}

/* 0 pass, 1 fail, 2 skip */
static int run_case(const char *dir, double rtol, double atol, char *why, size_t wl)
{
    char model[4096];
    snprintf(model, sizeof model, "%s/model.onnx", dir);
    strlist sets = {0};
    list_dir(dir, "test_data_set_", &sets);
    if (sets.n == 0) {
        snprintf(why, wl, "no test_data_set_*");
        return 2;
    }
    lt_err err;
    lt_model *m;
    lt_status st = lt_model_load(model, &m, &err);
    int rc = 0;
    if (st != LT_OK) {
        snprintf(why, wl, "%s", err.msg);
        rc = 1;
    }
    for (int i = 0; i < sets.n && rc == 0; i++) {
        char setdir[4096];
        snprintf(setdir, sizeof setdir, "%s/%s", dir, sets.v[i]);
        if (!run_set(m, setdir, rtol, atol, why, wl))
            rc = 1;
    }
    if (st == LT_OK)
        lt_model_free(m);
    for (int i = 0; i < sets.n; i++)
        free(sets.v[i]);
    free(sets.v);
    return rc;
}

static int run_case_isolated(const char *dir, double rtol, double atol, char *why, size_t wl)
{
    int fd[2];
    fflush(stdout);
    if (pipe(fd) != 0)
        return run_case(dir, rtol, atol, why, wl);
    pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return run_case(dir, rtol, atol, why, wl);
    }
    if (pid == 0) {
        close(fd[0]);
        alarm(CASE_TIMEOUT_S);
        char msg[2048] = "";
        int rc = run_case(dir, rtol, atol, msg, sizeof msg);
        size_t len = strlen(msg);
        ssize_t w = write(fd[1], &rc, sizeof rc);
        w = write(fd[1], msg, len);
        (void)w;
        close(fd[1]);
        _exit(0);
    }
    close(fd[1]);
    int rc = 1;
    why[0] = 0;
    ssize_t r = read(fd[0], &rc, sizeof rc);
    if (r == (ssize_t)sizeof rc) {
        size_t got = 0;
        while (got + 1 < wl && (r = read(fd[0], why + got, wl - 1 - got)) > 0)
            got += (size_t)r;
        why[got] = 0;
    } else {
        rc = -1;
    }
    close(fd[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    if (rc == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        if (WIFSIGNALED(status))
            snprintf(why, wl, WTERMSIG(status) == SIGALRM ? "timed out after %d s" : "crashed (signal %d)",
                     WTERMSIG(status) == SIGALRM ? CASE_TIMEOUT_S : WTERMSIG(status));
        else
            snprintf(why, wl, "child exited with status %d", WEXITSTATUS(status));
        rc = 1;
    }
    return rc;
}

static void one_line(char *s)
{
    for (; *s; s++)
        if (*s == '\n' || *s == '\r')
            *s = ' ';
}

#define CHECK_OPTIONS(X)                                                                                             \
    X(C_EXPECT, "--expect", "FILE",                                                                                  \
      "expected failures, one case a line ('tol CASE RTOL ATOL' sets a case's tolerances); an unexpected "           \
      "failure or pass fails the run", "every case must pass", 0)                                                    \
    X(C_NO_FORK, "--no-fork", NULL, "run the cases in this process (a crash ends the run)",                          \
      "each case in a child process, 120 s each", 0)
typedef enum { CHECK_OPTIONS(LT_OPT_ENUM) } check_opt;
static const lt_cli_opt check_opts[] = {CHECK_OPTIONS(LT_OPT_ROW){0, NULL, NULL, NULL, NULL, 0}};

static int cmd_check(const lt_cli_args *a)
{
    const char *expect_path = NULL;
    int isolate = 1;
    strlist cases = {0}, expected = {0};
    tol *tols = NULL;
    int ntols = 0;
    for (int i = 0; i < a->nitems; i++)
        switch ((check_opt)a->items[i].id) {
        case C_EXPECT: expect_path = a->items[i].val; break;
        case C_NO_FORK: isolate = 0; break;
        }
    for (int i = 0; i < a->nops; i++) {
        const char *arg = a->ops[i];
        char model[4096];
        snprintf(model, sizeof model, "%s/model.onnx", arg);
        if (is_file(model)) {
            push(&cases, arg);
        } else if (is_dir(arg)) {
            strlist sub = {0};
            list_dir(arg, "", &sub);
            for (int k = 0; k < sub.n; k++) {
                char p[4096];
                snprintf(p, sizeof p, "%s/%s/model.onnx", arg, sub.v[k]);
                if (is_file(p)) {
                    snprintf(p, sizeof p, "%s/%s", arg, sub.v[k]);
                    push(&cases, p);
                }
                free(sub.v[k]);
            }
            free(sub.v);
        } else {
            char shown[512];
            fprintf(stderr, "lantern check: %s: no such test case or folder\n",
                    lt_str_printable(arg, shown, sizeof shown));
            free_list(&cases);
            return 2;
        }
    }
    if (cases.n == 0) {
        fprintf(stderr, "lantern check: no test cases (model.onnx with test_data_set_*) under the given paths\n");
        return 2;
    }
    if (expect_path) {
        lt_err oe;
        FILE *f = lt_fopen_read(expect_path, NULL, &oe);
        if (!f) {
            fprintf(stderr, "lantern check: %s\n", oe.msg);
            free_list(&cases);
            return 2;
        }
        char line[1024];
        while (fgets(line, sizeof line, f)) {
            char name[512];
            double r, a;
            if (line[0] == '#' || sscanf(line, "%511s", name) != 1)
                continue;
            if (strcmp(name, "tol") == 0 && sscanf(line, "tol %511s %lf %lf", name, &r, &a) == 3) {
                tols = realloc(tols, sizeof *tols * (ntols + 1));
                tols[ntols++] = (tol){strdup(name), r, a};
            } else {
                push(&expected, name);
            }
        }
        fclose(f);
    }
    int npass = 0, nfail = 0, nskip = 0, unexpected = 0;
    char *seen = calloc(expected.n + 1, 1);
    for (int i = 0; i < cases.n; i++) {
        const char *base = strrchr(cases.v[i], '/') ? strrchr(cases.v[i], '/') + 1 : cases.v[i];
        double rtol = 1e-3, atol = 1e-7;
        for (int k = 0; k < ntols; k++)
            if (strcmp(tols[k].name, base) == 0) {
                rtol = tols[k].rtol;
                atol = tols[k].atol;
            }
        char why[2048] = "";
        int rc = isolate ? run_case_isolated(cases.v[i], rtol, atol, why, sizeof why)
                         : run_case(cases.v[i], rtol, atol, why, sizeof why);
        one_line(why);
        /* case folders and string outputs come from the files: shown escaped */
        char why_s[2048], base_s[512];
        lt_str_printable(why, why_s, sizeof why_s);
        lt_str_printable(base, base_s, sizeof base_s);
        int exp = -1;
        for (int k = 0; k < expected.n; k++)
            if (strcmp(expected.v[k], base) == 0)
                exp = k;
        if (exp >= 0)
            seen[exp] = 1;
        if (rc == 2) {
            nskip++;
            printf("SKIP %s: %s\n", base_s, why_s);
        } else if (rc == 0) {
            npass++;
            if (exp >= 0 && expect_path) {
                unexpected++;
                printf("PASS %s (UNEXPECTED: listed as an expected failure)\n", base_s);
            } else {
                printf("PASS %s\n", base_s);
            }
        } else {
            nfail++;
            if (exp < 0 && expect_path) {
                unexpected++;
                printf("FAIL %s: %s (UNEXPECTED)\n", base_s, why_s);
            } else {
                printf("FAIL %s: %s\n", base_s, why_s);
            }
        }
        fflush(stdout);
    }
    printf("%d passed, %d failed", npass, nfail);
    if (nskip)
        printf(", %d skipped", nskip);
    printf("\n");
    if (expect_path && unexpected)
        printf("%d result(s) differ from %s\n", unexpected, expect_path);
    free_list(&cases);
    free_list(&expected);
    for (int k = 0; k < ntols; k++)
        free(tols[k].name);
    free(tols);
    free(seen);
    return expect_path && unexpected ? 1 : 0;
}

const lt_cli_cmd lt_cli_check = {
    "check", "[--expect FILE] PATH...",
    "run ONNX backend test cases (model.onnx + test_data_set_*) or every case in a folder", "PATH", 1, -1,
    "Tolerances: rtol 1e-3, atol 1e-7; bfloat16 and float16 outputs at least two ULPs (2^-6, 2^-9);\n"
    "float8 and float4 outputs by value (the default rtol, far below their spacing, makes that exact).\n"
    "One line per case, then `N passed, M failed`.\n",
    check_opts, cmd_check};
