/* The option parser and the help printer, both reading a command's table
 * (cli/options.h); suggestions for a mistyped option by edit distance. */
#include "options.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Options every command takes; ids below any command's. */
enum { G_THREADS = -100, G_HELP, G_LIST };
static const lt_cli_opt global_opts[] = {
    {G_THREADS, "--threads", "N", "kernel threads (OpenMP; OpenBLAS stays at one)",
     "LANTERN_THREADS, else OpenMP's own: OMP_NUM_THREADS or one per core", 0},
    {G_HELP, "-h", NULL, "print this help and exit", NULL, 0},
    {G_HELP, "--help", NULL, "print this help and exit", NULL, 0},
    {G_LIST, "--list-options", NULL, NULL, NULL, 0}, /* hidden: for the tests */
    {0, NULL, NULL, NULL, NULL, 0},
};

int lt_cli_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 98 || lb > 98)
        return 99;
    int row[100];
    for (size_t j = 0; j <= lb; j++)
        row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

const char *lt_cli_nearest(const char *s, const char *const *names, int n)
{
    const char *best = NULL;
    int bd = 99;
    for (int i = 0; i < n; i++) {
        int d = lt_cli_edit_distance(s, names[i]);
        if (d < bd) {
            bd = d;
            best = names[i];
        }
    }
    /* a third of the name, at least two edits: --epoch, --lerning-rate no */
    size_t len = strlen(s);
    int near = len / 3 > 2 ? (int)(len / 3) : 2;
    return bd <= near ? best : NULL;
}

static const lt_cli_opt *find(const lt_cli_opt *t, const char *name, size_t len)
{
    for (; t->name; t++)
        if (strlen(t->name) == len && !strncmp(t->name, name, len))
            return t;
    return NULL;
}

/* Every name the command accepts, hidden ones aside; *n receives the count. */
static const char **all_names(const lt_cli_cmd *cmd, int *n)
{
    int k = 0;
    for (const lt_cli_opt *o = cmd->opts; o->name; o++)
        k++;
    const char **v = malloc(sizeof *v * (size_t)(k + 8));
    if (!v)
        return NULL;
    k = 0;
    for (const lt_cli_opt *o = cmd->opts; o->name; o++)
        v[k++] = o->name;
    for (const lt_cli_opt *o = global_opts; o->name; o++)
        if (o->help)
            v[k++] = o->name;
    for (const lt_cli_opt *o = lt_cli_device_opts; cmd->device && o->name; o++)
        v[k++] = o->name;
    *n = k;
    return v;
}

static void unknown_option(const lt_cli_cmd *cmd, const char *arg, size_t len)
{
    char given[256], shown[512];
    snprintf(given, sizeof given, "%.*s", (int)(len < 255 ? len : 255), arg);
    lt_str_printable(given, shown, sizeof shown);
    int n = 0;
    const char **names = all_names(cmd, &n);
    const char *near = names ? lt_cli_nearest(given, names, n) : NULL;
    if (near)
        fprintf(stderr, "lantern %s: unknown option '%s' (did you mean %s?)\n", cmd->name, shown, near);
    else
        fprintf(stderr, "lantern %s: unknown option '%s' (lantern help %s lists the options)\n", cmd->name, shown,
                cmd->name);
    free(names);
}

/* "-o, --output OUT.onnx": the names of the option at rows [o, end). */
static int option_label(const lt_cli_opt *o, const lt_cli_opt *end, char *buf, size_t len)
{
    size_t n = 0;
    buf[0] = 0;
    for (const lt_cli_opt *r = o; r < end && n < len; r++)
        n += (size_t)snprintf(buf + n, len - n, "%s%s", r == o ? "" : ", ", r->name);
    if (o->arg && n < len)
        n += (size_t)snprintf(buf + n, len - n, " %s", o->arg);
    return (int)n;
}

#define HELP_WIDTH 100
#define HELP_INDENT 27 /* two spaces, the label's 24 columns, one space */

