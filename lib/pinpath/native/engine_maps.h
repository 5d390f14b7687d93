/* engine_maps.h: what a policy's map and unmap keep: nextgen's map of pinned ranges (and its
 * transfer step), prepinned's register of the application's array.
 * Part of engine.c, which includes it once at this point of its text: one translation unit, as
 * the loader compiles engine.c alone. It uses the types and names engine.c defines before it. */

/* -- the map of pinned ranges (nextgen; the caller holds the mutex) ------------------------ */
static int find_entry(engine_t *e, uintptr_t p) {
    for (int k = 0; k < e->nentries; ++k)
        if (e->entries[k].live && e->entries[k].host <= p && p < e->entries[k].host + e->entries[k].nbytes) return k;
    return -1;
}
static int fits(engine_t *e, uintptr_t p, size_t n) {
    for (int k = 0; k < e->nentries; ++k)
        if (e->entries[k].live && e->entries[k].host < p + n && p < e->entries[k].host + e->entries[k].nbytes) return 0;
    return 1;
}
static int add_entry(engine_t *e, uintptr_t host, uintptr_t dev, size_t n, int external) {
    entry_t *es = grow(e->entries, &e->centries, e->nentries + 1, sizeof *es);
    if (!es) return -1;
    e->entries = es;
    es[e->nentries] = (entry_t){host, dev, n, external, 1, 1};
    return e->nentries++;
}
/* one reference less; the last removes the entry and unlocks it if the policy locked it */
static int drop(ctx_t *x, int k, int *unlocked) {
    entry_t *en = &x->th->e->entries[k];
    *unlocked = 0;
    if (--en->refs > 0) return 0;
    en->live = 0;
    if (en->external) return 0;
    *unlocked = 1;
    return unlock_own(x, k + 1, (void *)en->host, en->nbytes);
}
static void push_ref(engine_t *e, int b, int k) {   /* room: nextgen_map checked it */
    e->refs[b * PE_MAXREFS + e->nrefs[b]++] = k;
}

static int nextgen_map(ctx_t *x, int b) {
    engine_t *e = x->th->e;
    if (e->nrefs[b] == PE_MAXREFS) { x->o->error = PP_ECAP; return X_FAILED; }
    uintptr_t p = e->bufs[b].host;
    size_t n = (size_t)e->bufs[b].nbytes;
    int k = find_entry(e, p);
    if (k >= 0) {
        entry_t *en = &e->entries[k];
        if (p + n > en->host + en->nbytes) return M_OVERLAP_REFUSED;
        en->refs++;
        push_ref(e, b, k);
        return M_REFCOUNTED;
    }
    pp_info info;
    int rc = C(C_QUERY, PH_QUERY, query_info((void *)p, &info));
    if (rc) { after_refusal(); info.locked = 0; }
    if (info.locked) {
        uintptr_t base = info.base ? info.base : p;
        size_t size = info.nbytes ? info.nbytes : p + n - base;
        uintptr_t dev = info.dev_ptr ? info.dev_ptr - (p - base) : base;
        if (!fits(e, base, size)) return M_OVERLAP_REFUSED;
        if ((k = add_entry(e, base, dev, size, 1)) < 0) return X_FAILED;
        push_ref(e, b, k);
        return M_EXTERNAL;
    }
    if (!e->lock_mapped) return M_UNTRACKED;
    if (!fits(e, p, n)) return M_OVERLAP_REFUSED;
    if ((k = add_entry(e, p, p, n, 0)) < 0) return X_FAILED;
    void *alias = NULL;
    rc = lock_own(x, k + 1, (void *)p, n, &alias);
    if (rc) {
        x->o->error = rc;
        if (!already_registered(rc)) { e->entries[k].live = 0; return M_LOCK_FAILED; }   /* ignored */
        e->entries[k].external = 1;   /* someone else registered it: track it, never unlock it */
        push_ref(e, b, k);
        return M_EXTERNAL;
    }
    e->entries[k].dev = (uintptr_t)alias;
    push_ref(e, b, k);
    return M_LOCKED;
}
static int nextgen_unmap(ctx_t *x, int b) {
    engine_t *e = x->th->e;
    if (e->nrefs[b] == 0) return M_UNTRACKED;
    int k = e->refs[b * PE_MAXREFS + --e->nrefs[b]], unlocked;
    int rc = drop(x, k, &unlocked);
    if (rc) x->o->error = rc;
    return unlocked ? M_UNLOCKED : M_RELEASED;
}
/* LLVM's AMDGPU plugin: a map hit is one asynchronous DMA; else a transfer of threshold bytes or
 * more is locked, copied, waited for and unlocked (a refused lock is an error); else it is
 * staged through a pooled buffer of exactly its size. */
