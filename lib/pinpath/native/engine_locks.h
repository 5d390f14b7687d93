/* engine_locks.h: the locks a policy makes itself (page units where a lock is by page).
 * Part of engine.c, which includes it once at this point of its text: one translation unit, as
 * the loader compiles engine.c alone. It uses the types and names engine.c defines before it. */

/* -- locks the policy makes itself: page units where a lock is by page (LOCKS_BY_PAGE) -------- */
static int unit_cmp(const void *a, const void *b) {
    uintptr_t x = (*(unit_t *const *)a)->lo, y = (*(unit_t *const *)b)->lo;
    return x < y ? -1 : x > y;
}
/* mlock keeps no count: one munlock undoes every lock of a page. A range is locked as units of
 * pages no other range holds; a unit is unlocked when no range that touches it is left. */
static int lock_units(ctx_t *x, int owner, void *p, size_t n, void **alias) {
    engine_t *e = x->th->e;
    uintptr_t ps = (uintptr_t)sysconf(_SC_PAGESIZE);
    uintptr_t lo = (uintptr_t)p / ps * ps, hi = ((uintptr_t)p + n + ps - 1) / ps * ps;
    unit_t *over[PE_MAXUNITS];
    int k = 0;
    for (int u = 0; u < e->nunits; ++u)
        if (e->units[u].live && e->units[u].lo < hi && e->units[u].hi > lo) {
            if (k == PE_MAXUNITS || e->units[u].nusers == PE_MAXUSERS) return PP_ECAP;   /* before any lock */
            over[k++] = &e->units[u];
        }
    qsort(over, (size_t)k, sizeof *over, unit_cmp);
    uintptr_t gaps[PE_MAXUNITS + 1][2];
    int ng = 0;
    uintptr_t at = lo;
    for (int u = 0; u < k; ++u) {
        if (over[u]->lo > at) { gaps[ng][0] = at; gaps[ng][1] = over[u]->lo; ++ng; }
        if (over[u]->hi > at) at = over[u]->hi;
    }
    if (at < hi) { gaps[ng][0] = at; gaps[ng][1] = hi; ++ng; }
    int made = e->nunits;
    for (int g = 0; g < ng; ++g) {
        int rc = C(C_LOCK, PH_LOCK, do_lock((void *)gaps[g][0], gaps[g][1] - gaps[g][0]));
        unit_t *us = rc ? e->units : grow(e->units, &e->cunits, e->nunits + 1, sizeof *us);
        if (rc || !us) {   /* undo what this call locked */
            if (!rc) { rc = PP_ENOMEM; C(C_UNLOCK, PH_UNLOCK, do_unlock((void *)gaps[g][0], gaps[g][1] - gaps[g][0])); }
            for (int u = made; u < e->nunits; ++u) {
                C(C_UNLOCK, PH_UNLOCK, do_unlock((void *)e->units[u].lo, e->units[u].hi - e->units[u].lo));
                e->units[u].live = 0;
            }
            return rc;
        }
        e->units = us;
        unit_t *nu = &e->units[e->nunits++];
        memset(nu, 0, sizeof *nu);
        nu->lo = gaps[g][0]; nu->hi = gaps[g][1]; nu->live = 1;
    }
    for (int u = 0; u < e->nunits; ++u) {
        unit_t *un = &e->units[u];
        if (un->live && un->lo < hi && un->hi > lo) un->users[un->nusers++] = owner;   /* room: checked above */
    }
    *alias = p;
    return 0;
}
static int unlock_units(ctx_t *x, int owner, void *p, size_t n) {
    (void)p; (void)n;
    engine_t *e = x->th->e;
    int rc = 0;
    for (int u = 0; u < e->nunits; ++u) {
        unit_t *un = &e->units[u];
        if (!un->live) continue;
        for (int j = 0; j < un->nusers; ++j)
            if (un->users[j] == owner) { un->users[j] = un->users[--un->nusers]; break; }
        if (un->nusers == 0) {
            un->live = 0;
            int r = C(C_UNLOCK, PH_UNLOCK, do_unlock((void *)un->lo, un->hi - un->lo));
            if (r && !rc) rc = r;
        }
    }
    return rc;
}
/* counted (HSA) or exact (CUDA registers each range once): a lock is one call */
static int lock_once(ctx_t *x, int owner, void *p, size_t n, void **alias) {
    (void)owner;
    int rc = C(C_LOCK, PH_LOCK, lock_alias(p, n, alias));
    if (rc) after_refusal();
    return rc;
}
static int unlock_once(ctx_t *x, int owner, void *p, size_t n) {
    (void)owner;
    return C(C_UNLOCK, PH_UNLOCK, do_unlock(p, n));
}
static int lock_own(ctx_t *x, int owner, void *p, size_t n, void **alias) {
    return LOCKS_BY_PAGE ? lock_units(x, owner, p, n, alias) : lock_once(x, owner, p, n, alias);
}
static int unlock_own(ctx_t *x, int owner, void *p, size_t n) {
    return LOCKS_BY_PAGE ? unlock_units(x, owner, p, n) : unlock_once(x, owner, p, n);
}
