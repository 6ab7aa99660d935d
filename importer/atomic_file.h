/* Files replaced atomically (atomic_file.c): written to a temp file
 * in the target's folder, flushed to disk, renamed over the target, and the
 * folder synced, so a reader sees the old file or the whole new one and a
 * crash never leaves a part. Used by the exporter, checkpoints and plots. */
#ifndef LT_ATOMIC_FILE_H
#define LT_ATOMIC_FILE_H

#include "lantern.h"
#include <stdio.h>

typedef struct lt_atomic_file {
    FILE *f; /* write here */
    char *tmp;
    char *path;
} lt_atomic_file;

/* Creates the temp file next to path (permissions as a new file gets). */
lt_status lt_atomic_open(lt_atomic_file *a, const char *path, lt_err *err);
/* Flushes, syncs, closes and renames; on failure the temp file is removed
 * and the message names path and `what` (e.g. "the checkpoint"). */
lt_status lt_atomic_commit(lt_atomic_file *a, const char *what, lt_err *err);
/* Drops the temp file (after a failure while writing). */
void lt_atomic_abort(lt_atomic_file *a);
/* The whole of data as path, atomically. */
lt_status lt_write_atomic(const char *path, const void *data, size_t len, const char *what, lt_err *err);

#endif
