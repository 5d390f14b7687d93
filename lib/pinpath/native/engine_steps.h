/* engine_steps.h: one runtime call timed and logged (CALL, C), the mechanics every policy shares
 * (the DMA, staging fresh and pooled) and the transfer steps that keep no map.
 * Part of engine.c, which includes it once at this point of its text: one translation unit, as
 * the loader compiles engine.c alone. It uses the types and names engine.c defines before it. */

static void *grow(void *p, int *cap, int need, size_t size) {
    if (need <= *cap) return p;
    int c = *cap ? *cap * 2 : 16;
    while (c < need) c *= 2;
    void *q = realloc(p, (size_t)c * size);
    if (q) *cap = c;
    return q;
}

/* -- timing one runtime call ------------------------------------------------------------- */
static void log_call(thr_t *th, int64_t opi, int cid, int64_t t0, int64_t t1, int rc) {
    if (th->n >= th->cap) { th->e->overflow = 1; return; }
    th->log[th->n++] = (pe_call){t0, t1, (int32_t)opi, cid, rc, th->t};
}
/* CALL(th, opi, o, cid, ph, expr): run expr (a runtime call returning its code), log it, add
 * its time to phase ph of op o (PH_NONE: no phase); the value is the call's code. */
#define CALL(th, opi, o, cid, ph, expr)                                  \
    ({                                                                   \
        int64_t t0_ = now_ns();                                          \
        int rc_ = (expr);                                                \
        int64_t t1_ = now_ns();                                          \
        log_call((th), (opi), (cid), t0_, t1_, rc_);                     \
        if ((ph) != PH_NONE) (o)->phase_ns[(ph) < 0 ? 0 : (ph)] += t1_ - t0_; \
        rc_;                                                             \
    })
static int host_copy(void *dst, const void *src, size_t n) { memcpy(dst, src, n); return 0; }

typedef struct { thr_t *th; int64_t i; pe_out *o; } ctx_t;
#define C(cid, ph, expr) CALL(x->th, x->i, x->o, cid, ph, expr)

/* -- the mechanics every policy shares --------------------------------------------------- */
static int dma(ctx_t *x, void *host_side, void *dev, size_t n, int dir, int wait) {
    void *dst = dir == PP_H2D ? dev : host_side, *src = dir == PP_H2D ? host_side : dev;
    int rc = C(C_COPY, PH_DMA, copy_async(x->th->q, dst, src, n, dir));
    if (rc) { after_refusal(); return rc; }
    wait = wait || !x->th->e->asynchronous;
    x->th->pending = !wait;
    return wait ? C(C_WAIT, PH_WAIT, queue_wait(x->th->q)) : 0;
}
static int staged_through(ctx_t *x, void *staging, void *h, void *d, size_t n, int dir, int wait) {
    if (dir == PP_H2D) {
        C(C_HOST_COPY, PH_COPY_IN, host_copy(staging, h, n));
        return dma(x, staging, d, n, dir, wait);
    }
    int rc = dma(x, staging, d, n, dir, 1);
    if (!rc) C(C_HOST_COPY, PH_COPY_OUT, host_copy(h, staging, n));
    return rc;
}
static int stage_fresh(ctx_t *x, void *h, void *d, size_t n, int dir) {
    void *s = NULL;
    int rc = C(C_ALLOC, PH_ALLOC, stage_alloc(0, n, &s));
    if (rc) { after_refusal(); return rc; }
    if (NEEDS_GRANT) rc = C(C_GRANT, PH_GRANT, stage_grant(s, n));
    if (!rc) rc = staged_through(x, s, h, d, n, dir, 1);
    C(C_FREE, PH_FREE, stage_free(s, n));
    return rc;
}

