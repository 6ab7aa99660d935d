/* `lantern train` and `lantern eval`: train a model on a dataset with the
 * chosen loss and write the trained weights into a copy of the original ONNX
 * file (progress line, CSV log, SVG plot, checkpoints); score a model on the
 * test split. */
#include "options.h"
#include "json.h"
#include "importer/export_external.h"
#include "train/checkpoint.h"
#include "train/norm_meta.h"
#include "train/plot.h"
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

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
    int stats;           /* --stats */
    int val;             /* --val-split: validation columns in the log */
    /* the best validation epoch so far, its figure and its test figures */
    int best_epoch, last_epoch, stopped_early;
    double best_value;
    int val_accuracy; /* the validation figure is an accuracy (else a loss) */
    /* best_test holds the test figures of epoch best_measured: a resumed run
     * knows its best epoch from the checkpoint, not that epoch's figures */
    int best_measured;
    lt_eval_result best_test;
    /* the log is opened before the run and changed only at its first row:
     * emptied for a new run, cut back to the checkpoint's step for a
     * resumed one (resume_at; -1 for a new run) */
    int log_pending;
    int64_t resume_at;
    int64_t flush_every; /* --checkpoint-every: the rows a checkpoint follows are flushed before it */
    char resume_line[1200]; /* where a resumed run picks up, printed at its first step */
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

/* The offset of the first row of the log text s[0..len) logged after
 * global step g (the header and the rows up to g stay); len when none is. */
static size_t log_cut_at(const char *s, size_t len, int64_t g)
{
    size_t at = 0;
    int first = 1;
    while (at < len) {
        const char *nl = memchr(s + at, '\n', len - at);
        if (!nl && !first)
            return at; /* a row cut short by the kill */
        size_t end = nl ? (size_t)(nl - s) + 1 : len;
        if (!first) {
            /* epoch,step,global_step,...: an epoch's row leaves global_step empty */
            const char *c1 = memchr(s + at, ',', end - at);
            const char *c2 = c1 ? memchr(c1 + 1, ',', end - (size_t)(c1 + 1 - s)) : NULL;
            if (c2 && c2 + 1 < s + end && isdigit((unsigned char)c2[1]) && strtoll(c2 + 1, NULL, 10) > g)
                return at;
        }
        first = 0;
        at = end;
    }
    return len;
}

/* Before the log's first row: a new run's log is emptied, a resumed run's
 * loses the rows its killed run wrote after the checkpoint (they come again);
 * then the header where the file is empty (or a stream). */
static void log_begin(progress *pr)
{
    if (!pr->log || !pr->log_pending)
        return;
    pr->log_pending = 0;
    int fd = fileno(pr->log);
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
        size_t keep = 0;
        if (pr->resume_at >= 0 && st.st_size > 0) {
            char *s = malloc((size_t)st.st_size);
            ssize_t got = s ? pread(fd, s, (size_t)st.st_size, 0) : -1;
            keep = got == st.st_size ? log_cut_at(s, (size_t)got, pr->resume_at) : (size_t)st.st_size;
            free(s);
        }
        if ((off_t)keep != st.st_size && ftruncate(fd, (off_t)keep) != 0 && !pr->log_errno)
            pr->log_errno = errno;
    }
    off_t end = lseek(fd, 0, SEEK_END);
    errno = 0;
    if (end <= 0) /* new, emptied, or a stream */
        fprintf(pr->log, "epoch,step,global_step,lr,train_loss,test_loss,test_accuracy,seconds%s\n",
                pr->val ? ",val_loss,val_accuracy" : "");
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
static void say_pending(progress *pr)
{
    if (pr->resume_line[0]) {
        fputs(pr->resume_line, stdout);
        pr->resume_line[0] = 0;
    }
}

