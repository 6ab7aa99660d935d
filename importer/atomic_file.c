/* Atomic file replacement: temp file, fsync, rename, folder fsync. */
#include "atomic_file.h"
#include "../ir/ir.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void release(lt_atomic_file *a)
{
    free(a->tmp);
    free(a->path);
    a->tmp = a->path = NULL;
    a->f = NULL;
}

lt_status lt_atomic_open(lt_atomic_file *a, const char *path, lt_err *err)
{
    memset(a, 0, sizeof *a);
    size_t pl = strlen(path);
    a->tmp = malloc(pl + 16);
    a->path = malloc(pl + 1);
    if (!a->tmp || !a->path) {
        release(a);
        return lt_errf(err, LT_ERR_NOMEM, "out of memory");
    }
    memcpy(a->path, path, pl + 1);
    snprintf(a->tmp, pl + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(a->tmp);
    if (fd < 0) {
        int e = errno;
        release(a);
        return lt_errf(err, LT_ERR_IO, "%s: cannot create a file next to it: %s", path, strerror(e));
    }
    /* mkstemp makes 0600; a new file would get 0666 less the umask */
    mode_t um = umask(0);
    umask(um);
    a->f = fchmod(fd, 0666 & ~um) == 0 ? fdopen(fd, "wb") : NULL;
    if (!a->f) {
        int e = errno;
        close(fd);
        unlink(a->tmp);
        release(a);
        return lt_errf(err, LT_ERR_IO, "%s: cannot write: %s", path, strerror(e));
    }
    return LT_OK;
}

void lt_atomic_abort(lt_atomic_file *a)
{
    if (a->f)
        fclose(a->f);
    if (a->tmp)
        unlink(a->tmp);
    release(a);
}

lt_status lt_atomic_commit(lt_atomic_file *a, const char *what, lt_err *err)
{
    errno = 0;
    int bad = ferror(a->f) || fflush(a->f) != 0 || fsync(fileno(a->f)) != 0;
    int e = errno;
    bad |= fclose(a->f) != 0;
    a->f = NULL;
    if (!bad && rename(a->tmp, a->path) != 0) {
        e = errno;
        bad = 1;
    }
    if (bad) {
        unlink(a->tmp);
        lt_status s = lt_errf(err, LT_ERR_IO, "%s: cannot write %s: %s", a->path, what, strerror(e ? e : EIO));
        release(a);
        return s;
    }
    /* the rename itself is durable once the folder is synced */
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", a->path);
    int dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    release(a);
    return LT_OK;
}

lt_status lt_write_atomic(const char *path, const void *data, size_t len, const char *what, lt_err *err)
{
    lt_atomic_file a;
    lt_status s = lt_atomic_open(&a, path, err);
    if (s != LT_OK)
        return s;
    if (len && fwrite(data, 1, len, a.f) != len) {
        int e = errno;
        lt_atomic_abort(&a);
        return lt_errf(err, LT_ERR_IO, "%s: cannot write %s: %s", path, what, strerror(e ? e : EIO));
    }
    return lt_atomic_commit(&a, what, err);
}