/* the staging pool: exact sizes (LLVM's MemoryManagerTy) or power-of-two classes of >= 4 KiB */
static size_t pool_class(engine_t *e, size_t n) {
    if (e->pool_exact) return n;
    size_t c = 4096;
    while (c < n) c <<= 1;
    return c;
}
static int pool_get(ctx_t *x, size_t n, void **ptr, int *slot, int *hit) {
    engine_t *e = x->th->e;
    size_t cls = pool_class(e, n);
    pthread_mutex_lock(&e->mu);
    for (int k = 0; k < e->nslots; ++k)
        if (e->slots[k].state == -1 && e->slots[k].cls == cls) {
            e->slots[k].state = -2;
            *ptr = e->slots[k].ptr; *slot = k; *hit = 1;
            pthread_mutex_unlock(&e->mu);
            return 0;
        }
    pthread_mutex_unlock(&e->mu);
    *hit = 0;
    int rc = C(C_ALLOC, PH_ALLOC, stage_alloc(0, cls, ptr));
    if (rc) { after_refusal(); return rc; }
    if (NEEDS_GRANT && (rc = C(C_GRANT, PH_GRANT, stage_grant(*ptr, cls)))) {
        stage_free(*ptr, cls);
        return rc;
    }
    pthread_mutex_lock(&e->mu);
    slot_t *s = grow(e->slots, &e->cslots, e->nslots + 1, sizeof *s);
    if (s) { e->slots = s; *slot = e->nslots++; s[*slot] = (slot_t){*ptr, cls, -2}; }
    pthread_mutex_unlock(&e->mu);
    return s ? 0 : PP_ENOMEM;
}
/* the buffer comes back now, or (deferred) when thread t's queue has been waited for */
static void pool_put(engine_t *e, int slot, int deferred_on) {
    pthread_mutex_lock(&e->mu);
    e->slots[slot].state = deferred_on;
    pthread_mutex_unlock(&e->mu);
}
static void pool_synced(engine_t *e, int t) {
    pthread_mutex_lock(&e->mu);
    for (int k = 0; k < e->nslots; ++k)
        if (e->slots[k].state == t) e->slots[k].state = -1;
    pthread_mutex_unlock(&e->mu);
}
static int stage_pooled(ctx_t *x, void *h, void *d, size_t n, int dir) {
    void *s;
    int slot, hit;
    int rc = pool_get(x, n, &s, &slot, &hit);
    if (rc) { x->o->error = rc; return P_COPY_FAILED; }
    int deferred = x->th->e->asynchronous && dir == PP_H2D;
    rc = staged_through(x, s, h, d, n, dir, !deferred);
    pool_put(x->th->e, slot, deferred && !rc ? x->th->t : -1);
    if (rc) { x->o->error = rc; return P_COPY_FAILED; }
    return hit ? P_STAGED_POOLED_HIT : P_STAGED_POOLED_MISS;
}

/* lock, DMA from the alias, wait, unlock. "Already registered" means pinned by someone else:
 * copy as it is and leave it locked. Returns a path, or -1 with *refused set for other refusals. */
static int lock_dma_unlock(ctx_t *x, void *h, void *d, size_t n, int dir, int *refused) {
    void *alias = NULL;
    int rc = C(C_LOCK, PH_LOCK, lock_alias(h, n, &alias));
    if (rc) {
        after_refusal();
        x->o->error = rc;
        if (!already_registered(rc)) { *refused = rc; return -1; }
        rc = dma(x, h, d, n, dir, 1);
        if (rc) { x->o->error = rc; return P_COPY_FAILED; }
        return P_ALREADY_LOCKED;
    }
    int crc = dma(x, alias, d, n, dir, 1);
    int urc = C(C_UNLOCK, PH_UNLOCK, do_unlock(h, n));
    if (crc || urc) { x->o->error = crc ? crc : urc; return P_COPY_FAILED; }
    return P_LOCKED;
}
/* the same path as a counting runtime takes it on a range the application registered (PE_COUNT):
 * the lock counted by pinpath, the DMA from the memory as it is, the unlock counted back down */
static int counted_dma(ctx_t *x, void *h, void *d, size_t n, int dir) {
    int rc = C(C_COUNT_LOCK, PH_LOCK, count_up(h, n));
    if (rc) { x->o->error = rc; return P_LOCK_FAILED_ERROR; }   /* not a range the application registered */
    int crc = dma(x, h, d, n, dir, 1);
    int urc = C(C_COUNT_UNLOCK, PH_UNLOCK, count_down(h, n));
    if (crc || urc) { x->o->error = crc ? crc : urc; return P_COPY_FAILED; }
    return P_LOCKED;
}
static int lock_copy_unlock(ctx_t *x, void *h, void *d, size_t n, int dir) {
    if (x->th->ops[x->i].flags & PE_COUNT) return counted_dma(x, h, d, n, dir);
    int refused = 0;
    int path = lock_dma_unlock(x, h, d, n, dir, &refused);
    if (path >= 0) return path;
    int rc = stage_fresh(x, h, d, n, dir);   /* rodata and the like: stage instead */
    if (rc) { x->o->error = rc; return P_COPY_FAILED; }
    return P_LOCK_FAILED_STAGED;
}
static int pageable(ctx_t *x, void *h, void *d, size_t n, int dir) {
    int rc = dma(x, h, d, n, dir, 0);
    if (rc) { x->o->error = rc; return P_COPY_FAILED; }
    /* where the platform cannot see the path (PAGEABLE_PATH_SEEN 0), what the driver did is seen
     * only by an observer (CUPTI) */
    return PAGEABLE_PATH_SEEN ? P_PAGEABLE_DIRECT : P_DRIVER_UNOBSERVED;
}
