/* `lantern train` and `lantern eval`: train a model on a dataset with the
 * chosen loss and write the trained weights into a copy of the original ONNX
 * file (progress line, CSV log, SVG plot, checkpoints); score a model on the
 * test split. */
#include "cli.h"
#include "runtime/plot.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define TRAIN_USAGE                                                                                              \
    "usage: lantern train MODEL --data SPEC -o OUT.onnx [--epochs E] [--batch B]\n"                             \
    "         [--optimizer sgd|momentum|nesterov|adagrad|adam|adamw] [--lr LR] [--momentum M]\n"                 \
    "         [--weight-decay W] [--beta1 B1] [--beta2 B2] [--eps EPS]\n"                                         \
    "         [--schedule constant|step|cosine] [--warmup STEPS] [--step-size STEPS] [--gamma G]\n"               \
    "         [--clip-norm X] [--loss softmax-cross-entropy|nll|mse|bce-logits|model] [--output NAME]\n"        \
    "         [--mean M[,M...]] [--std S[,S...]] [--freeze NAME]... [--init keep|random] [--device cpu]\n"      \
    "         [--seed S] [--shuffle on|off] [--limit N] [--test-limit N] [--log FILE.csv] [--plot FILE.svg]\n"                     \
    "         [--checkpoint-dir DIR [--checkpoint-every STEPS] [--resume]]\n"                                    \
    "  SPEC: fashion-mnist[=DIR] | mnist=DIR | cifar10=DIR | npz=FILE | onnx-pb=DIR\n"

/* Set by SIGINT; the training loop checks it between steps. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    interrupted = 1;
}

typedef struct progress {
    int tty;
    double last; /* when the progress line was last written */
    FILE *log;
    int log_errno; /* the first failed write of the log; training stops there */
    lt_plot *plot;
    lt_eval_result test; /* the last epoch's */
} progress;

/* A write or flush of the log that failed (a full disk) stops training: it
 * is reported, never left as a short CSV behind exit 0. */
static void log_check(progress *pr, int flush)
{
    if (pr->log_errno)
        return;
    if (ferror(pr->log) || (flush && fflush(pr->log) != 0)) {
        pr->log_errno = errno ? errno : EIO;
        interrupted = 1;
    }
}

/* Closes the log; returns the errno of its first failure, 0 when all of it
 * was written. */
static int log_close(progress *pr)
{
    if (!pr->log)
        return pr->log_errno;
    errno = 0;
    log_check(pr, 1);
    if (fclose(pr->log) != 0 && !pr->log_errno)
        pr->log_errno = errno ? errno : EIO;
    pr->log = NULL;
    return pr->log_errno;
}

