/* The lantern command's shared helpers. Each subcommand is an lt_cli_cmd
 * (cli/options.h) whose one option table feeds both its parser and its
 * help: adding an option is one line in that table plus its case in the
 * command's switch (the compiler names a case that is missing). */
#ifndef LT_CLI_H
#define LT_CLI_H

#include "include/lantern.h"

/* Exit codes: 0 ok, 1 runtime failure, 2 bad usage or invalid input. */
int lt_exit_code(lt_status s);
/* `lantern import --json` (cli/import_json.c): writes the model's summary
 * as one JSON object; returns how many nodes lantern cannot run. */
int lt_cli_import_json(const lt_model *m, FILE *f);
/* characters outside [A-Za-z0-9._-] become _ */
void lt_cli_sanitize(const char *name, char *out, size_t len);

/* Checks before any work (cli/outputs.c); each prints one line on failure
 * and returns 0. A file lantern writes (opt names the option): not a folder,
 * symbolic link or device, in a writable folder; stream_ok lets a character
 * device or FIFO through (a log written in place, never replaced). */
int lt_cli_out_file(const char *path, const char *opt, int stream_ok);
/* A writable folder, created first when create is set. */
int lt_cli_out_dir(const char *dir, const char *opt, int create);
/* Whether a and b name the same file: one inode where both exist, else
 * the same name in the same folder (a file not written yet). */
int lt_cli_same_file(const char *a, const char *b);
/* The file path that opt writes must be none of the n files others[i]
 * (NULL entries skipped) the command reads or writes as what[i]; else one
 * line naming both uses, and 0. */
int lt_cli_out_distinct(const char *path, const char *opt, const char *const *others, const char *const *what, int n);
/* The data file a model written to out may take (out + ".data", for
 * external data: importer/export_external.h) must be none of others[i]
 * either; else one line naming the three, and 0. */
int lt_cli_out_data_distinct(const char *out, const char *opt, const char *const *others, const char *const *what,
                             int n);
/* --mean / --std: one number or up to max comma-separated ones into v (*n
 * of them); 0 after a line saying why not. */
int lt_cli_norm_arg(const char *opt, const char *s, int *n, double *v, int max);
/* "normalisation: (x - mean) / std with mean M, std S" (saying when the
 * model stored them); nothing when there is none. */
void lt_cli_print_norm(const lt_dataset_opts *n, int stored, const char *model);
/* No two of names map to the same DIR/<sanitized>.npy (`what`: "parameters"). */
int lt_cli_npy_names_distinct(const char *const *names, int n, const char *what, const char *dir);
/* name is not among names[0..n) already (a repeated --input NAME=...). */
int lt_cli_input_once(const char *const *names, int n, const char *name, const char *cmd, const char *opt);

#endif
