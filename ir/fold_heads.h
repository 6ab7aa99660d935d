/* Attention's head split and merge folded into the per-head products,
 * after the AD (on the CPU, after fold_scale.h): the products read each
 * head's matrices where they lie inside the projections' rows and write
 * their result in the merged layout, so the copies that move heads to the
 * front and back are never made. Rewrites, for a float MatMul /
 * MatMulTrans whose two operands have rank 4 and the same two leading dims:
 *   - an operand Transpose(X) {perm [0, 2, 1, 3]}, X [B, T, H, D] with T,
 *     H, D known, is read from X with viewA / viewB = [H, T, D, 0, D, H D];
 *   - an operand Squeeze(Split(Transpose(X) {perm [2, 0, 3, 1, 4]}) along
 *     axis 0 into G pieces of 1)[g] (q, k, v out of one packed projection),
 *     X [B, T, G, H, D], is read from X with [H, T, D, g H D, D, G H D];
 *   - Transpose(P) {perm [0, 2, 1, 3]}, P such a product's output read by
 *     nothing else, becomes the product with viewY = 1 in its place;
 *   - Transpose(Concat(Unsqueeze(P_g) {axes [0]}, axis 0)) {perm [1, 3, 0,
 *     2, 4]} (the packed split's gradient: dq, dk, dv back into the
 *     projection's rows), each P_g a product read once, becomes Concat of
 *     Unsqueeze(P_g with viewY) {axes [2]} along axis 2: one copy, not
 *     two.
 * Transposes, Splits, Squeezes, Reshapes and Shapes left without readers
 * are removed, after Reshape(G, Shape(V)) with V G's shape behind a
 * leading 1 (the AD's gradient of the Squeeze) becomes Unsqueeze(G).
 *
 * MatMulTrans's views: viewA / viewB = [H, R, C, off, sH, sR] make the
 * operand [B, H, R, C] (B its storage's first dim; as stored, before
 * transA / transB) whose matrix (b, h) starts at element off + h sH of
 * sample b (the storage's numel / B elements each), rows sR apart; viewY =
 * 1 writes the product [B, H, M, N] as [B, M, H, N]. The values are those
 * of the unfolded program (the same products of the same elements). */
#ifndef LT_IR_FOLD_HEADS_H
#define LT_IR_FOLD_HEADS_H

#include "ir.h"

/* Rewrites every block of the module; *nfolded (may be NULL) receives the
 * number of operands and outputs folded. */
lt_status lt_ir_fold_heads(lt_module *m, int *nfolded, lt_err *err);

#endif