static double mono_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void fmt_time(double s, char *buf, size_t len)
{
    long t = s > 0 && s < 1e8 ? (long)(s + 0.5) : 0;
    if (t >= 3600)
        snprintf(buf, len, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%ld:%02ld", t / 60, t % 60);
}

/* On a terminal one line rewritten at most ten times a second; otherwise a
 * plain line every five seconds. */
static void on_step(const lt_train_progress *p, void *user)
{
    progress *pr = user;
    if (pr->plot)
        lt_plot_step(pr->plot, p->global_step, p->batch_loss);
    if (pr->log) {
        errno = 0;
        fprintf(pr->log, "%d,%lld,%lld,%.9g,%.9g,,,\n", p->epoch, (long long)p->step, (long long)p->global_step,
                p->lr, p->batch_loss);
        log_check(pr, 0);
    }
    double now = mono_s();
    int last = p->step == p->steps;
    if (!(now - pr->last >= (pr->tty ? 0.1 : 5.0) || (pr->tty && last)))
        return;
    pr->last = now;
    char eta[32];
    fmt_time(p->eta_s, eta, sizeof eta);
    printf("%sepoch %d/%d  step %lld/%lld  loss %.4f  %.0f samples/s  ETA %s%s", pr->tty ? "\r\033[K" : "", p->epoch,
           p->epochs, (long long)p->step, (long long)p->steps, p->loss, p->samples_per_s, eta, pr->tty ? "" : "\n");
    fflush(stdout);
}

static void on_note(const char *msg, void *user)
{
    progress *pr = user;
    if (pr->tty)
        printf("\r\033[K");
    fflush(stdout);
    fprintf(stderr, "lantern: note: %s\n", msg);
}

/* a value for the CSV: empty when there is none */
static void csv_num(FILE *f, double v)
{
    if (!isnan(v))
        fprintf(f, "%.9g", v);
}

static void on_epoch(const lt_epoch_result *r, void *user)
{
    progress *pr = user;
    pr->test = r->test;
    if (pr->tty)
        printf("\r\033[K");
    printf("epoch %d/%d: train loss %.4f", r->epoch, r->epochs, r->train_loss);
    if (r->test.count > 0)
        printf(", test loss %.4f", r->test.loss);
    if (r->test.has_accuracy)
        printf(", test accuracy %.4f", r->test.accuracy);
    if (r->test.count > 0)
        printf(" (%lld test samples)", (long long)r->test.count);
    printf(", %.1f s\n", r->seconds);
    fflush(stdout);
    if (pr->plot)
        lt_plot_epoch(pr->plot, r->global_step, r->epoch, r->train_loss, r->test.count > 0 ? r->test.loss : NAN,
                      r->test.has_accuracy ? r->test.accuracy : NAN);
    if (pr->log) {
        errno = 0;
        fprintf(pr->log, "%d,,,%.9g,%.9g,", r->epoch, r->lr, r->train_loss);
        csv_num(pr->log, r->test.count > 0 ? r->test.loss : NAN);
        fputc(',', pr->log);
        csv_num(pr->log, r->test.has_accuracy ? r->test.accuracy : NAN);
        fprintf(pr->log, ",%.3f\n", r->seconds);
        log_check(pr, 1);
    }
}

/* Parses a number that must use the whole argument. */
static int num_arg(const char *opt, const char *s, double lo, double hi, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= lo && v <= hi)) {
        fprintf(stderr, "lantern: %s wants a number in [%g, %g], got '%s'\n", opt, lo, hi, s);
        return 0;
    }
    *out = v;
    return 1;
}

static int int_arg(const char *opt, const char *s, double lo, double hi, int64_t *out)
{
    double v;
    if (!num_arg(opt, s, lo, hi, &v))
        return 0;
    if (v != (double)(int64_t)v) {
        fprintf(stderr, "lantern: %s wants a whole number, got '%s'\n", opt, s);
        return 0;
    }
    *out = (int64_t)v;
    return 1;
}

static int pick(const char *opt, const char *s, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return 1;
        }
    fprintf(stderr, "lantern: %s: unknown value '%s' (", opt, s);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s%s", i ? ", " : "", names[i]);
    fprintf(stderr, ")\n");
    return 0;
}

/* --mean / --std: one number or one per channel, comma-separated. */
static int norm_arg(const char *opt, const char *s, int *n, double *v, int max)
{
    char buf[512];
    snprintf(buf, sizeof buf, "%s", s);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == max) {
            fprintf(stderr, "lantern: %s takes at most %d values\n", opt, max);
            return 0;
        }
        if (!num_arg(opt, tok, -1e30, 1e30, &v[*n]))
            return 0;
        (*n)++;
    }
    if (!*n) {
        fprintf(stderr, "lantern: %s wants a number or a comma-separated list\n", opt);
        return 0;
    }
    return 1;
}

/* Options train and eval share: what the data is and how it is scored.
 * Returns 1 when a took val, 0 when a is not one of them, -1 on a bad value. */
static int data_option(const char *a, const char *val, lt_eval_opts *e)
{
    if (!strcmp(a, "--data"))
        e->data = val;
    else if (!strcmp(a, "--output"))
        e->output = val;
    else if (!strcmp(a, "--loss")) {
        if (!lt_loss_parse(val, &e->loss) || e->loss == LT_LOSS_SUM || e->loss == LT_LOSS_MEAN) {
            fprintf(stderr, "lantern: --loss: unknown value '%s' (softmax-cross-entropy, nll, mse, bce-logits, model)\n",
                    val);
            return -1;
        }
    } else if (!strcmp(a, "--mean"))
        return norm_arg(a, val, &e->norm.nmean, e->norm.mean, 16) ? 1 : -1;
    else if (!strcmp(a, "--std"))
        return norm_arg(a, val, &e->norm.nstd, e->norm.std, 16) ? 1 : -1;
    else if (!strcmp(a, "--device")) {
        if (strcmp(val, "cpu") != 0) {
            fprintf(stderr, "lantern: --device %s: this build runs on the CPU only (--device cpu)\n", val);
            return -1;
        }
    } else
        return 0;
    return 1;
}

