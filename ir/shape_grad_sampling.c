/* Shape inference rules: the gradient ops of the sampling ops (GridSample, RoiAlign,
 * MaxRoiPool, Col2Im, STFT). Each gradient has the type of the forward input
 * it belongs to. */
#include "infer.h"

static const lt_type *in_type(const lt_node *n, int i)
{
    return i < n->nin && n->in[i] ? &n->in[i]->type : NULL;
}

/* Output o gets input i's type; where i is absent or untyped, only dy's
 * (input 0's) dtype is known. */
static void like(lt_node *n, int o, int i)
{
    if (o >= n->nout || !n->out[o])
        return;
    const lt_type *t = in_type(n, i), *d = in_type(n, 0);
    if (t && (t->dtype != LT_UNDEFINED || t->rank >= 0)) {
        n->out[o]->type = *t;
        if (t->dtype == LT_UNDEFINED && d)
            n->out[o]->type.dtype = d->dtype;
    } else {
        lt_type_unknown(&n->out[o]->type, d ? d->dtype : LT_UNDEFINED, -1);
    }
}

/* dy of a known rank must have x's (input xi's) known rank */
static lt_status same_rank(lt_infer_ctx *c, const lt_node *n, int xi)
{
    const lt_type *dy = in_type(n, 0), *x = in_type(n, xi);
    if (dy && x && dy->rank >= 0 && x->rank >= 0 && dy->rank != x->rank)
        return lt_infer_fail(c, n, "dy of rank %d for an input of rank %d", dy->rank, x->rank);
    return LT_OK;
}

/* (dy, X, grid) -> dX, dgrid */
static lt_status infer_grid_sample(lt_infer_ctx *c, lt_node *n)
{
    like(n, 0, 1);
    like(n, 1, 2);
    return same_rank(c, n, 1);
}

/* (dy, X, rois...) -> dX */
static lt_status infer_roi(lt_infer_ctx *c, lt_node *n)
{
    like(n, 0, 1);
    return same_rank(c, n, 1);
}

/* (dy, x, image_shape, block_shape) -> dx: dy is the image, x the columns */
static lt_status infer_col2im(lt_infer_ctx *c, lt_node *n)
{
    like(n, 0, 1);
    return LT_OK;
}

/* (dframes, signal, frame_step, window) -> dsignal, dwindow */
static lt_status infer_stft(lt_infer_ctx *c, lt_node *n)
{
    like(n, 0, 1);
    like(n, 1, 3);
    const lt_type *d = in_type(n, 0);
    if (d && d->rank >= 0 && d->rank != 4)
        return lt_infer_fail(c, n, "dframes of rank %d (expected [batch, frames, frame_length, 2])", d->rank);
    return LT_OK;
}

void lt_infer_register_grad_sampling(lt_infer_fn *tab)
{
    tab[LT_OP_GRID_SAMPLE_GRAD] = infer_grid_sample;
    tab[LT_OP_ROI_ALIGN_GRAD] = infer_roi;
    tab[LT_OP_MAX_ROI_POOL_GRAD] = infer_roi;
    tab[LT_OP_COL2_IM_GRAD] = infer_col2im;
    tab[LT_OP_STFT_GRAD] = infer_stft;
}