static int nextgen_transfer(ctx_t *x, void *h, void *d, size_t n, int dir) {
    engine_t *e = x->th->e;
    pthread_mutex_lock(&e->mu);
    int k = find_entry(e, (uintptr_t)h);
    if (k >= 0 && (uintptr_t)h + n > e->entries[k].host + e->entries[k].nbytes) k = -1;   /* runs past it */
    entry_t en = {0};
    if (k >= 0) { e->entries[k].refs++; en = e->entries[k]; }   /* held for the copy: no unmap unlocks it */
    pthread_mutex_unlock(&e->mu);
    if (k >= 0) {
        int rc = dma(x, (void *)(en.dev + ((uintptr_t)h - en.host)), d, n, dir, 0);
        int unlocked;
        pthread_mutex_lock(&e->mu);
        drop(x, k, &unlocked);
        pthread_mutex_unlock(&e->mu);
        if (rc) { x->o->error = rc; return P_COPY_FAILED; }
        return en.external ? P_EXTERNAL_PINNED : P_MAP_HIT;
    }
    if ((int64_t)n < e->threshold) return stage_pooled(x, h, d, n, dir);
    int owner = -__atomic_add_fetch(&e->next_owner, 1, __ATOMIC_RELAXED);
    void *alias = NULL;
    pthread_mutex_lock(&e->mu);
    int rc = lock_own(x, owner, h, n, &alias);
    pthread_mutex_unlock(&e->mu);
    if (rc) {
        x->o->error = rc;
        if (!already_registered(rc)) return P_LOCK_FAILED_ERROR;   /* no fallback on this path */
        rc = dma(x, h, d, n, dir, 1);
        if (rc) { x->o->error = rc; return P_COPY_FAILED; }
        return P_ALREADY_LOCKED;
    }
    int crc = dma(x, alias, d, n, dir, 1);
    pthread_mutex_lock(&e->mu);
    int urc = unlock_own(x, owner, h, n);
    pthread_mutex_unlock(&e->mu);
    if (crc || urc) { x->o->error = crc ? crc : urc; return P_COPY_FAILED; }
    return P_LOCKED;
}

/* -- prepinned: the application registered its array at map time, or it was pinned already -- */
static int prepinned_map(ctx_t *x, int b) {
    engine_t *e = x->th->e;
    void *p = (void *)e->bufs[b].host;
    size_t n = (size_t)e->bufs[b].nbytes;
    pp_info info;
    int rc = C(C_QUERY, PH_QUERY, query_info(p, &info));
    if (rc) { after_refusal(); info.locked = 0; }
    if (info.locked) { e->pinned[b] = 1; return M_EXTERNAL; }
    rc = C(C_LOCK, PH_LOCK, do_lock(p, n));
    if (rc) {
        after_refusal();
        x->o->error = rc;
        e->pinned[b] = already_registered(rc) ? 1 : 0;
        return e->pinned[b] ? M_EXTERNAL : M_LOCK_FAILED;
    }
    e->pinned[b] = 2;
    return M_LOCKED;
}
static int prepinned_unmap(ctx_t *x, int b) {
    engine_t *e = x->th->e;
    int ours = e->pinned[b] == 2;
    e->pinned[b] = 0;
    if (!ours) return M_RELEASED;
    int rc = C(C_UNLOCK, PH_UNLOCK, do_unlock((void *)e->bufs[b].host, (size_t)e->bufs[b].nbytes));
    if (rc) x->o->error = rc;
    return M_UNLOCKED;
}
