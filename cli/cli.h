/* The lantern command's subcommands. */
#ifndef LT_CLI_H
#define LT_CLI_H

#include "include/lantern.h"

/* Exit codes: 0 ok, 1 runtime failure, 2 bad usage or invalid input. */
int lt_exit_code(lt_status s);
int lt_cmd_import(int argc, char **argv);
int lt_cmd_run(int argc, char **argv);
int lt_cmd_check(int argc, char **argv);
int lt_cmd_predict(int argc, char **argv);
int lt_cmd_grad(int argc, char **argv);
int lt_cmd_train(int argc, char **argv);
int lt_cmd_eval(int argc, char **argv);
int lt_cmd_export(int argc, char **argv);
/* characters outside [A-Za-z0-9._-] become _ */
void lt_cli_sanitize(const char *name, char *out, size_t len);

#endif
