/* The training plot (runtime/plot.c): the SVG is well-formed XML (checked by
 * a small parser here, no outside tools), holds every series and epoch
 * marker, has evenly spaced tick labels at 1, 2, 5 x 10^k covering the
 * data, escapes the title, skips NaN/inf losses, stays small for 100k steps,
 * and an unwritable path gives LT_ERR_IO without leaving a temp file. */
#include "testutil.h"
#include "train/plot.h"
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[] = "/tmp/lt_plotXXXXXX";

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        fail_msg("%s: missing", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    b[n] = 0;
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* ---- a small XML well-formedness checker ---- */

static int name_char(int c) { return isalnum(c) || c == '-' || c == '_' || c == ':' || c == '.'; }

/* An entity or character reference at s ("&...;"); returns its length, 0 if invalid. */
static size_t entity(const char *s)
{
    static const char *const named[] = {"&lt;", "&gt;", "&amp;", "&quot;", "&apos;"};
    for (int i = 0; i < 5; i++)
        if (!strncmp(s, named[i], strlen(named[i])))
            return strlen(named[i]);
    if (s[1] == '#') {
        size_t i = 2;
        int hex = s[2] == 'x';
        i += hex;
        size_t start = i;
        while (hex ? isxdigit((unsigned char)s[i]) : isdigit((unsigned char)s[i]))
            i++;
        return i > start && s[i] == ';' ? i + 1 : 0;
    }
    return 0;
}

/* Character data or an attribute value up to `stop`: no '<', '&' only in references. */
static const char *chars(const char *s, char stop, char *why)
{
    for (; *s && *s != stop; s++) {
        if (*s == '<' && stop != '<')
            return sprintf(why, "'<' inside a value"), NULL;
        if (*s == '&') {
            size_t n = entity(s);
            if (!n)
                return sprintf(why, "bad reference at '%.12s'", s), NULL;
            s += n - 1;
        }
    }
    return s;
}

/* Valid UTF-8 without control characters other than tab, CR and newline. */
static int text_ok(const unsigned char *u)
{
    while (*u) {
        int n = *u < 0x80 ? 1 : (*u & 0xe0) == 0xc0 ? 2 : (*u & 0xf0) == 0xe0 ? 3 : (*u & 0xf8) == 0xf0 ? 4 : 0;
        if (!n || (*u < 0x20 && *u != '\t' && *u != '\n' && *u != '\r') || (n == 2 && *u < 0xc2))
            return 0;
        for (int i = 1; i < n; i++)
            if ((u[i] & 0xc0) != 0x80)
                return 0;
        u += n;
    }
    return 1;
}

/* 1 when s is one well-formed element (after an optional declaration),
 * with matching tags; *nelem counts the elements. */
static int xml_ok(const char *s, char *why, int *nelem)
{
    char stack[64][64];
    int depth = 0, roots = 0;
    *nelem = 0;
    if (!text_ok((const unsigned char *)s))
        return sprintf(why, "not UTF-8 text"), 0;
    if (!strncmp(s, "<?xml", 5)) {
        const char *e = strstr(s, "?>");
        if (!e)
            return sprintf(why, "unterminated declaration"), 0;
        s = e + 2;
    }
    while (*s) {
        if (*s != '<') {
            if (!depth && !isspace((unsigned char)*s))
                return sprintf(why, "text outside the root: '%.12s'", s), 0;
            s = chars(s, '<', why);
            if (!s)
                return 0;
            continue;
        }
        if (!strncmp(s, "<!--", 4)) {
            const char *e = strstr(s, "-->");
            if (!e)
                return sprintf(why, "unterminated comment"), 0;
            s = e + 3;
            continue;
        }
        int closing = s[1] == '/';
        s += 1 + closing;
        const char *n0 = s;
        while (name_char((unsigned char)*s))
            s++;
        size_t nl = (size_t)(s - n0);
        if (!nl || nl >= 64)
            return sprintf(why, "bad tag name at '%.12s'", n0), 0;
        if (closing) {
            while (isspace((unsigned char)*s))
                s++;
            if (*s != '>' || !depth || strlen(stack[depth - 1]) != nl || strncmp(stack[depth - 1], n0, nl))
                return sprintf(why, "</%.*s> does not close <%s>", (int)nl, n0, depth ? stack[depth - 1] : ""), 0;
            depth--;
            s++;
            continue;
        }
        if (!depth && roots++)
            return sprintf(why, "a second root element <%.*s>", (int)nl, n0), 0;
        ++*nelem;
        /* attributes: name="value" or name='value', each name once */
        char seen[32][64];
        int nseen = 0;
        for (;;) {
            const char *ws = s;
            while (isspace((unsigned char)*s))
                s++;
            if (*s == '>' || !strncmp(s, "/>", 2))
                break;
            if (s == ws)
                return sprintf(why, "no space before attribute at '%.12s'", s), 0;
            const char *a0 = s;
            while (name_char((unsigned char)*s))
                s++;
            size_t al = (size_t)(s - a0);
            if (!al || al >= 64 || *s != '=' || (s[1] != '"' && s[1] != '\''))
                return sprintf(why, "bad attribute at '%.16s'", a0), 0;
            for (int i = 0; i < nseen; i++)
                if (strlen(seen[i]) == al && !strncmp(seen[i], a0, al))
                    return sprintf(why, "attribute %.*s twice", (int)al, a0), 0;
            if (nseen < 32)
                snprintf(seen[nseen++], 64, "%.*s", (int)al, a0);
            char q = s[1];
            s = chars(s + 2, q, why);
            if (!s)
                return 0;
            if (*s != q)
                return sprintf(why, "unterminated attribute value"), 0;
            s++;
        }
        if (*s == '/') {
            s += 2;
            continue;
        }
        if (depth == 64)
            return sprintf(why, "too deep"), 0;
        snprintf(stack[depth++], 64, "%.*s", (int)nl, n0);
        s++;
    }
    if (depth)
        return sprintf(why, "<%s> not closed", stack[depth - 1]), 0;
    return roots == 1 ? 1 : (sprintf(why, "no root element"), 0);
}

static void assert_xml(const char *svg)
{
    char why[256];
    int n;
    if (!xml_ok(svg, why, &n))
        fail_msg("not well-formed: %s", why);
    assert_true(n > 20);
    assert_non_null(strstr(svg, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
}

/* ---- reading the picture back ---- */

static int count(const char *s, const char *sub)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, sub)); p += strlen(sub))
        n++;
    return n;
}

