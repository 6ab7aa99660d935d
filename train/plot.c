/* Training curves as one self-contained SVG: a loss panel (every step's
 * batch loss drawn faintly, a running mean over about 1% of the steps, each
 * epoch's train and test loss as markers) above a test-accuracy panel, on a
 * shared step axis with ticks at 1, 2, 5 x 10^k. Lines keep only the lowest
 * and highest point of each pixel column, so the file stays small however
 * many steps there are. */
#include "plot.h"
#include "../importer/atomic_file.h"
#include "../ir/ir.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct step_pt {
    int64_t step;
    double loss;
} step_pt;

typedef struct epoch_pt {
    int64_t step;
    int epoch;
    double train, test, acc;
    double val, val_acc; /* validation loss and accuracy (NAN: none) */
} epoch_pt;

struct lt_plot {
    step_pt *steps;
    size_t nsteps, cap_steps;
    epoch_pt *epochs;
    size_t nepochs, cap_epochs;
    int has_val; /* some epoch has validation figures */
    int oom; /* an append failed; lt_plot_write reports it */
};

/* Canvas layout in SVG user units (pixels at 100% zoom). */
#define PLOT_W 900
#define PLOT_H 720
#define PLOT_X0 80.0  /* plot areas' left and right edges */
#define PLOT_X1 870.0
#define LOSS_Y0 80.0  /* loss panel top and bottom */
#define LOSS_Y1 390.0
#define ACC_Y0 450.0  /* accuracy panel */
#define ACC_Y1 640.0

#define PLOT_MAX_MARKERS 300 /* per series */

#define C_LOSS "#1f77b4"
#define C_TRAIN "#ff7f0e"
#define C_TEST "#2ca02c"
#define C_ACC "#9467bd"
#define C_VAL "#d62728"

lt_plot *lt_plot_new(void) { return calloc(1, sizeof(lt_plot)); }

void lt_plot_free(lt_plot *p)
{
    if (!p)
        return;
    free(p->steps);
    free(p->epochs);
    free(p);
}

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return 1;
    size_t c = *cap ? *cap : 256;
    while (c < need)
        c *= 2;
    if (c > SIZE_MAX / elem)
        return 0;
    void *q = realloc(*arr, c * elem);
    if (!q)
        return 0;
    *arr = q;
    *cap = c;
    return 1;
}

void lt_plot_step(lt_plot *p, int64_t global_step, double loss)
{
    if (!p || !isfinite(loss))
        return;
    if (!grow((void **)&p->steps, &p->cap_steps, p->nsteps + 1, sizeof *p->steps)) {
        p->oom = 1;
        return;
    }
    p->steps[p->nsteps++] = (step_pt){global_step, loss};
}

void lt_plot_epoch(lt_plot *p, int64_t global_step, int epoch, double train_loss, double test_loss,
                   double test_accuracy)
{
    if (!p)
        return;
    if (!grow((void **)&p->epochs, &p->cap_epochs, p->nepochs + 1, sizeof *p->epochs)) {
        p->oom = 1;
        return;
    }
    p->epochs[p->nepochs++] = (epoch_pt){global_step, epoch, train_loss, test_loss, test_accuracy, NAN, NAN};
}

void lt_plot_validation(lt_plot *p, double val_loss, double val_accuracy)
{
    if (!p || !p->nepochs)
        return;
    p->epochs[p->nepochs - 1].val = val_loss;
    p->epochs[p->nepochs - 1].val_acc = val_accuracy;
    p->has_val = 1;
}

/* ---- text output ---- */

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int bad; /* out of memory: the rest is dropped */
} sbuf;

