/* libFuzzer target for the importer: any byte string given to
 * lt_model_load_buffer must come back as a model or as a status with a
 * one-line message, never as a crash, a leak or undefined behaviour.
 * External data is off (base_dir NULL), as for a model read from memory. */
#include "lantern.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lt_err err;
    lt_model *m = NULL;
    err.msg[0] = 0;
    lt_status st = lt_model_load_buffer(data, size, "fuzz.onnx", NULL, &m, &err);
    if (st == LT_OK) {
        if (!m)
            abort(); /* success must hand back a model */
        lt_model_free(m);
    } else if (m || !err.msg[0] || strchr(err.msg, '\n')) {
        abort(); /* failure: no model, one line of message */
    }
    return 0;
}