/* The section of svg from `from` to `to` (a copy). */
static char *section(const char *svg, const char *from, const char *to)
{
    const char *a = strstr(svg, from);
    assert_non_null(a);
    const char *b = strstr(a, to);
    assert_non_null(b);
    char *s = malloc((size_t)(b - a) + 1);
    assert_non_null(s);
    memcpy(s, a, (size_t)(b - a));
    s[b - a] = 0;
    return s;
}

/* Values of the <text class="cls" ...>LABEL</text> tick labels, in order; "20k", "3M" read as numbers. */
static int ticks(const char *s, const char *cls, double *v, int max)
{
    char key[64];
    snprintf(key, sizeof key, "class=\"%s\"", cls);
    int n = 0;
    for (const char *p = s; (p = strstr(p, key)) && n < max; p++) {
        const char *t = strchr(p, '>');
        assert_non_null(t);
        char *end;
        double x = strtod(t + 1, &end);
        if (*end == 'k')
            x *= 1e3, end++;
        else if (*end == 'M')
            x *= 1e6, end++;
        if (end == t + 1 || strncmp(end, "</text>", 7))
            fail_msg("tick label '%.20s' is not a number", t + 1);
        v[n++] = x;
    }
    return n;
}

/* At least 3 labels, evenly spaced by m x 10^k with m in {1, 2, 5}, covering [lo, hi]. */
static void assert_nice_ticks(const double *v, int n, double lo, double hi, const char *what)
{
    if (n < 3 || n > 12)
        fail_msg("%s: %d tick labels", what, n);
    double d = v[1] - v[0];
    assert_true(d > 0);
    for (int i = 2; i < n; i++)
        if (fabs(v[i] - v[i - 1] - d) > 1e-9 * fabs(d) + 1e-12)
            fail_msg("%s: ticks not evenly spaced (%g, %g, %g)", what, v[i - 2], v[i - 1], v[i]);
    double m = d / pow(10, floor(log10(d) + 1e-9));
    if (fabs(m - 1) > 1e-6 && fabs(m - 2) > 1e-6 && fabs(m - 5) > 1e-6)
        fail_msg("%s: tick spacing %g is not 1, 2 or 5 x 10^k", what, d);
    for (int i = 0; i < n; i++)
        if (fabs(v[i] / d - round(v[i] / d)) > 1e-6)
            fail_msg("%s: tick %g is not a multiple of %g", what, v[i], d);
    if (!(v[0] <= lo && v[n - 1] >= hi))
        fail_msg("%s: ticks %g..%g do not cover %g..%g", what, v[0], v[n - 1], lo, hi);
}

