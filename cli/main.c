/* The lantern command: dispatch to subcommands. */
#include "cli.h"
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f)
{
    fprintf(f,
            "usage: lantern <command> [options]   (lantern --version prints the version)\n"
            "  import MODEL [--print]                 summarize an ONNX model (exit 2 if it has unsupported ops)\n"
            "  run MODEL --input NAME=FILE... [--output-dir DIR]\n"
            "                                         run a model on .npy/.pb inputs\n"
            "  grad MODEL --input NAME=FILE... [--loss L [--labels FILE | --targets FILE]] [--output NAME]\n"
            "       [--seed OUTPUT=FILE]... [--wrt-inputs] [--output-dir DIR] [--print] [--check]\n"
            "                                         gradients of a loss with respect to the parameters\n"
            "  check [--expect FILE] PATH...          run ONNX backend test cases\n"
            "  predict MODEL [--data SPEC] [--count N] classify test images (default fashion-mnist)\n"
            "  train MODEL --data SPEC -o OUT.onnx [--epochs E] [--batch B] [--optimizer NAME] [--lr LR] ...\n"
            "                                         train a model (see lantern train), write its weights into OUT.onnx\n"
            "  eval MODEL [--data SPEC] [--loss L] [--output NAME] [--limit N]\n"
            "                                         test loss (and accuracy for class labels)\n"
            "  export CHECKPOINT --model MODEL -o OUT.onnx\n"
            "                                         write the model again with a training checkpoint's weights\n"
            "  export MODEL [--weights DIR] -o OUT.onnx\n"
            "                                         write the model again with parameters from DIR/*.npy\n");
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

int main(int argc, char **argv)
{
    const char *threads = getenv("LANTERN_THREADS");
    lt_set_num_threads(threads ? atoi(threads) : 0);
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "import") == 0)
        return lt_cmd_import(argc - 1, argv + 1);
    if (strcmp(cmd, "run") == 0)
        return lt_cmd_run(argc - 1, argv + 1);
    if (strcmp(cmd, "grad") == 0)
        return lt_cmd_grad(argc - 1, argv + 1);
    if (strcmp(cmd, "predict") == 0)
        return lt_cmd_predict(argc - 1, argv + 1);
    if (strcmp(cmd, "check") == 0)
        return lt_cmd_check(argc - 1, argv + 1);
    if (strcmp(cmd, "train") == 0)
        return lt_cmd_train(argc - 1, argv + 1);
    if (strcmp(cmd, "eval") == 0)
        return lt_cmd_eval(argc - 1, argv + 1);
    if (strcmp(cmd, "export") == 0)
        return lt_cmd_export(argc - 1, argv + 1);
    if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
        printf("lantern %s\n", lt_version());
        return 0;
    }
    if (strcmp(cmd, "-h") == 0 || strcmp(cmd, "--help") == 0 || strcmp(cmd, "help") == 0) {
        usage(stdout);
        return 0;
    }
    fprintf(stderr, "lantern: unknown command '%s'\n", cmd);
    usage(stderr);
    return 2;
}