static void on_step(const lt_train_progress *p, void *user)
{
    progress *pr = user;
    say_pending(pr);
    if (pr->plot)
        lt_plot_step(pr->plot, p->global_step, p->batch_loss);
    if (pr->log) {
        log_begin(pr);
        errno = 0;
        fprintf(pr->log, "%d,%lld,%lld,%.9g,%.9g,,,%s\n", p->epoch, (long long)p->step, (long long)p->global_step,
                p->lr, p->batch_loss, pr->val ? ",," : "");
        log_check(pr, pr->flush_every > 0 && p->global_step % pr->flush_every == 0);
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
    say_pending(pr);
    pr->test = r->test;
    pr->last_epoch = r->epoch;
    int best = r->val.count > 0 && r->best_epoch == r->epoch;
    if (r->val.count > 0 && r->best_epoch > 0) {
        pr->best_epoch = r->best_epoch;
        pr->best_value = r->best_value;
        pr->val_accuracy = r->val.has_accuracy;
    }
    if (best) {
        pr->best_test = r->test;
        pr->best_measured = r->epoch;
    }
    if (pr->tty)
        printf("\r\033[K");
    printf("epoch %d/%d: train loss %.4f", r->epoch, r->epochs, r->train_loss);
    if (r->val.count > 0)
        printf(", val loss %.4f", r->val.loss);
    if (r->val.has_accuracy)
        printf(", val accuracy %.4f", r->val.accuracy);
    if (r->val.count > 0)
        printf(" (%lld val samples%s)", (long long)r->val.count, best ? ", best so far" : "");
    if (r->test.count > 0)
        printf(", test loss %.4f", r->test.loss);
    if (r->test.has_accuracy)
        printf(", test accuracy %.4f", r->test.accuracy);
    if (r->test.count > 0)
        printf(" (%lld test samples)", (long long)r->test.count);
    printf(", %.1f s\n", r->seconds);
    if (r->stop_early) {
        pr->stopped_early = 1;
        printf("early stop: no better validation %s for %d epoch%s (best %.4f at epoch %d)\n",
               r->val.has_accuracy ? "accuracy" : "loss", r->epoch - r->best_epoch,
               r->epoch - r->best_epoch == 1 ? "" : "s", r->best_value, r->best_epoch);
    }
    if (pr->stats) {
        const lt_run_stats *s = &r->stats;
        printf("  stats: peak activation memory %.1f MB (planned arenas %.1f MB, %lld layouts)",
               (double)s->peak_bytes / 1048576.0, (double)s->arena_peak_bytes / 1048576.0, (long long)s->layouts);
        if (s->peak_backend_bytes)
            printf(", on the backend %.1f MB", (double)s->peak_backend_bytes / 1048576.0);
        printf("\n  per run (%lld runs): %.1f outputs from arenas (%.1f written over their input), %.1f from the "
               "pool; %.1f nodes on the backend, %.1f on the host; copies: %.1f uploads (%.1f KB), "
               "%.1f downloads (%.1f KB)\n",
               (long long)s->runs, s->planned, s->inplace, s->pooled, s->device_nodes, s->host_nodes, s->uploads,
               s->upload_bytes / 1024.0, s->downloads, s->download_bytes / 1024.0);
    }
    fflush(stdout);
    if (pr->plot) {
        lt_plot_epoch(pr->plot, r->global_step, r->epoch, r->train_loss, r->test.count > 0 ? r->test.loss : NAN,
                      r->test.has_accuracy ? r->test.accuracy : NAN);
        if (r->val.count > 0)
            lt_plot_validation(pr->plot, r->val.loss, r->val.has_accuracy ? r->val.accuracy : NAN);
    }
    if (pr->log) {
        log_begin(pr);
        errno = 0;
        fprintf(pr->log, "%d,,,%.9g,%.9g,", r->epoch, r->lr, r->train_loss);
        csv_num(pr->log, r->test.count > 0 ? r->test.loss : NAN);
        fputc(',', pr->log);
        csv_num(pr->log, r->test.has_accuracy ? r->test.accuracy : NAN);
        fprintf(pr->log, ",%.3f", r->seconds);
        if (pr->val) {
            fputc(',', pr->log);
            csv_num(pr->log, r->val.count > 0 ? r->val.loss : NAN);
            fputc(',', pr->log);
            csv_num(pr->log, r->val.has_accuracy ? r->val.accuracy : NAN);
        }
        fputc('\n', pr->log);
        log_check(pr, 1);
    }
}

/* --val-split F: a fraction strictly between 0 and 1. */
static int val_fraction(const char *opt, const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !(v > 0 && v < 1)) {
        char shown[256];
        fprintf(stderr, "lantern: %s wants a fraction between 0 and 1 (exclusive), got '%s'\n", opt,
                lt_str_printable(s, shown, sizeof shown));
        return 0;
    }
    *out = v;
    return 1;
}

/* Options train and eval share: what the data is and how it is scored. One
 * set of rows for both tables; P is the command's enum prefix. */