/* The y pixel coordinates of a polyline's points. */
static int poly_ys(const char *svg, const char *cls, double *ys, int max)
{
    char key[64];
    snprintf(key, sizeof key, "<polyline class=\"%s\"", cls);
    const char *p = strstr(svg, key);
    assert_non_null(p);
    p = strstr(p, "points=\"");
    assert_non_null(p);
    p += 8;
    int n = 0;
    while (*p != '"') {
        char *end;
        strtod(p, &end);
        assert_true(*end == ',');
        double y = strtod(end + 1, &end);
        if (n < max)
            ys[n] = y;
        n++;
        p = end;
        while (*p == ' ')
            p++;
    }
    return n;
}

/* ---- tests ---- */

static uint64_t rng_state;
static double urand(void) /* [0, 1) */
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng_state >> 11) * 0x1.0p-53;
}

/* n steps of a decaying noisy loss (2.6 down to about 0.3), an epoch every
 * n/epochs steps with accuracy rising from 0.62 by 0.08 per epoch (capped). */
static lt_plot *synthetic(int64_t n, int epochs, uint64_t seed, double *lmin, double *lmax)
{
    lt_plot *p = lt_plot_new();
    assert_non_null(p);
    rng_state = seed;
    *lmin = INFINITY;
    *lmax = -INFINITY;
    double sum = 0;
    int64_t per = n / epochs, in_epoch = 0;
    for (int64_t s = 1; s <= n; s++) {
        double loss = 2.3 * exp(-3.0 * (double)s / (double)n) + 0.3 + 0.2 * (urand() - 0.5);
        lt_plot_step(p, s, loss);
        sum += loss;
        in_epoch++;
        if (s % per == 0) {
            int e = (int)(s / per);
            double train = sum / (double)in_epoch, test = train * 1.05, acc = fmin(0.62 + 0.08 * (e - 1), 0.95);
            lt_plot_epoch(p, s, e, train, test, acc);
            *lmin = fmin(*lmin, fmin(train, test));
            *lmax = fmax(*lmax, fmax(train, test));
            sum = 0;
            in_epoch = 0;
        }
    }
    return p;
}

static char *write_and_read(lt_plot *p, const char *name, const char *title, size_t *len)
{
    char path[256];
    lt_err err;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (lt_plot_write(p, path, title, &err) != LT_OK)
        fail_msg("%s", err.msg);
    return slurp(path, len);
}

