/* Image augmentation of the training split (train/augment.c): --augment
 * flip,crop:P. Each sample's draws are a function of (seed, epoch, sample
 * index) alone, so a run, a rerun and a resumed run see the same images.
 *
 * The draws of sample s (its index in the dataset) in epoch e (1-based):
 *     k = mix(mix(mix(seed ^ 0x6175676d656e7421) ^ e) ^ s)
 *     r1, r2, r3 = the first three numbers of splitmix64 started at state k
 *     flip = r1 >> 63 (when flip is on), dy = r2 % (2P + 1), dx = r3 % (2P + 1)
 *                                                              (when crop:P is on; else 0)
 * where mix(x) is splitmix64's output for state x (x + 0x9e3779b97f4a7c15
 * through its finalizer). The image [C,H,W] (or [H,W]) is padded by P
 * zeros (raw pixel 0, before --mean/--std, as torchvision's RandomCrop
 * pads before Normalize) on each side of H and W, cropped back to H x W at
 * (dy, dx), then mirrored left to right when flip:
 *     out[c][y][x] = img[c][y + dy - P][x' + dx - P],  x' = flip ? W-1-x : x
 * (zero where that falls outside the image). */
#ifndef LT_AUGMENT_H
#define LT_AUGMENT_H

#include "../runtime/runtime.h"

typedef struct lt_augment {
    bool flip;
    int crop; /* P; 0: no crop */
} lt_augment;

typedef struct lt_aug_draw {
    bool flip;
    int dy, dx;
} lt_aug_draw;

/* "flip", "crop:4", "flip,crop:4"; NULL or "" or "none": nothing. */
lt_status lt_augment_parse(const char *spec, lt_augment *a, lt_err *err);
bool lt_augment_on(const lt_augment *a);
void lt_augment_draw(const lt_augment *a, uint64_t seed, int64_t epoch, int64_t sample, lt_aug_draw *d);

#endif
