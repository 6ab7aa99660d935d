/* Each subcommand's options as one static table that both the parser and
 * the help text read (cli/options.c), so the two cannot drift apart.
 *
 * A command lists its options in an X-macro,
 *
 *     #define TRAIN_OPTIONS(X)                                                    \
 *         X(T_EPOCHS, "--epochs", "E", "passes over the training data", "1", 0) \
 *         ...
 *     typedef enum { TRAIN_OPTIONS(LT_OPT_ENUM) } train_opt;
 *     static const lt_cli_opt train_opts[] = {TRAIN_OPTIONS(LT_OPT_ROW) {0}};
 *
 * and handles the parsed options in a switch over that enum with no default
 * case, so -Wswitch (an error under LANTERN_WERROR) names an option the
 * table has and the command does not handle. Adding an option is one X line
 * plus its case. Two adjacent rows with the same id are one option under two
 * names ("-o" and "--output"): the second comes from a second macro that
 * the enum skips (EXPORT_OPTIONS(LT_OPT_ENUM, LT_OPT_SKIP)). --threads N, -h/--help and the hidden
 * --list-options (every name the parser accepts, for the tests) belong to
 * every command and are handled here. */
#ifndef LT_CLI_OPTIONS_H
#define LT_CLI_OPTIONS_H

#include "cli.h"
#include <stdbool.h>

enum {
    LT_OPT_REPEAT = 1, /* may be given more than once (each one is kept) */
};

typedef struct lt_cli_opt {
    int id;           /* the command's enum value */
    const char *name; /* "--epochs" or "-o" */
    const char *arg;  /* the value's placeholder ("E"); NULL: a flag taking no value */
    const char *help; /* what it means */
    const char *def;  /* the default as shown in the help; NULL: none */
    unsigned flags;
} lt_cli_opt;

#define LT_OPT_ENUM(id, name, arg, help, def, flags) id,
#define LT_OPT_ROW(id, name, arg, help, def, flags) {id, name, arg, help, def, flags},
#define LT_OPT_SKIP(id, name, arg, help, def, flags)

/* One option as given, in command-line order. */
typedef struct lt_cli_item {
    int id;
    const char *name; /* the table's name for it, for messages */
    char *val;        /* points into argv (writable); NULL for a flag */
} lt_cli_item;

typedef struct lt_cli_args {
    int nitems;
    lt_cli_item *items;
    int nops;
    char **ops; /* the operands (MODEL, PATH...), in order */
} lt_cli_args;

typedef struct lt_cli_cmd {
    const char *name;     /* "train" */
    const char *synopsis; /* after "lantern train ": "MODEL --data SPEC -o OUT.onnx [options]" */
    const char *summary;  /* one line, for `lantern help` */
    const char *operand;  /* what an operand is ("MODEL"), for messages */
    int min_ops, max_ops; /* how many operands; max_ops -1: any number */
    const char *notes;    /* printed after the options (NULL: none) */
    const lt_cli_opt *opts; /* ends with a row whose name is NULL */
    int (*run)(const lt_cli_args *a);
    bool device; /* takes --device, --tf32 and --cudnn-benchmark (cli/device.c) */
} lt_cli_cmd;

/* Every command, in the order `lantern help` lists them (cli/main.c). */
extern const lt_cli_cmd lt_cli_import, lt_cli_run, lt_cli_check, lt_cli_grad, lt_cli_train, lt_cli_eval,
    lt_cli_predict, lt_cli_export;

/* Parses argv (argv[0] is the command's name) against cmd's table and runs
 * cmd->run; returns the exit code. Usage errors print one line and give 2;
 * --help prints the help and gives 0 without running anything. */
int lt_cli_dispatch(const lt_cli_cmd *cmd, int argc, char **argv);

/* The help of one command (every option with its meaning and default). */
void lt_cli_help(const lt_cli_cmd *cmd, FILE *f);

/* The device options (--device, --tf32, --cudnn-benchmark), taken by the
 * commands whose `device` is set; their ids lie below any command's. */
enum { LT_CLI_DEVICE_IDS = -200 }; /* the device options' ids: this and below */
extern const lt_cli_opt lt_cli_device_opts[];
typedef struct lt_cli_device {
    const char *device; /* --device's value; NULL: not given */
    int tf32;           /* --tf32 given */
    int benchmark;      /* --cudnn-benchmark: -1 not given, 0 off, 1 on */
} lt_cli_device;
/* Takes one device option (id, value) into d; 0 (after one line on stderr)
 * for a bad value. */
int lt_cli_device_opt(const lt_cli_cmd *cmd, int id, const char *val, lt_cli_device *d);
/* Makes the sessions the command opens run on d's backend (LANTERN_BACKEND,
 * LANTERN_TF32, LANTERN_CUDNN_BENCHMARK); 0 (after one line on stderr)
 * when that backend cannot run here. */
int lt_cli_device_apply(const lt_cli_cmd *cmd, const lt_cli_device *d);

/* Edit distance of a and b (Levenshtein, bytes), capped at 99. */
int lt_cli_edit_distance(const char *a, const char *b);

/* The nearest of n names to s, or NULL when none is near enough to be what
 * the user meant. */
const char *lt_cli_nearest(const char *s, const char *const *names, int n);

/* Whole-argument numbers for option values; each prints one line naming the
 * option and returns 0 on a bad value. */
int lt_cli_num(const char *opt, const char *s, double lo, double hi, double *out);
int lt_cli_int(const char *opt, const char *s, double lo, double hi, int64_t *out);
/* --class-axis: 1 or -1 (lt_train_opts.class_axis). */
int lt_cli_class_axis(const char *opt, const char *s, int *out);
#define LT_CLASS_AXIS_HELP                                                                                           \
    "softmax-cross-entropy, nll on an output of rank >= 3: the classes' axis, 1 ([N,C,H,W], as PyTorch's losses "    \
    "read it) or -1 (the last, [N,T,C])"
/* s must be one of names[0..n); *out receives its index. */
int lt_cli_pick(const char *opt, const char *s, const char *const *names, int n, int *out);
/* --padding-idx's help (lantern train and lantern grad) */
#define LT_PADDING_IDX_HELP                                                                                          \
    "an embedding's padding row, as PyTorch's padding_idx: its lookups (Gather along axis 0 of PARAM) send no "     \
    "gradient to ROW (negative: from the end)"

/* --no-tie (train, grad) */
#define LT_NO_TIE_HELP                                                                                               \
    "keep an initializer that holds exactly the transpose of another (torch's dynamo exporter's folded copy of a "   \
    "tied weight) a parameter of its own instead of that one tensor read transposed"

/* "NAME=ROW" (split at the last '='; ROW a whole number, negative from the
 * end): an embedding's padding row. s is borrowed: out->param points into
 * a copy the caller frees through *owned. */
int lt_cli_padding(const char *opt, const char *s, lt_padding_row *out, char **owned);

#endif