static void out(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(sbuf *b, const char *fmt, ...)
{
    while (!b->bad) {
        va_list ap;
        va_start(ap, fmt);
        size_t room = b->cap - b->n;
        int k = vsnprintf(b->p + b->n, room, fmt, ap);
        va_end(ap);
        if (k < 0) {
            b->bad = 1;
            return;
        }
        if ((size_t)k < room) {
            b->n += (size_t)k;
            return;
        }
        size_t c = b->cap * 2;
        while (c < b->n + (size_t)k + 1)
            c *= 2;
        char *q = realloc(b->p, c);
        if (!q) {
            b->bad = 1;
            return;
        }
        b->p = q;
        b->cap = c;
    }
}

/* Length of the valid UTF-8 sequence at u that XML allows, 0 if none. */
static int utf8_len(const unsigned char *u)
{
    int n = u[0] >= 0xc2 && u[0] <= 0xdf ? 2 : u[0] >= 0xe0 && u[0] <= 0xef ? 3 : u[0] >= 0xf0 && u[0] <= 0xf4 ? 4 : 0;
    for (int i = 1; i < n; i++)
        if ((u[i] & 0xc0) != 0x80)
            return 0;
    if ((n == 3 && u[0] == 0xe0 && u[1] < 0xa0) || (n == 3 && u[0] == 0xed && u[1] >= 0xa0) || /* overlong, surrogate */
        (n == 3 && u[0] == 0xef && u[1] == 0xbf && u[2] >= 0xbe) ||                          /* U+FFFE, U+FFFF */
        (n == 4 && u[0] == 0xf0 && u[1] < 0x90) || (n == 4 && u[0] == 0xf4 && u[1] >= 0x90)) /* overlong, > U+10FFFF */
        return 0;
    return n;
}

/* s as XML character data; what XML cannot hold (control characters,
 * broken UTF-8) becomes '?'. */
static void out_text(sbuf *b, const char *s)
{
    const unsigned char *u = (const unsigned char *)s;
    while (*u) {
        unsigned c = *u;
        int len = 1;
        if (c == '<')
            out(b, "&lt;");
        else if (c == '>')
            out(b, "&gt;");
        else if (c == '&')
            out(b, "&amp;");
        else if (c == '"')
            out(b, "&quot;");
        else if (c == '\'')
            out(b, "&apos;");
        else if (c < 0x20 || c == 0x7f)
            out(b, "?");
        else if (c < 0x80)
            out(b, "%c", (char)c);
        else if ((len = utf8_len(u)) > 0)
            out(b, "%.*s", len, (const char *)u);
        else {
            out(b, "?");
            len = 1;
        }
        u += len;
    }
}

/* ---- axes ---- */

typedef struct axis {
    double lo, hi, step;
    int decimals; /* for the tick labels */
} axis;

/* The smallest of 1, 2, 5 x 10^k that is >= x (x > 0). */
static double nice_step(double x)
{
    double e = pow(10, floor(log10(x))), f = x / e;
    return (f <= 1 + 1e-9 ? 1 : f <= 2 + 1e-9 ? 2 : f <= 5 + 1e-9 ? 5 : 10) * e;
}

/* About `target` intervals over [lo, hi], widened to whole steps. */
static axis nice_axis(double lo, double hi, int target, double min_step)
{
    if (!(hi > lo)) {
        double pad = fabs(lo) > 1e-12 ? fabs(lo) * 0.1 : 0.5;
        lo -= pad;
        hi += pad;
    }
    double step = nice_step((hi - lo) / target);
    if (step < min_step)
        step = min_step;
    axis a = {floor(lo / step + 1e-9) * step, ceil(hi / step - 1e-9) * step, step, 0};
    if (!(a.hi > a.lo))
        a.hi = a.lo + step;
    double lg = floor(log10(step) + 1e-9);
    a.decimals = lg < 0 ? (int)(lg < -15 ? 15 : -lg) : 0;
    return a;
}

static int axis_nticks(const axis *a) { return (int)floor((a->hi - a->lo) / a->step + 1e-6) + 1; }

static double axis_tick(const axis *a, int i)
{
    double v = a->lo + a->step * i;
    return fabs(v) < a->step * 1e-9 ? 0 : v; /* no "-0.0" */
}

/* Step counts in thousands or millions once the ticks are that far apart. */
static void tick_label(const axis *a, double v, int is_steps, char *buf, size_t len)
{
    if (is_steps && v == 0)
        snprintf(buf, len, "0");
    else if (is_steps && a->step >= 1e6)
        snprintf(buf, len, "%gM", v / 1e6);
    else if (is_steps && a->step >= 1e3)
        snprintf(buf, len, "%gk", v / 1e3);
    else
        snprintf(buf, len, "%.*f", a->decimals, v);
}

/* A panel: its area on the canvas and the axes that map into it. */
typedef struct frame {
    double x0, x1, y0, y1; /* y0 top */
    axis ax, ay;
} frame;

static double map_x(const frame *f, double v)
{
    return f->x0 + (v - f->ax.lo) / (f->ax.hi - f->ax.lo) * (f->x1 - f->x0);
}

/* Clamped a little outside the panel (which clips) so that an outlier does
 * not print as a huge coordinate. */
static double map_y(const frame *f, double v)
{
    double y = f->y1 - (v - f->ay.lo) / (f->ay.hi - f->ay.lo) * (f->y1 - f->y0);
    return y < f->y0 - 20 ? f->y0 - 20 : y > f->y1 + 20 ? f->y1 + 20 : y;
}

/* Grid, frame, ticks, tick labels and the y title of one panel. */
static void out_frame(sbuf *b, const frame *f, const char *ytitle)
{
    char lab[64];
    out(b, "<g stroke=\"#e4e4e4\" stroke-width=\"1\">\n");
    for (int i = 0; i < axis_nticks(&f->ay); i++) {
        double y = map_y(f, axis_tick(&f->ay, i));
        out(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", f->x0, y, f->x1, y);
    }
    for (int i = 0; i < axis_nticks(&f->ax); i++) {
        double x = map_x(f, axis_tick(&f->ax, i));
        out(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>\n", x, f->y0, x, f->y1);
    }
    out(b, "</g>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" stroke=\"#444\"/>\n", f->x0,
        f->y0, f->x1 - f->x0, f->y1 - f->y0);
    out(b, "<g font-size=\"12\" fill=\"#333\">\n");
    for (int i = 0; i < axis_nticks(&f->ay); i++) {
        double v = axis_tick(&f->ay, i), y = map_y(f, v);
        tick_label(&f->ay, v, 0, lab, sizeof lab);
        out(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>", f->x0 - 5, y, f->x0, y);
        out(b, "<text class=\"tick-y\" x=\"%.1f\" y=\"%.1f\" dy=\"0.35em\" text-anchor=\"end\">%s</text>\n", f->x0 - 8,
            y, lab);
    }
    for (int i = 0; i < axis_nticks(&f->ax); i++) {
        double v = axis_tick(&f->ax, i), x = map_x(f, v);
        tick_label(&f->ax, v, 1, lab, sizeof lab);
        out(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#444\"/>", x, f->y1, x, f->y1 + 5);
        out(b, "<text class=\"tick-x\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n", x, f->y1 + 19, lab);
    }
    double ym = (f->y0 + f->y1) / 2, xt = f->x0 - 58;
    out(b, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" font-size=\"14\" text-anchor=\"middle\" "
           "transform=\"rotate(-90 %.1f %.1f)\">%s</text>\n</g>\n", xt, ym, xt, ym, ytitle);
}

/* A line through (x[i], y[i]) keeping, per pixel column, the lowest and the
 * highest point in step order: a spike stays visible, the size stays bounded. */
static void out_columns(sbuf *b, const frame *f, const double *x, const double *y, size_t n, const char *cls,
                        const char *style)
{
    out(b, "<polyline class=\"%s\" fill=\"none\" %s points=\"", cls, style);
    for (size_t i = 0; i < n;) {
        double col = floor(map_x(f, x[i]));
        size_t lo = i, hi = i, j = i;
        for (; j < n && floor(map_x(f, x[j])) == col; j++) {
            if (y[j] < y[lo])
                lo = j;
            if (y[j] > y[hi])
                hi = j;
        }
        size_t a = lo < hi ? lo : hi, c = lo < hi ? hi : lo;
        out(b, "%.1f,%.1f ", map_x(f, x[a]), map_y(f, y[a]));
        if (c != a)
            out(b, "%.1f,%.1f ", map_x(f, x[c]), map_y(f, y[c]));
        i = j;
    }
    out(b, "\"/>\n");
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- the picture ---- */

typedef struct series {
    double *x, *y, *smooth; /* per step */
    size_t n, window;
} series;

/* The steps as arrays, with a centered running mean over 1% of them
 * (shorter at the ends). */
static int make_series(const lt_plot *p, series *s)
{
    size_t n = p->nsteps;
    s->n = n;
    s->window = n / 100 > 1 ? n / 100 : 1;
    s->x = malloc(sizeof(double) * (n + 1));
    s->y = malloc(sizeof(double) * (n + 1));
    s->smooth = malloc(sizeof(double) * (n + 1));
    double *sum = malloc(sizeof(double) * (n + 1));
    if (!s->x || !s->y || !s->smooth || !sum) {
        free(sum);
        return 0;
    }
    sum[0] = 0;
    for (size_t i = 0; i < n; i++) {
        s->x[i] = (double)p->steps[i].step;
        s->y[i] = p->steps[i].loss;
        sum[i + 1] = sum[i] + s->y[i];
    }
    size_t half = s->window / 2;
    for (size_t i = 0; i < n; i++) {
        size_t a = i >= half ? i - half : 0, c = i + half + 1 < n ? i + half + 1 : n;
        s->smooth[i] = (sum[c] - sum[a]) / (double)(c - a);
    }
    free(sum);
    return 1;
}

/* The loss axis: from the lowest value to the 99.5th percentile of the step
 * losses (an early spike would flatten everything else), or higher where
 * the running mean or an epoch marker is; from 0 when that is close. */
static int loss_range(const lt_plot *p, const series *s, double *lo, double *hi)
{
    double mn = INFINITY, mx = -INFINITY;
    if (s->n) {
        double *sorted = malloc(sizeof(double) * s->n);
        if (!sorted)
            return 0;
        memcpy(sorted, s->y, sizeof(double) * s->n);
        qsort(sorted, s->n, sizeof(double), cmp_double);
        mn = sorted[0];
        mx = sorted[(size_t)((double)(s->n - 1) * 0.995)];
        free(sorted);
        for (size_t i = 0; i < s->n; i++)
            mx = s->smooth[i] > mx ? s->smooth[i] : mx;
    }
    for (size_t e = 0; e < p->nepochs; e++) {
        const double v[3] = {p->epochs[e].train, p->epochs[e].test, p->epochs[e].val};
        for (int k = 0; k < 3; k++)
            if (isfinite(v[k])) {
                mn = v[k] < mn ? v[k] : mn;
                mx = v[k] > mx ? v[k] : mx;
            }
    }
    if (!(mn <= mx)) {
        mn = 0;
        mx = 1;
    }
    if (mn >= 0 && mn < 0.25 * mx)
        mn = 0;
    *lo = mn;
    *hi = mx;
    return 1;
}

static axis step_axis(const lt_plot *p)
{
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < p->nsteps; i++) {
        lo = fmin(lo, (double)p->steps[i].step);
        hi = fmax(hi, (double)p->steps[i].step);
    }
    for (size_t e = 0; e < p->nepochs; e++) {
        lo = fmin(lo, (double)p->epochs[e].step);
        hi = fmax(hi, (double)p->epochs[e].step);
    }
    if (!(lo <= hi)) {
        lo = 0;
        hi = 1;
    }
    if (lo >= 0 && lo <= 0.25 * (hi - lo))
        lo = 0;
    return nice_axis(lo, hi, 6, 1);
}

/* which: 0 train loss, 1 test loss, 2 test accuracy, 3 validation loss, 4
 * validation accuracy */
static double epoch_value(const epoch_pt *ep, int which)
{
    const double v[5] = {ep->train, ep->test, ep->acc, ep->val, ep->val_acc};
    return v[which];
}

/* Markers (and a thin line through them) for one per-epoch value. */
static void out_epoch_series(sbuf *b, const frame *f, const lt_plot *p, int which, const char *cls, const char *color,
                             int square)
{
    out(b, "<polyline class=\"%s-line\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.2\" stroke-opacity=\"0.7\" "
           "points=\"", cls, color);
    for (size_t e = 0; e < p->nepochs; e++) {
        const epoch_pt *ep = &p->epochs[e];
        double v = epoch_value(ep, which);
        if (isfinite(v))
            out(b, "%.1f,%.1f ", map_x(f, (double)ep->step), map_y(f, v));
    }
    out(b, "\"/>\n<g fill=\"%s\" stroke=\"#fff\" stroke-width=\"1\">\n", color);
    /* past a few hundred epochs markers would crowd into a band and bloat
     * the file: the line alone shows the trend */
    for (size_t e = 0; p->nepochs <= PLOT_MAX_MARKERS && e < p->nepochs; e++) {
        const epoch_pt *ep = &p->epochs[e];
        double v = epoch_value(ep, which);
        if (!isfinite(v))
            continue;
        double x = map_x(f, (double)ep->step), y = map_y(f, v);
        if (square)
            out(b, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\">"
                   "<title>epoch %d: %.4f</title></rect>\n",
                cls, x - 4.5, y - 4.5, ep->epoch, v);
        else
            out(b, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\"><title>epoch %d: %.4f</title></circle>\n",
                cls, x, y, ep->epoch, v);
    }
    out(b, "</g>\n");
}

static void out_legend(sbuf *b, const series *s, double x, double y, int val)
{
    char smooth[64];
    snprintf(smooth, sizeof smooth, "running mean of %zu step%s", s->window, s->window == 1 ? "" : "s");
    const char *labels[5] = {"training loss per step", smooth, "epoch training loss (mean)", "epoch test loss",
                             "epoch validation loss"};
    int rows = val ? 5 : 4;
    out(b, "<g class=\"legend\" font-size=\"12\" fill=\"#222\">\n<rect x=\"%.1f\" y=\"%.1f\" width=\"230\" "
           "height=\"%d\" fill=\"#fff\" fill-opacity=\"0.9\" stroke=\"#bbb\"/>\n", x, y, 10 + 19 * rows);
    for (int i = 0; i < rows; i++) {
        double ly = y + 16 + 19 * i, lx = x + 10;
        if (i == 0)
            out(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_LOSS
                   "\" stroke-opacity=\"0.3\"/>",
                lx, ly, lx + 28, ly);
        else if (i == 1)
            out(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"" C_LOSS "\" stroke-width=\"2\"/>",
                lx, ly, lx + 28, ly);
        else if (i == 2)
            out(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4.5\" fill=\"" C_TRAIN "\"/>", lx + 14, ly);
        else if (i == 3)
            out(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"" C_TEST "\"/>", lx + 9.5, ly - 4.5);
        else
            out(b, "<rect x=\"%.1f\" y=\"%.1f\" width=\"9\" height=\"9\" fill=\"" C_VAL "\"/>", lx + 9.5, ly - 4.5);
        out(b, "<text x=\"%.1f\" y=\"%.1f\" dy=\"0.35em\">", lx + 36, ly);
        out_text(b, labels[i]);
        out(b, "</text>\n");
    }
    out(b, "</g>\n");
}

/* One line under the title: the last epoch's numbers. */
static void out_summary(sbuf *b, const lt_plot *p)
{
    out(b, "<text x=\"%d\" y=\"54\" font-size=\"13\" fill=\"#555\" text-anchor=\"middle\">", PLOT_W / 2);
    out(b, "%zu step%s", p->nsteps, p->nsteps == 1 ? "" : "s");
    if (p->nepochs) {
        const epoch_pt *e = &p->epochs[p->nepochs - 1];
        out(b, "; epoch %d:", e->epoch);
        if (isfinite(e->train))
            out(b, " train loss %.4f", e->train);
        if (isfinite(e->test))
            out(b, ", test loss %.4f", e->test);
        if (isfinite(e->acc))
            out(b, ", test accuracy %.4f", e->acc);
        if (isfinite(e->val))
            out(b, ", val loss %.4f", e->val);
        if (isfinite(e->val_acc))
            out(b, ", val accuracy %.4f", e->val_acc);
    }
    out(b, "</text>\n");
}

static int render(const lt_plot *p, const char *title, sbuf *b)
{
    series s = {0};
    frame lf = {PLOT_X0, PLOT_X1, LOSS_Y0, LOSS_Y1, step_axis(p), {0, 1, 1, 0}};
    double lo, hi;
    if (!make_series(p, &s) || !loss_range(p, &s, &lo, &hi)) {
        free(s.x);
        free(s.y);
        free(s.smooth);
        return 0;
    }
    lf.ay = nice_axis(lo, hi, 6, 0);
    out(b, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
           "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
           "font-family=\"Helvetica, Arial, sans-serif\">\n", PLOT_W, PLOT_H, PLOT_W, PLOT_H);
    out(b, "<title>");
    out_text(b, title);
    out(b, "</title>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n");
    out(b, "<text class=\"title\" x=\"%d\" y=\"30\" font-size=\"18\" font-weight=\"bold\" text-anchor=\"middle\">",
        PLOT_W / 2);
    out_text(b, title);
    out(b, "</text>\n");
    out_summary(b, p);
    /* the step lines would run past the panel where the loss axis cuts off
     * a spike; markers always lie within the axes' ranges */
    out(b, "<defs><clipPath id=\"clip-loss\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>"
           "</clipPath></defs>\n", lf.x0, lf.y0, lf.x1 - lf.x0, lf.y1 - lf.y0);

    out(b, "<g id=\"loss-panel\">\n");
    out_frame(b, &lf, "loss");
    out(b, "<g clip-path=\"url(#clip-loss)\">\n");
    out_columns(b, &lf, s.x, s.y, s.n, "loss-step", "stroke=\"" C_LOSS "\" stroke-opacity=\"0.3\" stroke-width=\"1\"");
    out_columns(b, &lf, s.x, s.smooth, s.n, "loss-smooth", "stroke=\"" C_LOSS "\" stroke-width=\"2\"");
    out(b, "</g>\n");
    out_epoch_series(b, &lf, p, 0, "epoch-train", C_TRAIN, 0);
    out_epoch_series(b, &lf, p, 1, "epoch-test", C_TEST, 1);
    if (p->has_val)
        out_epoch_series(b, &lf, p, 3, "epoch-val", C_VAL, 1);
    out_legend(b, &s, lf.x1 - 240, lf.y0 + 10, p->has_val);
    if (!p->nsteps && !p->nepochs)
        out(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" fill=\"#888\" text-anchor=\"middle\">"
               "no steps recorded</text>\n",
            (lf.x0 + lf.x1) / 2, (lf.y0 + lf.y1) / 2);
    out(b, "</g>\n");

    /* accuracy: zoomed to the data with a margin, within [0, 1] */
    frame af = {PLOT_X0, PLOT_X1, ACC_Y0, ACC_Y1, lf.ax, {0, 1, 0.2, 1}};
    double amin = INFINITY, amax = -INFINITY;
    for (size_t e = 0; e < p->nepochs; e++)
        for (int k = 0; k < 2; k++) {
            double v = k ? p->epochs[e].val_acc : p->epochs[e].acc;
            if (isfinite(v)) {
                amin = fmin(amin, v);
                amax = fmax(amax, v);
            }
        }
    if (amin <= amax) {
        double margin = fmax(0.02, 0.1 * (amax - amin)), a0 = amin - margin, a1 = amax + margin;
        if (amin >= 0 && a0 < 0)
            a0 = 0;
        if (amax <= 1 && a1 > 1)
            a1 = 1;
        af.ay = nice_axis(a0, a1, 4, 0);
    }
    out(b, "<g id=\"accuracy-panel\">\n");
    out_frame(b, &af, p->has_val ? "accuracy: test (circles), validation (squares)" : "test accuracy");
    out_epoch_series(b, &af, p, 2, "epoch-accuracy", C_ACC, 0);
    if (p->has_val)
        out_epoch_series(b, &af, p, 4, "epoch-val-accuracy", C_VAL, 1);
    int any_test = 0;
    for (size_t e = 0; e < p->nepochs; e++)
        any_test |= isfinite(p->epochs[e].acc);
    if (amin <= amax && any_test) {
        const epoch_pt *last = NULL;
        for (size_t e = 0; e < p->nepochs; e++)
            if (isfinite(p->epochs[e].acc))
                last = &p->epochs[e];
        double x = map_x(&af, (double)last->step), y = map_y(&af, last->acc);
        out(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"" C_ACC "\" text-anchor=\"end\">%.4f</text>\n",
            x - 6, y < af.y0 + 24 ? y + 18 : y - 9, last->acc);
    } else if (!(amin <= amax)) {
        out(b, "<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" fill=\"#888\" text-anchor=\"middle\">no test accuracy "
               "recorded</text>\n", (af.x0 + af.x1) / 2, (af.y0 + af.y1) / 2);
    }
    out(b, "<text class=\"axis-title\" x=\"%.1f\" y=\"%.1f\" font-size=\"14\" text-anchor=\"middle\">"
           "training step</text>\n",
        (af.x0 + af.x1) / 2, af.y1 + 44);
    out(b, "</g>\n</svg>\n");
    free(s.x);
    free(s.y);
    free(s.smooth);
    return !b->bad;
}

lt_status lt_plot_write(const lt_plot *p, const char *path, const char *title, lt_err *err)
{
    if (p->oom)
        return lt_errf(err, LT_ERR_NOMEM, "%s: out of memory while collecting the plot's points", path);
    sbuf b = {malloc(1 << 16), 0, 1 << 16, 0};
    if (!b.p)
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    lt_status st = render(p, title ? title : "training", &b)
                       ? lt_write_atomic(path, b.p, b.n, "the plot", err)
                       : lt_errf(err, LT_ERR_NOMEM, "%s: out of memory drawing the plot", path);
    free(b.p);
    return st;
}
