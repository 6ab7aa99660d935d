/* Opening a file for reading without trusting what the path names
 * (open_read.c). A FIFO, a terminal or a device would block a plain
 * open() or read() forever or hand over endless bytes; every reader in the
 * library (models, external data, tensor files, datasets, checkpoints)
 * opens through here so that only regular files are read. */
#ifndef LT_OPEN_READ_H
#define LT_OPEN_READ_H

#include "lantern.h"
#include <stdio.h>
#include <sys/stat.h>

/* A read-only, close-on-exec descriptor for the regular file at path, in
 * blocking mode; st (when not NULL) receives its fstat. Anything else (a
 * FIFO, a directory, a device, a socket) or a failed open returns -1 with
 * one line in err naming path (LT_ERR_IO); the open itself never waits. */
int lt_open_read(const char *path, struct stat *st, lt_err *err);
/* The same as a stdio stream ("rb"); NULL with err set on failure. */
FILE *lt_fopen_read(const char *path, struct stat *st, lt_err *err);

#endif
