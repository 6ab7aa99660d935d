/* The float32 optimizer step of optim_update.c over vectors, included once
 * per instruction set. The includer defines NAME (the function), TARGET
 * (its target attribute), W (lanes), VT (the vector type), V(x)
 * (broadcast), LD(a) and ST(a, v) (the vector at a + i), ADD, SUB, MUL,
 * DIV, SQRTV, and TAIL when the last, partial vector needs a mask (LD/ST
 * then read the mask m); without TAIL the elements past the last whole
 * vector go through update_one_f32. The same operations in the same order
 * as the scalar loops (no fused multiply-adds, correctly rounded sqrt and
 * division), so the same bits. The macros are undefined at the end. */
/* the vectors [blk0, blk1) of the step */
TARGET static void RANGE(const lt_optim_update *c, int64_t blk0, int64_t blk1)
{
    const int64_t n = c->n;
    (void)n; /* the masks' bound */
    float *restrict p = c->p;
    const float *restrict gr = c->g;
    float *restrict s1 = c->s1, *restrict s2 = c->s2;
    const float lr = (float)c->lr, scale = (float)c->scale, mu = (float)c->mu, b1 = (float)c->b1,
                b2 = (float)c->b2, eps = (float)c->eps, step = (float)c->adam_step, ibc2 = (float)c->inv_sqrt_bc2,
                decay = (float)c->decay, ob1 = (float)c->one_b1, ob2 = (float)c->one_b2;
    const float wd = c->kind == LT_OPTIM_ADAMW ? 0.0f : (float)c->wd;
    const int kind = (int)c->kind;
    for (int64_t b = blk0; b < blk1; b++) {
        const int64_t i = b * W;
        MASK_OF(n - i);
        VT P = LD(p);
        if (kind == LT_OPTIM_ADAM || kind == LT_OPTIM_ADAMW)
            P = MUL(P, V(decay));
        const VT G = ADD(MUL(LD(gr), V(scale)), wd != 0 ? MUL(V(wd), P) : V(0.0f));
        switch (kind) {
        case LT_OPTIM_SGD:
            P = SUB(P, MUL(V(lr), G));
            break;
        case LT_OPTIM_MOMENTUM: {
            const VT S = ADD(MUL(V(mu), LD(s1)), G);
            ST(s1, S);
            P = SUB(P, MUL(V(lr), S));
            break;
        }
        case LT_OPTIM_NESTEROV: {
            const VT S = ADD(MUL(V(mu), LD(s1)), G);
            ST(s1, S);
            P = SUB(P, MUL(V(lr), ADD(G, MUL(V(mu), S))));
            break;
        }
        case LT_OPTIM_ADAGRAD: {
            const VT S = ADD(LD(s1), MUL(G, G));
            ST(s1, S);
            P = SUB(P, DIV(MUL(V(lr), G), ADD(SQRTV(S), V(eps))));
            break;
        }
        default: { /* Adam, AdamW */
            const VT M = ADD(MUL(V(b1), LD(s1)), MUL(V(ob1), G));
            const VT S = ADD(MUL(V(b2), LD(s2)), MUL(MUL(V(ob2), G), G));
            ST(s1, M);
            ST(s2, S);
            P = SUB(P, DIV(MUL(V(step), M), ADD(MUL(SQRTV(S), V(ibc2)), V(eps))));
            break;
        }
        }
        ST(p, P);
    }
}

/* blocks of 32768 elements taken in turn by the product pool's threads (a
 * thread given a busy core takes fewer) */
static void JOB(void *ctx)
{
    update_job *j = ctx;
    for (int64_t k; (k = __atomic_fetch_add(&j->next, 1, __ATOMIC_RELAXED)) < j->nblk;) {
        int64_t b0 = k * (32768 / W), b1 = b0 + 32768 / W;
        RANGE(j->c, b0, b1 < j->nb ? b1 : j->nb);
    }
}

static void NAME(const lt_optim_update *c)
{
    const int64_t n = c->n, nb = TAIL ? (n + W - 1) / W : n / W;
    update_job j = {.c = c, .nb = nb, .nblk = (nb + 32768 / W - 1) / (32768 / W)};
    lt_pool_run(n > LT_OPTIM_PAR_MIN ? lt_pool_threads() : 1, JOB, &j);
    if (!TAIL)
        for (int64_t i = nb * W; i < n; i++)
            update_one_f32(c, i);
}

#undef NAME
#undef RANGE
#undef JOB
#undef TARGET
#undef W
#undef VT
#undef TAIL
#undef MASK_OF
#undef V
#undef LD
#undef ST
#undef ADD
#undef SUB
#undef MUL
#undef DIV
#undef SQRTV