#define DATA_OPTIONS(X, P, DATA_DEF)                                                                                 \
    X(P##_DATA, "--data", "SPEC",                                                                                    \
      "the dataset: fashion-mnist[=DIR] | mnist=DIR | cifar10=DIR | npz=FILE | onnx-pb=DIR | csv=FILE[,TEST] | "     \
      "npy=X,Y[,X_TEST,Y_TEST] | images=DIR[,TEST_DIR] (SPEC in lantern help train)", DATA_DEF, 0)                   \
    X(P##_LABEL_COLUMN, "--label-column", "NAME|K",                                                                  \
      "csv: the label's column, by header name or number (1 the first, -1 the last)", "the last column", 0)        \
    X(P##_LOSS, "--loss", "L", "softmax-cross-entropy | nll | mse | bce-logits | model",                             \
      "softmax-cross-entropy", 0)                                                                                    \
    X(P##_OUTPUT, "--output", "NAME", "the model output the loss is attached to", "the first output", 0)             \
    X(P##_MEAN, "--mean", "M[,M...]", "subtract from the samples (one value, or one per channel)",                   \
      "the model's stored lantern.mean, else 0", 0)                                                                  \
    X(P##_STD, "--std", "S[,S...]", "then divide by (one value, or one per channel)",                                \
      "the model's stored lantern.std, else 1", 0)

/* --label-column reads CSV headers and --labels names an npz array: given
 * with other data they would be ignored without a word. */
static int data_options_fit(const char *cmd, const char *data, const char *label_column, const char *labels)
{
    char shown[512];
    if (label_column && strncmp(data, "csv=", 4) != 0) {
        fprintf(stderr, "lantern %s: --label-column picks a CSV column; --data %s is not csv=\n", cmd,
                lt_str_printable(data, shown, sizeof shown));
        return 0;
    }
    if (labels && strncmp(data, "npz=", 4) != 0) {
        fprintf(stderr, "lantern %s: --labels names an npz array; --data %s is not npz=\n", cmd,
                lt_str_printable(data, shown, sizeof shown));
        return 0;
    }
    return 1;
}

/* Takes one of DATA_OPTIONS by its name; 1 when val is good, 0 after a
 * line saying why not. */
static int data_option(const char *a, const char *val, lt_eval_opts *e)
{
    if (!strcmp(a, "--data"))
        e->data = val;
    else if (!strcmp(a, "--label-column"))
        e->norm.label_column = val;
    else if (!strcmp(a, "--output"))
        e->output = val;
    else if (!strcmp(a, "--loss")) {
        if (!lt_loss_parse(val, &e->loss) || e->loss == LT_LOSS_SUM || e->loss == LT_LOSS_MEAN) {
            char shown[256];
            fprintf(stderr,
                    "lantern: --loss: unknown value '%s' (softmax-cross-entropy, nll, mse, bce-logits, model)\n",
                    lt_str_printable(val, shown, sizeof shown));
            return 0;
        }
    } else if (!strcmp(a, "--mean"))
        return lt_cli_norm_arg(a, val, &e->norm.nmean, e->norm.mean, 16);
    else if (!strcmp(a, "--std"))
        return lt_cli_norm_arg(a, val, &e->norm.nstd, e->norm.std, 16);
    return 1;
}

#define TRAIN_OPTIONS(X)                                                                                             \
    X(T_OUT, "-o", "OUT.onnx", "the trained model: MODEL with every trained initializer replaced (required)",        \
      NULL, 0)                                                                                                       \
    DATA_OPTIONS(X, T, NULL)                                                                                         \
    X(T_LABELS, "--labels", "NAME", "npz: the array holding the labels or targets", "y", 0)                           \
    X(T_BATCH_AXIS, "--batch-axis", "INPUT=K", "npz: axis K of INPUT is the batch (where the model cannot tell)",       \
      "from the model", LT_OPT_REPEAT)                                                                               \
    X(T_IGNORE_INDEX, "--ignore-index", "I", "softmax-cross-entropy, nll: labels equal to I count for nothing",       \
      "-100", 0)                                                                                                     \
    X(T_CLASS_AXIS, "--class-axis", "K", LT_CLASS_AXIS_HELP, "the one the labels' shape fits", 0)                        \
    X(T_AUGMENT, "--augment", "LIST",                                                                                \
      "training images: flip (random horizontal flip), crop:P (random crop after zero padding by P), or both "      \
      "comma-separated; drawn from --seed, the epoch and the sample", "none", 0)                                    \
    X(T_EPOCHS, "--epochs", "E", "passes over the training data", "1", 0)                                            \
    X(T_BATCH, "--batch", "B", "samples per step", "64", 0)                                                          \
    X(T_OPTIMIZER, "--optimizer", "NAME", "sgd | momentum | nesterov | adagrad | adam | adamw", "sgd", 0)            \
    X(T_LR, "--lr", "LR", "learning rate", "0.01; 0.001 for adam and adamw", 0)                                      \
    X(T_MOMENTUM, "--momentum", "M", "momentum of momentum and nesterov", "0.9", 0)                                  \
    X(T_WEIGHT_DECAY, "--weight-decay", "W", "L2 penalty (adamw: decoupled decay)", "0; 0.01 for adamw", 0)          \
    X(T_BETA1, "--beta1", "B1", "adam's first-moment decay", "0.9", 0)                                               \
    X(T_BETA2, "--beta2", "B2", "adam's second-moment decay", "0.999", 0)                                            \
    X(T_EPS, "--eps", "EPS", "added to the denominator of adagrad and adam", "1e-8; 1e-10 for adagrad", 0)           \
    X(T_SCHEDULE, "--schedule", "NAME", "learning-rate schedule: constant | step | cosine", "constant", 0)           \
    X(T_WARMUP, "--warmup", "STEPS", "linear warmup: step k of the first STEPS (k = 1..STEPS) at lr x k/STEPS", "0", 0) \
    X(T_STEP_SIZE, "--step-size", "STEPS", "--schedule step: multiply by --gamma every STEPS steps",                 \
      "a third of the steps after --warmup", 0)                                                                      \
    X(T_GAMMA, "--gamma", "G", "--schedule step's factor", "0.1", 0)                                                 \
    X(T_CLIP_NORM, "--clip-norm", "X",                                                                               \
      "scale the gradients down to a global L2 norm of at most X (as clip_grad_norm_: by X / (norm + 1e-6))",        \
      "no clipping", 0)                                                                                              \
    X(T_FREEZE, "--freeze", "NAME", "keep parameter NAME as it is", NULL, LT_OPT_REPEAT)                             \
    X(T_NO_TIE, "--no-tie", NULL, LT_NO_TIE_HELP, "tied", 0)                                                       \
    X(T_TRAIN_CONSTANTS, "--train-constants", NULL,                                                                  \
      "train the single-valued initializers an exporter names as its own (dynamo's val_N, onnx::*) or keeps in "    \
      "an If/Loop/Scan body, which are the graph's constants (GELU's 3.0, an attention scale)", "kept fixed", 0)    \
    X(T_PADDING, "--padding-idx", "PARAM=ROW",                                                                    \
      LT_PADDING_IDX_HELP, "none", LT_OPT_REPEAT)                                            \
    X(T_INIT, "--init", "keep|random",                                                                               \
      "keep: train the weights in MODEL; random: from scratch, fresh seeded weights (below)", "keep", 0)              \
    X(T_SEED, "--seed", "S", "seed of the shuffling, --augment, --init random and --val-split", "1", 0)              \
    X(T_SHUFFLE, "--shuffle", "on|off", "shuffle the training samples every epoch", "on", 0)                         \
    X(T_STATS, "--stats", NULL,                                                                                  \
      "after each epoch, print peak activation memory (pool and planned arenas) and, per step, outputs served "   \
      "from the arenas, in place and from the pool, and backend copies",                                           \
      NULL, 0)                                                                                                     \
    X(T_LIMIT, "--limit", "N", "train on the first N samples only", "all", 0)                                        \
    X(T_VAL_SPLIT, "--val-split", "F", "hold out the fraction F of the training samples (seeded by --seed) and score " \
      "them after every epoch", "none", 0)                                                                           \
    X(T_SAVE_BEST, "--save-best", NULL, "write the weights of the epoch with the best validation figure (accuracy for " \
      "class labels, else loss) instead of the last epoch's; needs --val-split", NULL, 0)                           \
    X(T_EARLY_STOP, "--early-stop", "N", "end the run after N epochs without a better validation figure; needs "     \
      "--val-split", "off", 0)                                                                                       \
    X(T_TEST_LIMIT, "--test-limit", "N", "evaluate on the first N test samples only", "all", 0)                      \
    X(T_LOG, "--log", "FILE.csv", "a CSV row per step and per epoch (a FIFO or device is written in place)",         \
      NULL, 0)                                                                                                       \
    X(T_PLOT, "--plot", "FILE.svg", "an SVG of the loss and accuracy curves", NULL, 0)                               \
    X(T_CHECKPOINT_DIR, "--checkpoint-dir", "DIR", "write DIR/checkpoint.ltck (every epoch and on Ctrl-C; DIR is made "\
      "when missing)", "none; Ctrl-C writes OUT.checkpoint/ beside -o OUT.onnx", 0)                                  \
    X(T_CHECKPOINT_EVERY, "--checkpoint-every", "STEPS", "also every STEPS steps", "epoch ends only", 0)             \
    X(T_RESUME, "--resume", NULL, "continue the run in --checkpoint-dir bit-exactly (same options)", NULL, 0)
typedef enum { TRAIN_OPTIONS(LT_OPT_ENUM) } train_opt;
static const lt_cli_opt train_opts[] = {TRAIN_OPTIONS(LT_OPT_ROW){0, NULL, NULL, NULL, NULL, 0}};

/* Where a resumed run picks up, and which lantern wrote the checkpoint.
 * Only the head is read here; lt_train checks the whole file and says why
 * when it refuses it. */
static void say_resume(const char *dir, char *line, size_t len)
{
    lt_ckpt_info ci;
    lt_err ignored;
    line[0] = 0;
    if (lt_ckpt_read_info(dir, &ci, &ignored) != LT_OK)
        return;
    char dir_s[512], writer_s[160], by[256];
    lt_str_printable(dir, dir_s, sizeof dir_s);
    if (*ci.writer)
        snprintf(by, sizeof by, "(checkpoint written by %s)", lt_str_printable(ci.writer, writer_s, sizeof writer_s));
    else
        snprintf(by, sizeof by, "(checkpoint format %u, whose writer did not record its version)", ci.version);
    snprintf(line, len, "resuming at step %lld (epoch %lld, step %lld of %lld) from %s/%s %s; samples/s and ETA count "
             "the steps from here\n", (long long)ci.global, (long long)ci.epoch, (long long)ci.step,
             (long long)ci.steps, dir_s, LT_CKPT_FILE, by);
}

/* -o, --log and --plot are three files, none of them the model (--log,
 * --plot), a file its external data lives in, a file of the data, the
 * checkpoint or the checkpoint folder's lock: written over, those would be
 * lost before or after the run. -o may replace the model: it is written
 * whole, after the run. The data file -o may take for external data
 * (OUT.data) is none of them either. */
static int outputs_apart(const char *model, const char *data, const char *ckdir, const char *out, const char *log,
                         const char *plot)
{
    char pieces[8][PATH_MAX], ck[PATH_MAX + 32], lock[PATH_MAX + 32];
    char **ext = NULL;
    int next = 0;
    if (!lt_model_external_files(model, &ext, &next)) {
        fprintf(stderr, "lantern: out of memory\n");
        return 0;
    }
    const char **files = calloc((size_t)next + 14, sizeof *files), **what = calloc((size_t)next + 14, sizeof *what);
    if (!files || !what) {
        free(files);
        free(what);
        lt_export_free_files(ext, next);
        fprintf(stderr, "lantern: out of memory\n");
        return 0;
    }
    int n = 0;
    const char *arg = strchr(data, '=');
    for (const char *p = arg ? arg + 1 : NULL; p && *p && n < 8;) {
        const char *c = strchr(p, ',');
        size_t len = c ? (size_t)(c - p) : strlen(p);
        if (len && len < PATH_MAX) {
            memcpy(pieces[n], p, len);
            pieces[n][len] = 0;
            files[n] = pieces[n];
            what[n++] = "a file of --data";
        }
        p = c ? c + 1 : NULL;
    }
    if (ckdir && snprintf(ck, sizeof ck, "%s/%s", ckdir, LT_CKPT_FILE) < (int)sizeof ck) {
        files[n] = ck;
        what[n++] = "the checkpoint";
    }
    if (ckdir && snprintf(lock, sizeof lock, "%s/checkpoint.lock", ckdir) < (int)sizeof lock) {
        files[n] = lock;
        what[n++] = "the checkpoint folder's lock";
    }
    for (int i = 0; i < next; i++) {
        files[n] = ext[i];
        what[n++] = "the model's external data";
    }
    /* each output against every other file but itself: -o may replace the
     * model, and --plot was checked against --log as --log was */
    int im = n, ip = n + 1, il = n + 2;
    files[im] = model;
    what[im] = "the model";
    files[ip] = plot;
    what[ip] = "--plot";
    files[il] = log;
    what[il] = "--log";
    n += 3;
    files[im] = NULL;
    int ok = lt_cli_out_distinct(out, "-o", files, what, n);
    files[im] = model;
    ok = ok && lt_cli_out_data_distinct(out, "-o", files, what, n);
    files[il] = NULL;
    ok = ok && (!log || lt_cli_out_distinct(log, "--log", files, what, n));
    files[ip] = NULL;
    ok = ok && (!plot || lt_cli_out_distinct(plot, "--plot", files, what, n));
    free(files);
    free(what);
    lt_export_free_files(ext, next);
    return ok;
}

/* Where checkpoints go must be able to take one before the run: a new run
 * does not replace the checkpoint of another in --checkpoint-dir (--resume
 * continues it), and the folder Ctrl-C writes to without one (beside -o)
 * must be a folder or nothing yet. */
static int checkpoint_dirs_ready(const char *ckdir, const char *stop_dir, int resume)
{
    char shown[PATH_MAX + 16], file[PATH_MAX + 32];
    struct stat st;
    if (ckdir && !resume && snprintf(file, sizeof file, "%s/%s", ckdir, LT_CKPT_FILE) < (int)sizeof file &&
        lstat(file, &st) == 0) {
        lt_ckpt_info ci;
        lt_err ignored;
        lt_str_printable(ckdir, shown, sizeof shown);
        if (lt_ckpt_read_info(file, &ci, &ignored) == LT_OK)
            fprintf(stderr, "lantern train: --checkpoint-dir %s holds the checkpoint of a run at step %lld (epoch "
                    "%lld); --resume continues it; a new run needs another folder, or that one emptied\n", shown,
                    (long long)ci.global, (long long)ci.epoch);
        else
            fprintf(stderr, "lantern train: --checkpoint-dir %s holds a file %s that a new run would replace; "
                    "give another folder, or remove it\n", shown, LT_CKPT_FILE);
        return 0;
    }
    if (stop_dir && lstat(stop_dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
        lt_str_printable(stop_dir, shown, sizeof shown);
        fprintf(stderr, "lantern train: Ctrl-C would write its checkpoint into %s, which is not a folder; give "
                "--checkpoint-dir DIR, or another -o\n", shown);
        return 0;
    }
    return 1;
}

static int cmd_train(const lt_cli_args *a)
{
    static const char *const optims[] = {"sgd", "momentum", "nesterov", "adagrad", "adam", "adamw"};
    static const char *const scheds[] = {"constant", "step", "cosine"};
    static const char *const inits[] = {"keep", "random"};
    static const char *const onoff[] = {"on", "off"};
    const char *path = a->ops[0], *out = NULL, *log_path = NULL, *plot_path = NULL;
    int resume = 0, stopped = 0;
    lt_train_opts o;
    lt_train_defaults(&o);
    lt_eval_opts eo = {NULL, 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}, 0};
    progress pr = {.tty = isatty(STDOUT_FILENO), .test = {NAN, NAN, 0, 0}, .best_value = NAN,
                   .best_test = {NAN, NAN, 0, 0}, .resume_at = -1};
    int kind = LT_OPTIM_SGD, sched = LT_SCHEDULE_CONSTANT, init = 0, nfreeze = 0, shuffle = 0;
    double lr = -1, mom = -1, wd = -1, b1 = -1, b2 = -1, eps = -1;
    int64_t iv = 0;
    const char **freeze = calloc((size_t)a->nitems + 1, sizeof *freeze);
    const char **axes = calloc((size_t)a->nitems + 1, sizeof *axes);
    lt_padding_row *pads = calloc((size_t)a->nitems + 1, sizeof *pads);
    char **pad_names = calloc((size_t)a->nitems + 1, sizeof *pad_names);
    int npads = 0;
    if (!freeze || !axes || !pads || !pad_names) {
        free(freeze);
        free(axes);
        free(pads);
        free(pad_names);
        fprintf(stderr, "lantern: out of memory\n");
        return 1;
    }
    int rc = 2;
    char log_shown[512] = "";
    for (int i = 0; i < a->nitems; i++) {
        const char *opt = a->items[i].name, *val = a->items[i].val;
        int ok = 1;
        switch ((train_opt)a->items[i].id) {
        case T_DATA:
        case T_LABEL_COLUMN:
        case T_LOSS:
        case T_OUTPUT:
        case T_MEAN:
        case T_STD: ok = data_option(opt, val, &eo); break;
        case T_OUT: out = val; break;
        case T_LOG: lt_str_printable(log_path = val, log_shown, sizeof log_shown); break;
        case T_PLOT: plot_path = val; break;
        case T_CHECKPOINT_DIR: o.checkpoint_dir = val; break;
        case T_CHECKPOINT_EVERY: ok = lt_cli_int(opt, val, 1, 1e12, &o.checkpoint_every); break;
        case T_RESUME: resume = 1; break;
        case T_EPOCHS:
            ok = lt_cli_int(opt, val, 1, 1e6, &iv);
            o.epochs = (int)iv;
            break;
        case T_BATCH: ok = lt_cli_int(opt, val, 1, 1 << 20, &o.batch); break;
        case T_OPTIMIZER: ok = lt_cli_pick(opt, val, optims, 6, &kind); break;
        case T_LR: ok = lt_cli_num(opt, val, 1e-12, 1e6, &lr); break;
        case T_MOMENTUM: ok = lt_cli_num(opt, val, 0, 0.999999, &mom); break;
        case T_WEIGHT_DECAY: ok = lt_cli_num(opt, val, 0, 1e6, &wd); break;
        case T_BETA1: ok = lt_cli_num(opt, val, 0, 0.999999, &b1); break;
        case T_BETA2: ok = lt_cli_num(opt, val, 0, 0.999999, &b2); break;
        case T_EPS: ok = lt_cli_num(opt, val, 1e-30, 1, &eps); break;
        case T_SCHEDULE: ok = lt_cli_pick(opt, val, scheds, 3, &sched); break;
        case T_WARMUP: ok = lt_cli_int(opt, val, 0, 1e12, &o.schedule.warmup); break;
        case T_STEP_SIZE: ok = lt_cli_int(opt, val, 1, 1e12, &o.schedule.step_size); break;
        case T_GAMMA: ok = lt_cli_num(opt, val, 1e-9, 1, &o.schedule.gamma); break;
        case T_CLIP_NORM: ok = lt_cli_num(opt, val, 0, 1e12, &o.clip_norm); break;
        case T_FREEZE: freeze[nfreeze++] = val; break;
        case T_NO_TIE: o.no_tie = 1; break;
        case T_TRAIN_CONSTANTS: o.train_constants = 1; break;
        case T_PADDING:
            ok = lt_cli_padding(opt, val, &pads[npads], &pad_names[npads]);
            npads += ok;
            break;
        case T_LABELS: o.labels = val; break;
        case T_AUGMENT: o.augment = val; break;
        case T_BATCH_AXIS: axes[o.nbatch_axes++] = val; break;
        case T_IGNORE_INDEX:
            ok = lt_cli_int(opt, val, -9007199254740992.0, 9007199254740992.0, &o.ignore_index);
            o.set_ignore_index = 1;
            break;
        case T_CLASS_AXIS: ok = lt_cli_class_axis(opt, val, &o.class_axis); break;
        case T_INIT: ok = lt_cli_pick(opt, val, inits, 2, &init); break;
        case T_STATS: pr.stats = 1; break;
        case T_SHUFFLE:
            ok = lt_cli_pick(opt, val, onoff, 2, &shuffle);
            o.no_shuffle = shuffle == 1;
            break;
        case T_SEED:
            ok = lt_cli_int(opt, val, 0, 9007199254740992.0, &iv);
            o.seed = (uint64_t)iv;
            break;
        case T_LIMIT: ok = lt_cli_int(opt, val, 1, 1e12, &o.limit); break;
        case T_VAL_SPLIT: ok = val_fraction(opt, val, &o.val_split); break;
        case T_SAVE_BEST: o.save_best = 1; break;
        case T_EARLY_STOP:
            ok = lt_cli_int(opt, val, 1, 1e6, &iv);
            o.early_stop = (int)iv;
            break;
        case T_TEST_LIMIT: ok = lt_cli_int(opt, val, 1, 1e12, &o.test_limit); break;
        }
        if (!ok)
            goto done; /* the parser said why */
    }
    o.data = eo.data;
    o.loss = eo.loss;
    o.output = eo.output;
    o.norm = eo.norm;
    if (!out || !o.data) {
        fprintf(stderr, "lantern train: %s (lantern help train lists the options)\n",
                !o.data ? "--data is required" : "-o OUT.onnx is required");
        goto done;
    }
    if (!data_options_fit("train", o.data, o.norm.label_column, o.labels))
        goto done;
    /* every file written must be writable before hours of training */
    if (!lt_cli_out_file(out, "-o", 0) || (plot_path && !lt_cli_out_file(plot_path, "--plot", 0)) ||
        (log_path && !lt_cli_out_file(log_path, "--log", 1)))
        goto done;
    if ((resume || o.checkpoint_every) && !o.checkpoint_dir) {
        fprintf(stderr, "lantern train: --resume and --checkpoint-every need --checkpoint-dir DIR\n");
        goto done;
    }
    if (!outputs_apart(path, o.data, o.checkpoint_dir, out, log_path, plot_path))
        goto done;
    if ((o.save_best || o.early_stop) && !(o.val_split > 0)) {
        fprintf(stderr, "lantern train: %s needs validation data: --val-split F holds out a fraction F of the "
                "training samples\n", o.save_best ? "--save-best" : "--early-stop");
        goto done;
    }
    /* without --checkpoint-dir, Ctrl-C writes its checkpoint beside -o */
    char stop_dir[PATH_MAX];
    if (!o.checkpoint_dir) {
        size_t l = strlen(out);
        if (l > 5 && !strcmp(out + l - 5, ".onnx"))
            l -= 5;
        if (snprintf(stop_dir, sizeof stop_dir, "%.*s.checkpoint", (int)l, out) < (int)sizeof stop_dir)
            o.stop_checkpoint_dir = stop_dir;
    }
    /* a new run makes its checkpoint folder (its parent must exist); a
     * resumed one reads it */
    if (o.checkpoint_dir && !lt_cli_out_dir(o.checkpoint_dir, "--checkpoint-dir", !resume))
        goto done;
    if (!checkpoint_dirs_ready(o.checkpoint_dir, o.stop_checkpoint_dir, resume))
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
    o.npadding = npads;
    o.padding = pads;
    o.batch_axes = axes;
    if (plot_path && !(pr.plot = lt_plot_new())) {
        fprintf(stderr, "lantern: out of memory\n");
        goto done;
    }
    interrupted = 0;
    pr.val = o.val_split > 0;
    if (log_path) {
        /* a resumed run continues the log of the run it resumes; a link
         * planted at the name since the check is not followed; nothing in it
         * changes before the first row (log_begin, which reads it back to
         * cut a killed run's rows after the checkpoint: read and write) */
        int fd = open(log_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_APPEND, 0666);
        pr.log = fd >= 0 ? fdopen(fd, "a") : NULL;
        if (!pr.log) {
            fprintf(stderr, "lantern: --log %s: cannot write: %s\n", log_shown, strerror(errno));
            if (fd >= 0)
                close(fd);
            goto done;
        }
        pr.log_pending = 1;
        pr.flush_every = o.checkpoint_every;
        lt_ckpt_info ci;
        lt_err ignored;
        if (resume && lt_ckpt_read_info(o.checkpoint_dir, &ci, &ignored) == LT_OK)
            pr.resume_at = ci.global;
    }
    o.on_step = on_step;
    o.on_epoch = on_epoch;
    o.on_note = on_note;
    o.user = &pr;
    printf("training %s on %s: %d epoch(s), batch %lld, %s loss, %s, lr %g%s%s, %s\n", path, o.data, o.epochs,
           (long long)o.batch, lt_loss_name(o.loss), optims[kind], o.schedule.lr,
           o.schedule.kind != LT_SCHEDULE_CONSTANT ? ", " : "", o.schedule.kind != LT_SCHEDULE_CONSTANT ? scheds[sched] : "",
           init ? "from random weights (--init random)" : "from the model's weights (--init keep)");
    if (o.val_split > 0)
        printf("validation: %g of the training samples held out (seed %llu)%s%s\n", o.val_split,
               (unsigned long long)o.seed, o.save_best ? "; -o gets the best epoch" : "",
               o.early_stop ? "; early stop on" : "");
    /* said once lt_train has taken the checkpoint (its first step or epoch,
     * or its end), never before a refusal of it */
    if (resume)
        say_resume(o.checkpoint_dir, pr.resume_line, sizeof pr.resume_line);
    fflush(stdout);
    lt_err err;
    lt_model *m = NULL;
    struct sigaction sa, old_sa;
    /* Ctrl-C: finish the step, write a checkpoint (to --checkpoint-dir, else
     * beside -o), exit 130; a second Ctrl-C (the handler resets itself) ends
     * the process at once */
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, &old_sa);
    /* set by Ctrl-C (with checkpoints) or by a failed write of the log */
    o.stop = &interrupted;
    o.stopped = &stopped;
    lt_status s = lt_train(path, &o, &m, &err);
    sigaction(SIGINT, &old_sa, NULL);
    if (s == LT_OK)
        say_pending(&pr); /* a run that was over: no step to say it at */
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
        const char *ckdir = o.checkpoint_dir ? o.checkpoint_dir : o.stop_checkpoint_dir;
        char ck_s[PATH_MAX + 16], out_s[PATH_MAX + 16];
        lt_str_printable(ckdir, ck_s, sizeof ck_s);
        lt_str_printable(out, out_s, sizeof out_s);
        fprintf(stderr, "lantern: interrupted; checkpoint written to %s/%s, %s not written (continue with the same "
                "options and --checkpoint-dir %s --resume)\n", ck_s, LT_CKPT_FILE, out_s, ck_s);
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
    int best_out = o.save_best && pr.best_epoch > 0; /* -o holds the best epoch's weights */
    if (best_out && pr.best_measured != pr.best_epoch && pr.test.count > 0) {
        /* the best epoch ran before a resume: its weights, now in m, are
         * scored on the test split again */
        lt_eval_opts te = {o.data,           o.test_limit,     o.loss,          o.output,    o.norm, 0,
                           o.set_ignore_index, o.ignore_index, o.class_axis};
        lt_eval_result r;
        /* lt_model_evaluate takes no --labels, --batch-axis or --padding-idx:
         * with those, no figure rather than another one */
        if (!o.labels && !o.nbatch_axes && !o.npadding &&
            lt_model_evaluate(m, &te, &r, &err) == LT_OK) {
            pr.best_test = r;
            pr.best_measured = pr.best_epoch;
        }
    }
    lt_model_free(m);
    if (best_out) {
        char early[64] = "";
        if (pr.stopped_early)
            snprintf(early, sizeof early, " run (stopped early; %d asked)", o.epochs);
        printf("wrote %s: the weights of epoch %d of %d%s, the best validation %s (%.4f)\n", out, pr.best_epoch,
               pr.last_epoch, early, pr.val_accuracy ? "accuracy" : "loss", pr.best_value);
    } else {
        printf("wrote %s\n", out);
    }
    if (o.norm.nmean || o.norm.nstd)
        printf("normalisation stored in %s (metadata_props %s, %s): lantern eval and predict apply it\n", out,
               LT_META_MEAN, LT_META_STD);
    if (plot_path)
        printf("wrote %s\n", plot_path);
    /* the test figures of the epoch whose weights were written */
    lt_eval_result none = {0};
    const lt_eval_result *t = !best_out ? &pr.test : pr.best_measured == pr.best_epoch ? &pr.best_test : &none;
    if (t->has_accuracy)
        printf("test accuracy: %.4f\n", t->accuracy);
    else if (t->count > 0)
        printf("test loss: %.6f\n", t->loss);
    rc = 0;
done:
    log_close(&pr);
    lt_plot_free(pr.plot);
    free(freeze);
    for (int i = 0; i < npads; i++)
        free(pad_names[i]);
    free(pads);
    free(pad_names);
    free(axes);
    return rc;
}

