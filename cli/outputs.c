/* Checks on what a command is about to write, made before any work is done:
 * the target of -o / --plot / --log (a file lantern may create or replace,
 * never a folder, a device or a symbolic link it would follow or clobber;
 * never a file the command reads, nor the external-data file beside -o),
 * the output folder, and the .npy names that parameters and outputs map to.
 * Each failure prints one line and the caller exits 2. */
#include "cli.h"
#include "importer/export_external.h"
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int lt_cli_out_file(const char *path, const char *opt, int stream_ok)
{
    char shown[512], dir[PATH_MAX];
    lt_str_printable(path, shown, sizeof shown);
    size_t len = strlen(path);
    if (!len || path[len - 1] == '/') {
        fprintf(stderr, "lantern: %s '%s': names a folder, not a file\n", opt, shown);
        return 0;
    }
    struct stat st;
    if (lstat(path, &st) == 0) {
        const char *why = S_ISLNK(st.st_mode)  ? "is a symbolic link (lantern does not write through or replace one)"
                          : S_ISDIR(st.st_mode) ? "is a folder"
                          : S_ISREG(st.st_mode) || (stream_ok && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)))
                              ? NULL
                              : "is not a regular file";
        if (why) {
            fprintf(stderr, "lantern: %s %s: %s\n", opt, shown, why);
            return 0;
        }
        if (!S_ISREG(st.st_mode))
            return 1; /* a stream written in place: its folder is not involved */
    } else if (errno != ENOENT) {
        fprintf(stderr, "lantern: %s %s: %s\n", opt, shown, strerror(errno));
        return 0;
    }
    if (len >= sizeof dir) {
        fprintf(stderr, "lantern: %s %s: path too long\n", opt, shown);
        return 0;
    }
    memcpy(dir, path, len + 1);
    const char *d = dirname(dir);
    struct stat ds;
    int e = 0;
    if (stat(d, &ds) != 0)
        e = errno;
    else if (!S_ISDIR(ds.st_mode))
        e = ENOTDIR;
    else if (access(d, W_OK | X_OK) != 0)
        e = errno;
    if (e) {
        char dshown[512];
        fprintf(stderr, "lantern: %s %s: cannot write to folder %s: %s\n", opt, shown,
                lt_str_printable(d, dshown, sizeof dshown), strerror(e));
        return 0;
    }
    return 1;
}

int lt_cli_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    int ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
    if (ea || eb)
        return ea && eb && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char ca[PATH_MAX], cb[PATH_MAX], da[PATH_MAX], db[PATH_MAX];
    if (strlen(a) >= sizeof ca || strlen(b) >= sizeof cb)
        return 0;
    strcpy(ca, a);
    strcpy(cb, b);
    if (strcmp(basename(ca), basename(cb)) != 0)
        return 0;
    strcpy(ca, a);
    strcpy(cb, b);
    return realpath(dirname(ca), da) && realpath(dirname(cb), db) && !strcmp(da, db);
}

int lt_cli_out_distinct(const char *path, const char *opt, const char *const *others, const char *const *what, int n)
{
    for (int i = 0; i < n; i++)
        if (others[i] && lt_cli_same_file(path, others[i])) {
            char a[512], b[512];
            fprintf(stderr, "lantern: %s %s is also %s%s%s; give %s another file\n", opt,
                    lt_str_printable(path, a, sizeof a), what[i], strcmp(path, others[i]) ? " " : "",
                    strcmp(path, others[i]) ? lt_str_printable(others[i], b, sizeof b) : "", opt);
            return 0;
        }
    return 1;
}

int lt_cli_out_data_distinct(const char *out, const char *opt, const char *const *others, const char *const *what,
                             int n)
{
    char data[PATH_MAX + 16];
    if (!lt_export_data_path(out, data, sizeof data))
        return 1;
    for (int i = 0; i < n; i++)
        if (others[i] && lt_cli_same_file(data, others[i])) {
            char a[512], b[512], c[512];
            fprintf(stderr, "lantern: %s %s would write its external data to %s, which is also %s%s%s; give %s "
                    "another file\n", opt, lt_str_printable(out, a, sizeof a), lt_str_printable(data, b, sizeof b),
                    what[i], strcmp(data, others[i]) ? " " : "",
                    strcmp(data, others[i]) ? lt_str_printable(others[i], c, sizeof c) : "", opt);
            return 0;
        }
    return 1;
}

int lt_cli_out_dir(const char *dir, const char *opt, int create)
{
    char shown[512];
    lt_str_printable(dir, shown, sizeof shown);
    if (create && mkdir(dir, 0777) != 0 && errno != EEXIST) {
        fprintf(stderr, "lantern: %s %s: cannot create folder: %s\n", opt, shown, strerror(errno));
        return 0;
    }
    struct stat st;
    if (stat(dir, &st) != 0) {
        fprintf(stderr, "lantern: %s %s: %s\n", opt, shown, strerror(errno));
        return 0;
    }
    if (!S_ISDIR(st.st_mode)) {
        fprintf(stderr, "lantern: %s %s: not a folder\n", opt, shown);
        return 0;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        fprintf(stderr, "lantern: %s %s: cannot write there: %s\n", opt, shown, strerror(errno));
        return 0;
    }
    return 1;
}

typedef struct named {
    char file[1024];
    const char *name;
} named;

static int by_file(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->name, y->name);
}

int lt_cli_npy_names_distinct(const char *const *names, int n, const char *what, const char *dir)
{
    named *v = calloc((size_t)n + 1, sizeof *v);
    if (!v) {
        fprintf(stderr, "lantern: out of memory\n");
        return 0;
    }
    for (int i = 0; i < n; i++) {
        lt_cli_sanitize(names[i], v[i].file, sizeof v[i].file);
        v[i].name = names[i];
    }
    qsort(v, (size_t)n, sizeof *v, by_file);
    int ok = 1;
    for (int i = 0; ok && i + 1 < n; i++)
        if (!strcmp(v[i].file, v[i + 1].file)) {
            char a[256], b[256], f[256], d[512];
            fprintf(stderr, "lantern: %s: %s '%s' and '%s' would both be written as %s.npy; rename one in the model\n",
                    lt_str_printable(dir, d, sizeof d), what, lt_str_printable(v[i].name, a, sizeof a),
                    lt_str_printable(v[i + 1].name, b, sizeof b), lt_str_printable(v[i].file, f, sizeof f));
            ok = 0;
        }
    free(v);
    return ok;
}

int lt_cli_input_once(const char *const *names, int n, const char *name, const char *cmd, const char *opt)
{
    for (int i = 0; i < n; i++)
        if (names[i] && !strcmp(names[i], name)) {
            char shown[256];
            fprintf(stderr, "lantern %s: %s '%s' is given twice\n", cmd, opt, lt_str_printable(name, shown, sizeof shown));
            return 0;
        }
    return 1;
}