/* text from column HELP_INDENT on, wrapped at spaces to HELP_WIDTH */
static void wrapped(const char *text, FILE *f)
{
    int col = HELP_INDENT;
    while (*text) {
        const char *sp = strchr(text, ' ');
        int w = sp ? (int)(sp - text) : (int)strlen(text);
        if (col > HELP_INDENT && col + 1 + w > HELP_WIDTH) {
            fprintf(f, "\n%*s", HELP_INDENT, "");
            col = HELP_INDENT;
        } else if (col > HELP_INDENT) {
            fputc(' ', f);
            col++;
        }
        fwrite(text, 1, (size_t)w, f);
        col += w;
        text += w;
        while (*text == ' ')
            text++;
    }
    fputc('\n', f);
}

static void print_rows(const lt_cli_opt *t, FILE *f)
{
    for (const lt_cli_opt *o = t; o->name;) {
        const lt_cli_opt *end = o + 1;
        while (end->name && end->id == o->id)
            end++;
        if (o->help) {
            char label[160], text[1024];
            int n = option_label(o, end, label, sizeof label);
            fprintf(f, "  %s", label);
            if (n > HELP_INDENT - 3)
                fprintf(f, "\n%*s", HELP_INDENT, "");
            else
                fprintf(f, "%*s", HELP_INDENT - 2 - n, "");
            snprintf(text, sizeof text, "%s%s%s%s%s", o->help, o->def ? " (default: " : "", o->def ? o->def : "",
                     o->def ? ")" : "", o->flags & LT_OPT_REPEAT ? "; give the option again for each further one" : "");
            wrapped(text, f);
        }
        o = end;
    }
}

void lt_cli_help(const lt_cli_cmd *cmd, FILE *f)
{
    fprintf(f, "usage: lantern %s %s\n  %s\n\noptions:\n", cmd->name, cmd->synopsis, cmd->summary);
    print_rows(cmd->opts, f);
    if (cmd->device)
        print_rows(lt_cli_device_opts, f);
    print_rows(global_opts, f);
    if (cmd->notes)
        fprintf(f, "\n%s", cmd->notes);
}

/* --list-options: every name the parser accepts, with ARG when it takes a
 * value, one per line. */
static void list_options(const lt_cli_cmd *cmd)
{
    const lt_cli_opt *tables[3] = {cmd->opts, global_opts, cmd->device ? lt_cli_device_opts : NULL};
    for (int g = 0; g < 3 && tables[g]; g++)
        for (const lt_cli_opt *o = tables[g]; o->name; o++)
            if (o->help)
                printf("%s%s%s\n", o->name, o->arg ? " " : "", o->arg ? o->arg : "");
}