int lt_cmd_train(int argc, char **argv)
{
    static const char *const optims[] = {"sgd", "momentum", "nesterov", "adagrad", "adam", "adamw"};
    static const char *const scheds[] = {"constant", "step", "cosine"};
    static const char *const inits[] = {"keep", "random"};
    const char *path = NULL, *out = NULL, *log_path = NULL, *plot_path = NULL;
    int resume = 0, stopped = 0;
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_eval_opts eo = {NULL, 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}};
    progress pr = {isatty(STDOUT_FILENO), 0, NULL, 0, NULL, {NAN, NAN, 0, 0}};
    int kind = LT_OPTIM_SGD, sched = LT_SCHEDULE_CONSTANT, init = 0, nfreeze = 0;
    double lr = -1, mom = -1, wd = -1, b1 = -1, b2 = -1, eps = -1;
    int64_t iv = 0;
    const char **freeze = calloc(argc + 1, sizeof *freeze);
    if (!freeze) {
        fprintf(stderr, "lantern: out of memory\n");
        return 1;
    }
    int rc = 2;
    char log_shown[512] = "";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int ok = 1;
        if (a[0] != '-') {
            if (path) {
                fprintf(stderr, "lantern train: one model at a time ('%s')\n", a);
                goto done;
            }
            path = a;
            continue;
        }
        if (!strcmp(a, "--resume")) {
            resume = 1;
            continue;
        }
        if (!val) {
            fprintf(stderr, "lantern train: unknown option or missing value: '%s'\n%s", a, TRAIN_USAGE);
            goto done;
        }
        i++;
        int d = data_option(a, val, &eo);
        if (d < 0)
            goto done;
        if (d > 0)
            continue;
        if (!strcmp(a, "-o"))
            out = val;
        else if (!strcmp(a, "--log"))
            lt_str_printable(log_path = val, log_shown, sizeof log_shown);
        else if (!strcmp(a, "--plot"))
            plot_path = val;
        else if (!strcmp(a, "--checkpoint-dir"))
            o.checkpoint_dir = val;
        else if (!strcmp(a, "--checkpoint-every"))
            ok = int_arg(a, val, 1, 1e12, &o.checkpoint_every);
        else if (!strcmp(a, "--epochs")) {
            ok = int_arg(a, val, 1, 1e6, &iv);
            o.epochs = (int)iv;
        } else if (!strcmp(a, "--batch"))
            ok = int_arg(a, val, 1, 1 << 20, &o.batch);
        else if (!strcmp(a, "--optimizer"))
            ok = pick(a, val, optims, 6, &kind);
        else if (!strcmp(a, "--lr"))
            ok = num_arg(a, val, 1e-12, 1e6, &lr);
        else if (!strcmp(a, "--momentum"))
            ok = num_arg(a, val, 0, 0.999999, &mom);
        else if (!strcmp(a, "--weight-decay"))
            ok = num_arg(a, val, 0, 1e6, &wd);
        else if (!strcmp(a, "--beta1"))
            ok = num_arg(a, val, 0, 0.999999, &b1);
        else if (!strcmp(a, "--beta2"))
            ok = num_arg(a, val, 0, 0.999999, &b2);
        else if (!strcmp(a, "--eps"))
            ok = num_arg(a, val, 1e-30, 1, &eps);
        else if (!strcmp(a, "--schedule"))
            ok = pick(a, val, scheds, 3, &sched);
        else if (!strcmp(a, "--warmup"))
            ok = int_arg(a, val, 0, 1e12, &o.schedule.warmup);
        else if (!strcmp(a, "--step-size"))
            ok = int_arg(a, val, 1, 1e12, &o.schedule.step_size);
        else if (!strcmp(a, "--gamma"))
            ok = num_arg(a, val, 1e-9, 1, &o.schedule.gamma);
        else if (!strcmp(a, "--clip-norm"))
            ok = num_arg(a, val, 0, 1e12, &o.clip_norm);
        else if (!strcmp(a, "--freeze"))
            freeze[nfreeze++] = val;
        else if (!strcmp(a, "--init"))
            ok = pick(a, val, inits, 2, &init);
        else if (!strcmp(a, "--shuffle")) {
            static const char *const onoff[2] = {"on", "off"};
            int sh = 0;
            ok = pick(a, val, onoff, 2, &sh);
            o.no_shuffle = sh == 1;
        }
        else if (!strcmp(a, "--seed")) {
            ok = int_arg(a, val, 0, 9007199254740992.0, &iv);
            o.seed = (uint64_t)iv;
        } else if (!strcmp(a, "--limit"))
            ok = int_arg(a, val, 1, 1e12, &o.limit);
        else if (!strcmp(a, "--test-limit"))
            ok = int_arg(a, val, 1, 1e12, &o.test_limit);
        else {
            fprintf(stderr, "lantern train: unknown option '%s'\n%s", a, TRAIN_USAGE);
            goto done;
        }
        if (!ok)
            goto done; /* the parser said why */
    }
    o.data = eo.data;
    o.loss = eo.loss;
    o.output = eo.output;
    o.norm = eo.norm;
    if (!path || !out || !o.data) {
        fprintf(stderr, "lantern train: %s\n%s",
                !path ? "no MODEL given" : !o.data ? "--data is required" : "-o OUT.onnx is required", TRAIN_USAGE);
        goto done;
    }
    /* every file written must be writable before hours of training */
    if (!lt_cli_out_file(out, "-o", 0) || (plot_path && !lt_cli_out_file(plot_path, "--plot", 0)) ||
        (log_path && !lt_cli_out_file(log_path, "--log", 1)))
        goto done;
    if ((resume || o.checkpoint_every) && !o.checkpoint_dir) {
        fprintf(stderr, "lantern train: --resume and --checkpoint-every need --checkpoint-dir DIR\n");
        goto done;
    }
    if (o.checkpoint_dir && !lt_cli_out_dir(o.checkpoint_dir, "--checkpoint-dir", 0))
        goto done;
    o.resume = resume;
    lt_optim_defaults((lt_optim_kind)kind, &o.optim);
    if (mom >= 0)
        o.optim.momentum = mom;
    if (wd >= 0)
        o.optim.weight_decay = wd;
    if (b1 >= 0)
        o.optim.beta1 = b1;
    if (b2 >= 0)
        o.optim.beta2 = b2;
    if (eps > 0)
        o.optim.eps = eps;
    o.schedule.kind = (lt_schedule_kind)sched;
    o.schedule.lr = lr > 0 ? lr : kind >= LT_OPTIM_ADAM ? 0.001 : 0.01;
    o.init_random = init;
    o.nfreeze = nfreeze;
    o.freeze = freeze;
    if (plot_path && !(pr.plot = lt_plot_new())) {
        fprintf(stderr, "lantern: out of memory\n");
        goto done;
    }
    interrupted = 0;
    if (log_path) {
        /* a resumed run continues the log of the run it resumes; a link
         * planted at the name since the check is not followed */
        int fd = open(log_path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (resume ? O_APPEND : O_TRUNC), 0666);
        pr.log = fd >= 0 ? fdopen(fd, resume ? "a" : "w") : NULL;
        if (!pr.log) {
            fprintf(stderr, "lantern: --log %s: cannot write: %s\n", log_shown, strerror(errno));
            if (fd >= 0)
                close(fd);
            goto done;
        }
        errno = 0;
        if (ftell(pr.log) <= 0) /* new, emptied, or a stream */
            fprintf(pr.log, "epoch,step,global_step,lr,train_loss,test_loss,test_accuracy,seconds\n");
        log_check(&pr, 0);
    }
    o.on_step = on_step;
    o.on_epoch = on_epoch;
    o.on_note = on_note;
    o.user = &pr;
    printf("training %s on %s: %d epoch(s), batch %lld, %s loss, %s, lr %g%s%s\n", path, o.data, o.epochs,
           (long long)o.batch, lt_loss_name(o.loss), optims[kind], o.schedule.lr, o.schedule.kind != LT_SCHEDULE_CONSTANT ? ", " : "",
           o.schedule.kind != LT_SCHEDULE_CONSTANT ? scheds[sched] : "");
    fflush(stdout);
    lt_err err;
    lt_model *m = NULL;
    struct sigaction sa, old_sa;
    if (o.checkpoint_dir) {
        /* Ctrl-C: finish the step, write a checkpoint, exit 130; a second
         * Ctrl-C (the handler resets itself) ends the process at once */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigint;
        sigemptyset(&sa.sa_mask);
        sa.sa_flags = SA_RESETHAND;
        sigaction(SIGINT, &sa, &old_sa);
    }
    /* set by Ctrl-C (with checkpoints) or by a failed write of the log */
    o.stop = &interrupted;
    o.stopped = &stopped;
    lt_status s = lt_train(path, &o, &m, &err);
    if (o.checkpoint_dir)
        sigaction(SIGINT, &old_sa, NULL);
    int log_err = log_close(&pr);
    if (s == LT_OK && log_err) {
        if (pr.tty)
            printf("\r\033[K");
        fflush(stdout);
        fprintf(stderr, "lantern: --log %s: cannot write: %s\n", log_shown, strerror(log_err));
        lt_model_free(m);
        rc = 2;
        goto done;
    }
    if (s == LT_OK && stopped) {
        if (pr.tty)
            printf("\r\033[K");
        fflush(stdout);
        fprintf(stderr, "lantern: interrupted; checkpoint written to %s/checkpoint.ltck (continue with --resume)\n",
                o.checkpoint_dir);
        lt_model_free(m);
        rc = 130;
        goto done;
    }
    if (s == LT_OK)
        s = lt_model_export(m, path, out, &err);
    if (s == LT_OK && pr.plot) {
        char title[512];
        snprintf(title, sizeof title, "lantern train %s on %s", path, o.data);
        s = lt_plot_write(pr.plot, plot_path, title, &err);
    }
    if (s != LT_OK) {
        if (pr.tty)
            printf("\r\033[K");
        fflush(stdout);
        fprintf(stderr, "lantern: %s\n", err.msg);
        rc = lt_exit_code(s);
        lt_model_free(m);
        goto done;
    }
    lt_model_free(m);
    printf("wrote %s\n", out);
    if (plot_path)
        printf("wrote %s\n", plot_path);
    if (pr.test.has_accuracy)
        printf("test accuracy: %.4f\n", pr.test.accuracy);
    else if (pr.test.count > 0)
        printf("test loss: %.6f\n", pr.test.loss);
    rc = 0;
