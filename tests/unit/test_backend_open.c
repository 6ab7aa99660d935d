/* Opening backends by name (runtime/backend.h): cpu and cpu-device always;
 * cuda and cuda:N where lantern was built with CUDA and a device is
 * present, else one clear line saying which of the two is missing; bad
 * names refused. The command given LANTERN_BACKEND=cuda on a machine
 * without a GPU (or a lantern without CUDA) exits with one line on stderr,
 * never a crash. */
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define LANTERN LT_BINARY_DIR "/lantern"
#define MODELS LT_SOURCE_DIR "/models/"

static void one_line(const char *msg)
{
    assert_true(msg[0] != 0);
    assert_null(strchr(msg, '\n'));
}

static void test_names(void **state)
{
    (void)state;
    lt_err err;
    const lt_backend *be = lt_backend_open("cpu", &err);
    assert_non_null(be);
    assert_string_equal(be->name, "cpu");
    be = lt_backend_open("cpu-device", &err);
    assert_non_null(be);
    assert_string_equal(be->name, "cpu-device");
    assert_null(lt_backend_open("tpu", &err));
    one_line(err.msg);
    assert_non_null(strstr(err.msg, "names no backend"));
    assert_null(lt_backend_open("cuda:x", &err));
    assert_non_null(strstr(err.msg, "cuda or cuda:N"));
    assert_null(lt_backend_open("cuda:", &err));
    assert_null(lt_backend_open("cudax", &err));
    assert_null(lt_backend_named("tpu"));
}

static void test_cuda(void **state)
{
    (void)state;
    lt_err err;
    const lt_backend *be = lt_backend_open("cuda", &err);
    if (be) { /* built with CUDA, a device present */
        assert_string_equal(be->name, "cuda");
        assert_false(be->host);
        assert_ptr_equal(lt_backend_named("cuda:0"), be);
        return;
    }
    one_line(err.msg);
#ifdef LANTERN_HAVE_CUDA
    assert_non_null(strstr(err.msg, "cannot run here"));
#else
    assert_non_null(strstr(err.msg, "built without the cuda backend"));
#endif
    assert_null(lt_backend_named("cuda"));
    assert_null(lt_backend_cuda(0, &err));
    one_line(err.msg);
    /* the environment's choice says where it came from */
    setenv("LANTERN_BACKEND", "cuda", 1);
    assert_null(lt_backend_from_env(&err));
    one_line(err.msg);
    assert_int_equal(strncmp(err.msg, "LANTERN_BACKEND=cuda: ", 22), 0);
    unsetenv("LANTERN_BACKEND");
}

/* lantern run with LANTERN_BACKEND=cuda: exit 0 on a GPU, else exit 2 with
 * one line on stderr. */
static void test_cli(void **state)
{
    (void)state;
    lt_err err;
    bool have = lt_backend_open("cuda", &err) != NULL;
    char out[] = "/tmp/lt_backend_open_XXXXXX";
    int fd = mkstemp(out);
    assert_true(fd >= 0);
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "LANTERN_BACKEND=cuda %s run %smlp.onnx --input x=%sref/x8_flat.npy >/dev/null 2>%s", LANTERN, MODELS,
             MODELS, out);
    int rc = system(cmd);
    assert_true(WIFEXITED(rc));
    FILE *f = fdopen(fd, "r");
    assert_non_null(f);
    char line[2048];
    int lines = 0;
    bool named = false;
    while (fgets(line, sizeof line, f)) {
        lines++;
        named = named || strstr(line, "LANTERN_BACKEND=cuda") != NULL;
    }
    fclose(f);
    unlink(out);
    if (have) {
        assert_int_equal(WEXITSTATUS(rc), 0);
    } else {
        assert_int_equal(WEXITSTATUS(rc), 2);
        assert_int_equal(lines, 1);
        assert_true(named);
    }
}

int main(void)
{
    unsetenv("LANTERN_BACKEND"); /* this suite picks its own */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_cuda),
        cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
