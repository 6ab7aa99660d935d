/* Opens files for reading with O_NONBLOCK first, so that a FIFO without a
 * writer cannot stall the open, then refuses whatever fstat does not call a
 * regular file before a single byte is read. */
#include "open_read.h"
#include "../ir/ir.h"
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static const char *file_kind(mode_t m)
{
    if (S_ISFIFO(m))
        return "a FIFO";
    if (S_ISDIR(m))
        return "a directory";
    if (S_ISCHR(m))
        return "a character device";
    if (S_ISBLK(m))
        return "a block device";
    if (S_ISSOCK(m))
        return "a socket";
    return "not a plain file";
}

int lt_open_read(const char *path, struct stat *st, lt_err *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        lt_errf(err, LT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        lt_errf(err, LT_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(sb.st_mode)) {
        lt_errf(err, LT_ERR_IO, "%s: not a regular file (%s)", path, file_kind(sb.st_mode));
        close(fd);
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0) {
        lt_errf(err, LT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (st)
        *st = sb;
    return fd;
}

FILE *lt_fopen_read(const char *path, struct stat *st, lt_err *err)
{
    int fd = lt_open_read(path, st, err);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        lt_errf(err, LT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
        close(fd);
    }
    return f;
}