#define EVAL_OPTIONS(X)                                                                                              \
    DATA_OPTIONS(X, V, "fashion-mnist")                                                                              \
    X(V_LIMIT, "--limit", "N", "score the first N test samples only", "all", 0)                                      \
    X(V_IGNORE_INDEX, "--ignore-index", "I", "softmax-cross-entropy, nll: labels equal to I count for nothing",       \
      "-100", 0)                                                                                                     \
    X(V_CLASS_AXIS, "--class-axis", "K", LT_CLASS_AXIS_HELP, "the one the labels' shape fits", 0)                        \
    X(V_NO_MODEL_NORM, "--no-model-norm", NULL, "ignore the --mean/--std stored in MODEL by lantern train", NULL, 0)   \
    X(V_JSON, "--json", NULL, "write the result as one JSON object", NULL, 0)
typedef enum { EVAL_OPTIONS(LT_OPT_ENUM) } eval_opt;
static const lt_cli_opt eval_opts[] = {EVAL_OPTIONS(LT_OPT_ROW){0, NULL, NULL, NULL, NULL, 0}};

/* the list, or null when there is none */
static void json_list(lt_json *j, int n, const double *v)
{
    if (!n) {
        lt_json_null(j);
        return;
    }
    lt_json_open(j, '[');
    for (int i = 0; i < n; i++)
        lt_json_num(j, v[i]);
    lt_json_close(j, ']');
}

