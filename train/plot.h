/* Training curves as one SVG file (lantern train --plot): the loss over
 * steps and the test accuracy per epoch, collected while training runs. */
#ifndef LT_PLOT_H
#define LT_PLOT_H

#include "lantern.h"
#include <stdint.h>

typedef struct lt_plot lt_plot;

lt_plot *lt_plot_new(void); /* NULL on out of memory */
/* One training step's batch loss; NaN and infinite losses are skipped. */
void lt_plot_step(lt_plot *p, int64_t global_step, double loss);
/* An epoch's end at global_step; NAN for a value there is none of. */
void lt_plot_epoch(lt_plot *p, int64_t global_step, int epoch, double train_loss, double test_loss,
                   double test_accuracy);
/* The validation loss and accuracy (NAN: none) of the epoch last given. */
void lt_plot_validation(lt_plot *p, double val_loss, double val_accuracy);
/* Writes the SVG atomically (temp file next to path, fsync, rename). An
 * allocation that failed while collecting is reported here (LT_ERR_NOMEM). */
lt_status lt_plot_write(const lt_plot *p, const char *path, const char *title, lt_err *err);
void lt_plot_free(lt_plot *p);

#endif