static void small_run(void **state)
{
    (void)state;
    double lmin, lmax;
    lt_plot *p = synthetic(1200, 3, 42, &lmin, &lmax);
    /* non-finite losses are skipped, not drawn */
    lt_plot_step(p, 1201, NAN);
    lt_plot_step(p, 1202, INFINITY);
    lt_plot_step(p, 1203, -INFINITY);
    size_t len;
    char *svg = write_and_read(p, "small.svg", "mlp <3> & \"friends\" 'x'", &len);
    assert_xml(svg);
    /* the title, escaped, in the <title> and on the canvas */
    assert_int_equal(count(svg, "mlp &lt;3&gt; &amp; &quot;friends&quot; &apos;x&apos;"), 2);
    assert_null(strstr(svg, "<3>"));
    for (const char *bad = svg; *bad; bad++)
        if (!strncasecmp(bad, "nan", 3) || !strncasecmp(bad, "inf", 3))
            fail_msg("non-finite number in the file: '%.20s'", bad);
    /* the series: step line, running mean, three markers each, two panels */
    assert_int_equal(count(svg, "<polyline class=\"loss-step\""), 1);
    assert_int_equal(count(svg, "<polyline class=\"loss-smooth\""), 1);
    assert_int_equal(count(svg, "class=\"epoch-train\""), 3);
    assert_int_equal(count(svg, "class=\"epoch-test\""), 3);
    assert_int_equal(count(svg, "class=\"epoch-accuracy\""), 3);
    assert_non_null(strstr(svg, "id=\"loss-panel\""));
    assert_non_null(strstr(svg, "id=\"accuracy-panel\""));
    assert_non_null(strstr(svg, "class=\"legend\""));
    assert_non_null(strstr(svg, ">loss</text>"));
    assert_non_null(strstr(svg, ">test accuracy</text>"));
    assert_non_null(strstr(svg, ">training step</text>"));
    assert_non_null(strstr(svg, "test accuracy 0.7800")); /* the summary line: last epoch */
    /* 1200 steps fit in the panel's ~790 pixel columns at two points each */
    double ys[4000];
    int n = poly_ys(svg, "loss-step", ys, 4000);
    assert_true(n > 700 && n <= 1200);
    /* the running mean falls: its end lies lower on the canvas (larger y) */
    n = poly_ys(svg, "loss-smooth", ys, 4000);
    assert_true(n > 100 && ys[n - 1] > ys[0] + 100);
    /* tick labels */
    char *loss = section(svg, "id=\"loss-panel\"", "id=\"accuracy-panel\"");
    const char *acc = strstr(svg, "id=\"accuracy-panel\"");
    double v[32];
    int k = ticks(loss, "tick-y", v, 32);
    assert_nice_ticks(v, k, lmin, lmax, "loss axis");
    k = ticks(loss, "tick-x", v, 32);
    assert_nice_ticks(v, k, 1, 1200, "step axis");
    k = ticks(acc, "tick-y", v, 32);
    assert_nice_ticks(v, k, 0.62, 0.78, "accuracy axis");
    assert_true(v[0] >= 0 && v[k - 1] <= 1);
    assert_true(v[k - 1] - v[0] < 0.6); /* zoomed to the data, not all of 0..1 */
    k = ticks(acc, "tick-x", v, 32);
    assert_nice_ticks(v, k, 1, 1200, "accuracy panel's step axis");
    free(loss);
    free(svg);
    lt_plot_free(p);
}