static int cmd_eval(const lt_cli_args *a)
{
    const char *path = a->ops[0];
    int json = 0;
    lt_eval_opts eo = {"fashion-mnist", 0, LT_LOSS_SOFTMAX_CROSS_ENTROPY, NULL, {0}, 0};
    for (int i = 0; i < a->nitems; i++) {
        const char *opt = a->items[i].name, *val = a->items[i].val;
        int ok = 1;
        switch ((eval_opt)a->items[i].id) {
        case V_DATA:
        case V_LABEL_COLUMN:
        case V_LOSS:
        case V_OUTPUT:
        case V_MEAN:
        case V_STD: ok = data_option(opt, val, &eo); break;
        case V_LIMIT: ok = lt_cli_int(opt, val, 1, 1e12, &eo.limit); break;
        case V_IGNORE_INDEX:
            ok = lt_cli_int(opt, val, -9007199254740992.0, 9007199254740992.0, &eo.ignore_index);
            eo.set_ignore_index = 1;
            break;
        case V_CLASS_AXIS: ok = lt_cli_class_axis(opt, val, &eo.class_axis); break;
        case V_NO_MODEL_NORM: eo.no_model_norm = 1; break;
        case V_JSON: json = 1; break;
        }
        if (!ok)
            return 2;
    }
    if (!data_options_fit("eval", eo.data, eo.norm.label_column, NULL))
        return 2;
    lt_err err;
    lt_model *m = NULL;
    lt_eval_result r;
    lt_status s = lt_model_load(path, &m, &err);
    /* the normalisation used: the options', else what the model stored */
    lt_dataset_opts given = eo.norm;
    if (s == LT_OK && !eo.no_model_norm)
        s = lt_norm_fill_from_model(m, &eo.norm, &err);
    eo.no_model_norm = 1;
    if (s == LT_OK)
        s = lt_model_evaluate(m, &eo, &r, &err);
    lt_model_free(m);
    if (s != LT_OK) {
        fprintf(stderr, "lantern: %s\n", err.msg);
        return lt_exit_code(s);
    }
    int stored = eo.norm.nmean != given.nmean || eo.norm.nstd != given.nstd;
    if (json) {
        lt_json j;
        lt_json_init(&j, stdout);
        lt_json_open(&j, '{');
        lt_json_key(&j, "model");
        lt_json_str(&j, path);
        lt_json_key(&j, "data");
        lt_json_str(&j, eo.data);
        lt_json_key(&j, "loss_function");
        lt_json_str(&j, lt_loss_name(eo.loss ? eo.loss : LT_LOSS_SOFTMAX_CROSS_ENTROPY));
        lt_json_key(&j, "output");
        lt_json_str(&j, eo.output);
        lt_json_key(&j, "mean");
        json_list(&j, eo.norm.nmean, eo.norm.mean);
        lt_json_key(&j, "std");
        json_list(&j, eo.norm.nstd, eo.norm.std);
        lt_json_key(&j, "normalisation_from_model");
        lt_json_bool(&j, stored);
        lt_json_key(&j, "samples");
        lt_json_int(&j, r.count);
        lt_json_key(&j, "loss");
        lt_json_num(&j, r.loss);
        lt_json_key(&j, "accuracy");
        if (r.has_accuracy)
            lt_json_num(&j, r.accuracy);
        else
            lt_json_null(&j);
        lt_json_key(&j, "correct");
        if (r.has_accuracy)
            lt_json_int(&j, (int64_t)llround(r.accuracy * (double)r.count));
        else
            lt_json_null(&j);
        lt_json_close(&j, '}');
        return 0;
    }
    lt_cli_print_norm(&eo.norm, stored, path);
    printf("test samples: %lld\n", (long long)r.count);
    printf("loss: %.6f\n", r.loss);
    if (r.has_accuracy)
        printf("accuracy: %.4f\n", r.accuracy);
    return 0;
}