int lt_cli_dispatch(const lt_cli_cmd *cmd, int argc, char **argv)
{
    lt_cli_args a = {0, NULL, 0, NULL};
    a.items = calloc((size_t)argc + 1, sizeof *a.items);
    a.ops = calloc((size_t)argc + 1, sizeof *a.ops);
    int rc = -1, threads = 0, only_ops = 0;
    lt_cli_device dev = {NULL, 0, -1};
    if (!a.items || !a.ops) {
        fprintf(stderr, "lantern: out of memory\n");
        rc = 1;
        goto done;
    }
    for (int i = 1; i < argc && rc < 0; i++) {
        char *arg = argv[i];
        if (only_ops || arg[0] != '-' || !arg[1]) {
            a.ops[a.nops++] = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            only_ops = 1;
            continue;
        }
        char *eq = strchr(arg, '=');
        size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
        const lt_cli_opt *o = find(cmd->opts, arg, len);
        if (!o)
            o = find(global_opts, arg, len);
        if (!o && cmd->device)
            o = find(lt_cli_device_opts, arg, len);
        if (!o) {
            unknown_option(cmd, arg, len);
            rc = 2;
            break;
        }
        char *val = NULL;
        if (o->arg) {
            if (eq)
                val = eq + 1;
            else if (i + 1 < argc)
                val = argv[++i];
            else {
                fprintf(stderr, "lantern %s: %s needs a value (%s)\n", cmd->name, o->name, o->arg);
                rc = 2;
                break;
            }
        } else if (eq) {
            fprintf(stderr, "lantern %s: %s takes no value\n", cmd->name, o->name);
            rc = 2;
            break;
        }
        int64_t n;
        switch (o->id) {
        case G_HELP:
            lt_cli_help(cmd, stdout);
            rc = 0;
            break;
        case G_LIST:
            list_options(cmd);
            rc = 0;
            break;
        case G_THREADS:
            if (!lt_cli_int(o->name, val, 1, 4096, &n))
                rc = 2;
            threads = (int)n;
            break;
        default:
            if (o->id <= LT_CLI_DEVICE_IDS) {
                if (!lt_cli_device_opt(cmd, o->id, val, &dev))
                    rc = 2;
                break;
            }
            a.items[a.nitems++] = (lt_cli_item){o->id, o->name, val};
        }
    }
    if (rc < 0 && a.nops < cmd->min_ops) {
        fprintf(stderr, "lantern %s: no %s given (usage: lantern %s %s)\n", cmd->name, cmd->operand, cmd->name,
                cmd->synopsis);
        rc = 2;
    } else if (rc < 0 && cmd->max_ops >= 0 && a.nops > cmd->max_ops) {
        char shown[512];
        fprintf(stderr, "lantern %s: unexpected argument '%s' (one %s at a time)\n", cmd->name,
                lt_str_printable(a.ops[cmd->max_ops], shown, sizeof shown), cmd->operand);
        rc = 2;
    }
    if (rc < 0 && cmd->device && !lt_cli_device_apply(cmd, &dev))
        rc = 2;
    if (rc < 0) {
        if (threads)
            lt_set_num_threads(threads);
        rc = cmd->run(&a);
    }
done:
    free(a.items);
    free(a.ops);
    return rc;
}

int lt_cli_num(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= lo && v <= hi)) {
        char shown[256];
        fprintf(stderr, "lantern: %s wants a number in [%g, %g], got '%s'\n", opt, lo, hi,
                lt_str_printable(s, shown, sizeof shown));
        return 0;
    }
    *out = v;
    return 1;
}

int lt_cli_int(const char *opt, const char *s, double lo, double hi, int64_t *out)
{
    double v;
    if (!lt_cli_num(opt, s, lo, hi, &v))
        return 0;
    if (v != (double)(int64_t)v) {
        char shown[256];
        fprintf(stderr, "lantern: %s wants a whole number, got '%s'\n", opt, lt_str_printable(s, shown, sizeof shown));
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

int lt_cli_class_axis(const char *opt, const char *s, int *out)
{
    if (!strcmp(s, "1") || !strcmp(s, "-1")) {
        *out = atoi(s);
        return 1;
    }
    char shown[256];
    fprintf(stderr, "lantern: %s wants 1 (classes on axis 1, [N,C,H,W]) or -1 (the last axis), got '%s'\n", opt,
            lt_str_printable(s, shown, sizeof shown));
    return 0;
}

int lt_cli_padding(const char *opt, const char *s, lt_padding_row *out, char **owned)
{
    char shown[512];
    const char *eq = strrchr(s, '=');
    if (!eq || eq == s) {
        fprintf(stderr, "lantern: %s wants PARAM=ROW, got '%s'\n", opt, lt_str_printable(s, shown, sizeof shown));
        return 0;
    }
    int64_t row;
    if (!lt_cli_int(opt, eq + 1, -9007199254740992.0, 9007199254740992.0, &row))
        return 0;
    char *name = strndup(s, (size_t)(eq - s));
    if (!name) {
        fprintf(stderr, "lantern: out of memory\n");
        return 0;
    }
    *owned = name;
    out->param = name;
    out->row = row;
    return 1;
}

int lt_cli_pick(const char *opt, const char *s, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return 1;
        }
    char shown[256];
    fprintf(stderr, "lantern: %s: unknown value '%s' (", opt, lt_str_printable(s, shown, sizeof shown));
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%s", i ? ", " : "", names[i]);
    fprintf(stderr, ")\n");
    return 0;
}