done:
    log_close(&pr);
    lt_plot_free(pr.plot);
    free(freeze);
    return rc;
}

int lt_cmd_eval(int argc, char **argv)
{
    const char *path = NULL;
    lt_eval_opts eo = {"fashion-mnist", 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        int d = a[0] == '-' && val ? data_option(a, val, &eo) : 0;
        if (d < 0)
            return 2;
        if (d > 0) {
            i++;
        } else if (!strcmp(a, "--limit") && val) {
            if (!int_arg("--limit", argv[++i], 1, 1e12, &eo.limit))
                return 2;
        } else if (a[0] != '-' && !path) {
            path = a;
        } else {
            fprintf(stderr, "lantern eval: unexpected argument '%s'\n", a);
            return 2;
        }
    }
    if (!path) {
        fprintf(stderr, "usage: lantern eval MODEL [--data SPEC] [--loss NAME] [--output NAME] [--mean M] [--std S] "
                        "[--limit N]\n");
        return 2;
    }
    lt_err err;
    lt_model *m = NULL;
    lt_eval_result r;
    lt_status s = lt_model_load(path, &m, &err);
    if (s == LT_OK)
        s = lt_model_evaluate(m, &eo, &r, &err);
    lt_model_free(m);
    if (s != LT_OK) {
        fprintf(stderr, "lantern: %s\n", err.msg);
        return lt_exit_code(s);
    }
    printf("test samples: %lld\n", (long long)r.count);
    printf("loss: %.6f\n", r.loss);
    if (r.has_accuracy)
        printf("accuracy: %.4f\n", r.accuracy);
    return 0;
}