/* 100k steps: the per-step line is thinned to the panel's pixel columns */
static void many_steps_stay_small(void **state)
{
    (void)state;
    double lmin, lmax;
    lt_plot *p = synthetic(100000, 50, 7, &lmin, &lmax);
    size_t len;
    char *svg = write_and_read(p, "big.svg", "100k steps", &len);
    print_message("100k steps, 50 epochs: %zu bytes\n", len);
    assert_true(len < 300 * 1024);
    assert_xml(svg);
    double ys[8];
    assert_true(poly_ys(svg, "loss-step", ys, 8) <= 2 * 800);
    assert_true(poly_ys(svg, "loss-smooth", ys, 8) <= 2 * 800);
    assert_int_equal(count(svg, "class=\"epoch-test\""), 50);
    assert_non_null(strstr(svg, "mean of 1000 steps")); /* the window: 1% of the steps */
    double v[32];
    int k = ticks(svg, "tick-x", v, 32);
    assert_nice_ticks(v, k / 2, 1, 100000, "step axis");
    assert_non_null(strstr(svg, ">20k</text>"));
    free(svg);
    lt_plot_free(p);
    /* and 2000 epochs of 50 steps: lines without markers */
    p = synthetic(100000, 2000, 8, &lmin, &lmax);
    svg = write_and_read(p, "epochs.svg", "2000 epochs", &len);
    print_message("100k steps, 2000 epochs: %zu bytes\n", len);
    assert_true(len < 300 * 1024);
    assert_xml(svg);
    assert_non_null(strstr(svg, "class=\"epoch-test-line\""));
    free(svg);
    lt_plot_free(p);
}

/* No data, one step, a title XML cannot hold as it is: still a valid file */
static void degenerate_inputs(void **state)
{
    (void)state;
    lt_plot *p = lt_plot_new();
    assert_non_null(p);
    size_t len;
    char *svg = write_and_read(p, "empty.svg", NULL, &len);
    assert_xml(svg);
    assert_non_null(strstr(svg, "no test accuracy"));
    free(svg);
    lt_plot_step(p, 5, 1.25);
    lt_plot_epoch(p, 5, 1, NAN, NAN, NAN);
    svg = write_and_read(p, "one.svg", "bell\a tab\t \xff\xfe broken \xe2\x82 euro \xe2\x82\xac", &len);
    assert_xml(svg);
    assert_non_null(strstr(svg, "euro \xe2\x82\xac"));
    double v[32];
    int k = ticks(svg, "tick-x", v, 32);
    assert_nice_ticks(v, k / 2, 5, 5, "one step's axis");
    free(svg);
    lt_plot_free(p);
}

static int temp_files_in(const char *d)
{
    DIR *dd = opendir(d);
    assert_non_null(dd);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(dd)))
        n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(dd);
    return n;
}

static void unwritable_path(void **state)
{
    (void)state;
    double lmin, lmax;
    lt_plot *p = synthetic(300, 3, 3, &lmin, &lmax);
    lt_err err;
    assert_int_equal(lt_plot_write(p, "/nonexistent-lt-dir/plot.svg", "t", &err), LT_ERR_IO);
    assert_non_null(strstr(err.msg, "/nonexistent-lt-dir/plot.svg"));
    /* the target is a folder that holds a file: the temp file is written,
     * the rename fails, and the temp file goes away */
    char sub[256], inner[300];
    snprintf(sub, sizeof sub, "%s/taken.svg", dir);
    snprintf(inner, sizeof inner, "%s/keep", sub);
    assert_int_equal(mkdir(sub, 0700), 0);
    FILE *f = fopen(inner, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(lt_plot_write(p, sub, "t", &err), LT_ERR_IO);
    assert_non_null(strstr(err.msg, sub));
    assert_int_equal(temp_files_in(dir), 0);
    /* a good write over an existing file replaces it and leaves no temp file */
    char good[256];
    snprintf(good, sizeof good, "%s/again.svg", dir);
    f = fopen(good, "w");
    assert_non_null(f);
    fputs("old", f);
    fclose(f);
    assert_int_equal(lt_plot_write(p, good, "t", &err), LT_OK);
    size_t len;
    char *svg = slurp(good, &len);
    assert_xml(svg);
    free(svg);
    assert_int_equal(temp_files_in(dir), 0);
    lt_plot_free(p);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(small_run),
        cmocka_unit_test(many_steps_stay_small),
        cmocka_unit_test(degenerate_inputs),
        cmocka_unit_test(unwritable_path),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