const lt_cli_cmd lt_cli_train = {
    "train", "MODEL --data SPEC -o OUT.onnx [options]",
    "train a model on a dataset and write its trained weights into a copy of it", "MODEL", 1, 1,
    "SPEC: fashion-mnist[=DIR] (IDX, gzip; default DIR: Debian's dataset-fashion-mnist) | mnist=DIR |\n"
    "      cifar10=DIR (binary batches) | npz=FILE (x, y, optionally x_test, y_test) |\n"
    "      onnx-pb=DIR (TensorProto x.pb, y.pb, optionally x_test.pb, y_test.pb) |\n"
    "      csv=TRAIN.csv[,TEST.csv] (rows of numbers; a first row of names is a header; the label is\n"
    "      the last column or --label-column; labels written as integers are classes, others targets) |\n"
    "      npy=X.npy,Y.npy[,X_TEST.npy,Y_TEST.npy] (samples and labels as .npy files) |\n"
    "      images=DIR[,TEST_DIR] (DIR/<class>/<image>: PNG, JPEG, BMP, PNM, TIFF, WebP, JPEG 2000, one size;\n"
    "      sorted class folders are the labels; DIR/train and DIR/test are the splits when both exist)\n"
    "8-bit pixels are scaled to [0,1], then (x - mean) / std. Float samples may be float16, bfloat16\n"
    "(ml_dtypes' .npy), float32 or float64. Integer y are class labels, float y targets. An npz (or npy\n"
    "pair) whose arrays are named like the model's inputs feeds each input its array, in the type it\n"
    "declares.\n"
    "A MODEL with external data, or one past 2 GiB, is written with its initializers of 1 KiB or more\n"
    "in OUT.onnx.data beside OUT.onnx (offsets 4096-aligned); smaller ones stay inline.\n"
    "--mean/--std are stored in OUT.onnx (metadata_props lantern.mean, lantern.std) and\n"
    "lantern eval and predict apply them; a MODEL that stores them trains with them unless given.\n"
    "--init keep trains the weights MODEL holds (fine-tuning, or PyTorch's initialisation as\n"
    "exported); --init random replaces every float weight first, seeded by --seed: He-uniform\n"
    "(bound sqrt(6 / fan_in)) where a Conv, Gemm or MatMul tells the fan-in, Glorot-uniform\n"
    "elsewhere, biases zero, normalization scales one: training from scratch.\n"
    "--val-split F scores the held-out samples after every epoch (val loss and accuracy beside the\n"
    "test figures, in --log and --plot); --save-best writes the best epoch's weights and says which;\n"
    "--early-stop N ends the run after N epochs without a better validation figure.\n"
    "Ctrl-C finishes the step, writes a checkpoint to --checkpoint-dir (without one, to\n"
    "OUT.checkpoint/ beside -o OUT.onnx; OUT.onnx is not written) and exits 130; continue with the same\n"
    "options and --checkpoint-dir DIR --resume. A second Ctrl-C ends it at once.\n",
    train_opts, cmd_train, true};

const lt_cli_cmd lt_cli_eval = {
    "eval", "MODEL [--data SPEC] [options]",
    "test-split loss (the training loss's definition) and accuracy for class labels", "MODEL", 1, 1, NULL,
    eval_opts, cmd_eval, true};
