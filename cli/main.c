/* The lantern command: the list of subcommands, `lantern help [CMD]`, and
 * dispatch to a subcommand through its option table (cli/options.c). */
#include "options.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const lt_cli_cmd *const commands[] = {&lt_cli_import, &lt_cli_run,  &lt_cli_check,   &lt_cli_grad,
                                             &lt_cli_train,  &lt_cli_eval, &lt_cli_predict, &lt_cli_export};
#define NCOMMANDS (int)(sizeof commands / sizeof *commands)

static void usage(FILE *f)
{
    fprintf(f, "usage: lantern <command> [options]\n\ncommands:\n");
    for (int i = 0; i < NCOMMANDS; i++)
        fprintf(f, "  %-9s %s\n", commands[i]->name, commands[i]->summary);
    fprintf(f, "\n`lantern help COMMAND` (or `lantern COMMAND --help`) lists a command's options with their\n"
               "meanings and defaults; --threads N goes with every command. `lantern --version` prints the "
               "version.\n"
               "run, grad, train, eval and predict take --device cpu|cuda[:N] (the GPU, with a lantern built\n"
               "with the cuda backend), --tf32 and --cudnn-benchmark on|off.\n");
}

int lt_exit_code(lt_status s)
{
    switch (s) {
    case LT_OK: return 0;
    case LT_ERR_INVALID:
    case LT_ERR_UNSUPPORTED:
    case LT_ERR_IO: return 2;
    case LT_ERR_INTERRUPTED: return 130;
    default: return 1;
    }
}

static const lt_cli_cmd *command(const char *name)
{
    for (int i = 0; i < NCOMMANDS; i++)
        if (!strcmp(commands[i]->name, name))
            return commands[i];
    return NULL;
}

static int unknown_command(const char *name)
{
    const char *names[NCOMMANDS + 2];
    for (int i = 0; i < NCOMMANDS; i++)
        names[i] = commands[i]->name;
    names[NCOMMANDS] = "help";
    names[NCOMMANDS + 1] = "--version";
    const char *near = lt_cli_nearest(name, names, NCOMMANDS + 2);
    char shown[512];
    lt_str_printable(name, shown, sizeof shown);
    if (near)
        fprintf(stderr, "lantern: unknown command '%s' (did you mean %s?)\n", shown, near);
    else
        fprintf(stderr, "lantern: unknown command '%s' (lantern help lists the commands)\n", shown);
    return 2;
}

/* OpenMP's threads spin between parallel regions by default; on a machine
 * whose other cores are busy, the spinning threads take the time the
 * working ones need (a forward pass 10x slower with 2 threads than with 1).
 * Waiting passively costs a wake-up per region instead. libgomp reads the
 * policy once, as it loads, so when the user has not chosen one the
 * command starts itself again with it set. */
static void wait_passively(char **argv)
{
    if (getenv("OMP_WAIT_POLICY"))
        return;
    if (setenv("OMP_WAIT_POLICY", "passive", 1) != 0)
        return;
    execv("/proc/self/exe", argv);
    /* no /proc: go on with the default policy */
}

int main(int argc, char **argv)
{
    wait_passively(argv);
    const char *threads = getenv("LANTERN_THREADS");
    lt_set_num_threads(threads ? atoi(threads) : 0);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *name = argv[1];
    const lt_cli_cmd *cmd = command(name);
    if (cmd)
        return lt_cli_dispatch(cmd, argc - 1, argv + 1);
    if (!strcmp(name, "--version") || !strcmp(name, "version")) {
        printf("lantern %s\n", lt_version());
        return 0;
    }
    if (!strcmp(name, "--list-commands")) { /* hidden: for the tests */
        for (int i = 0; i < NCOMMANDS; i++)
            printf("%s\n", commands[i]->name);
        return 0;
    }
    if (!strcmp(name, "-h") || !strcmp(name, "--help") || !strcmp(name, "help")) {
        if (argc > 2 && strcmp(name, "help") == 0) {
            if (!(cmd = command(argv[2])))
                return unknown_command(argv[2]);
            lt_cli_help(cmd, stdout);
            return 0;
        }
        usage(stdout);
        return 0;
    }
    return unknown_command(name);
}
