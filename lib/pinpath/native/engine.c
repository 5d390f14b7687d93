/* engine: pinpath's transfer engine. It executes a plan of transfers under one of the
 * thread's transfer policies, in C, and times every phase and every runtime call, so that a
 * per-transfer figure carries no interpreter time. Python (lib/pinpath/engine.py) builds the
 * plan, owns every buffer, checks the bytes outside the timed region and reads the arrays.
 *
 * A plan is an array of ops (pe_op): map, transfer, sync, unmap, kernel, adopt; each names a
 * buffer of the buffer table (host pointer, device pointer, size) and the thread that runs it.
 * Threads are pthreads, released together by one barrier; each runs its ops in plan order on
 * a copy queue of its own for the run, kept between runs as a runtime keeps its streams. The
 * policy's state (the map of pinned ranges, the staging pool, the lock units) is shared by the
 * threads under one mutex, as an offload runtime's is.
 *
 * Output, per op (pe_out): start and end, the time of each phase, the path the runtime's
 * answers led to, the runtime's code that decided it, and the op's calls in the call log
 * (pe_call: which call, t0, t1, return code). Nothing is assumed: a path is what the runtime
 * answered (a refused re-register is a path of its own, with its cost).
 */
#include "platform.h"
#include "counts.h"   /* pinpath's own count of locks: C10's counted arm (PE_COUNT) */

#define PE_API __attribute__((visibility("default")))
#define PE_ABI 3   /* bumped when a struct or signature changes; engine.py checks it */

/* -- the vocabulary, exported by name so Python reads it from here ---------------------- */
enum { PE_MAP, PE_TRANSFER, PE_SYNC, PE_UNMAP, PE_KERNEL, PE_ADOPT, PE_PIN, PE_UNPIN, PE_NOPS };
/* the policies are one table, POLICIES, after their steps (just before "one op") */
enum { PH_QUERY, PH_LOCK, PH_ALLOC, PH_GRANT, PH_COPY_IN, PH_DMA, PH_WAIT, PH_COPY_OUT, PH_UNLOCK, PH_FREE, PH_N,
       PH_NONE = -1 };
static const char *const PHASE_NAMES[PH_N] = {"query", "lock", "alloc", "grant", "copy_in", "dma", "wait",
                                              "copy_out", "unlock", "free"};
enum { P_PINNED_DIRECT, P_ALREADY_LOCKED, P_LOCKED, P_STAGED_FRESH, P_STAGED_POOLED_HIT, P_STAGED_POOLED_MISS,
       P_LOCK_FAILED_STAGED, P_LOCK_FAILED_ERROR, P_MAP_HIT, P_EXTERNAL_PINNED, P_DRIVER_UNOBSERVED,
       P_PAGEABLE_DIRECT, P_COPY_FAILED,
       M_UNTRACKED, M_LOCKED, M_EXTERNAL, M_REFCOUNTED, M_LOCK_FAILED, M_OVERLAP_REFUSED, M_UNLOCKED,
       M_RELEASED, X_SYNC, X_KERNEL, X_ADOPTED, X_FAILED, P_N };
static const char *const PATH_NAMES[P_N] = {
    "pinned_direct", "already_locked", "locked", "staged_fresh", "staged_pooled_hit", "staged_pooled_miss",
    "lock_failed_staged", "lock_failed_error", "map_hit", "external_pinned", "driver_unobserved",
    "pageable_direct", "copy_failed",
    "untracked", "locked", "external", "refcounted", "lock_failed", "overlap_refused", "unlocked", "released",
    "sync", "kernel", "adopted", "failed"};
/* the call numbers (C_*) and their names (CALL_NAMES) are platform.h's; past them the engine's own:
 * a lock and its unlock counted by pinpath (counts.h), no runtime call */
enum { C_COUNT_LOCK = C_N, C_COUNT_UNLOCK, PE_NCALLS };
static const char *const OWN_CALL_NAMES[PE_NCALLS - C_N] = {"pinpath_count_lock", "pinpath_count_unlock"};
#define PE_WAIT 1     /* op flag: a transfer waits for its queue (the policy's sync) before it ends */
#define PE_COUNT 2    /* op flag, where the runtime keeps no count (LOCKS_COUNTED 0), as a counting runtime
                       * (ROCT) would: app_lock enters the application's registration in pinpath's count,
                       * a transfer's lock of that range (lock_copy_unlock) and its unlock are counted there
                       * (C_COUNT_LOCK, C_COUNT_UNLOCK), app_unlock takes it out; see counted_dma */
/* caps: an op past one fails with PP_ECAP (its row's error), nothing is dropped silently */
#define PE_MAXREFS 16  /* map references one buffer may hold at once */
#define PE_MAXUNITS 256 /* locked units one range may overlap (host) */
#define PE_MAXUSERS 64 /* ranges that may hold one locked unit at once (host) */

/* -- the plan and the results (engine.py mirrors these layouts with numpy dtypes) ---------- */
typedef struct {
    int32_t op, thread, buf, aux; /* aux: the kernel's output buffer */
    int32_t direction, flags;
    int64_t offset, nbytes;       /* kernel: offset = nsplines, nbytes = nw */
} pe_op;
typedef struct { uint64_t host, dev; int64_t nbytes; } pe_buf;
typedef struct {
    int64_t start_ns, end_ns;
    int64_t phase_ns[PH_N];
    int32_t path, error;          /* error: the runtime's code that decided the path, 0 if none */
    int32_t first_call, n_calls;  /* the op's calls: calls[first_call .. first_call + n_calls) */
} pe_out;
typedef struct { int64_t t0, t1; int32_t op, call, rc, thread; } pe_call;

/* -- the policy's state ---------------------------------------------------------------- */
typedef struct { uintptr_t host, dev; size_t nbytes; int external, refs, live; } entry_t;
typedef struct { uintptr_t lo, hi; int users[PE_MAXUSERS]; int nusers, live; } unit_t;
typedef struct { void *ptr; size_t cls; int state; } slot_t;   /* state: -1 free, -2 in use, t >= 0 pending on t */

typedef struct {
    const struct policy_s *pol;  /* its entry of POLICIES; the flags below are copied from it */
    int device, asynchronous, lock_mapped;
    int64_t threshold;
    const pe_buf *bufs;
    int nbufs;
    uint64_t kernel_fn;
    pthread_mutex_t mu;
    pthread_mutex_t gate_mu;     /* the start gate: every thread ready, then all go at once */
    pthread_cond_t gate_cv;
    int ready, go, abort_run;
    entry_t *entries; int nentries, centries;
    int *refs, *nrefs;           /* per buffer: the entries its maps took references on */
    int8_t *pinned;              /* prepinned, per buffer: 0 no, 1 pinned by someone else, 2 registered here */
    slot_t *slots; int nslots, cslots;
    int pool_exact;
    unit_t *units; int nunits, cunits;
    int next_owner;
    int overflow;                /* the call log was too small */
    uint8_t *evict;              /* the plan's cache state: thread t writes evict[t * evict_nbytes ..) */
    int64_t evict_nbytes;        /* before each of its transfers, untimed (0: none, the buffer hot) */
} engine_t;

typedef struct {
    engine_t *e;
    int t;
    queue_t *q;                  /* taken from the kept queues (queue_take) for the run */
    int queue_ok;
    int pending;                 /* q holds work enqueued since it was last waited for */
    const pe_op *ops; int64_t nops;
    pe_out *out;
    pe_call *log; int64_t cap, n, base;
    int rc;
} thr_t;

/* -- copy queues, kept for the process ------------------------------------------------------
 * An offload runtime keeps its streams (LLVM's plugins keep pools of them), and so does an
 * application: a queue made for every plan is a state neither has (on the H200 a new CUDA
 * stream took a pageable 4 KiB D2H to 0.88-0.89x of a long-lived stream's time in three pinned
 * runs of tools/pageable_probe.c).
 * Each thread of a run takes a queue of its device from here (made on first need) and gives it
 * back, waited for, when the run ends; pe_fini closes them. */
#define KEPT_QUEUES 64
static pthread_mutex_t kept_mu = PTHREAD_MUTEX_INITIALIZER;
static struct { queue_t *q; int device; } kept[KEPT_QUEUES];
static int nkept, queues_made;
static queue_t *queue_take(int device) {
    pthread_mutex_lock(&kept_mu);
    for (int k = nkept - 1; k >= 0; --k)
        if (kept[k].device == device) {
            queue_t *q = kept[k].q;
            kept[k] = kept[--nkept];
            pthread_mutex_unlock(&kept_mu);
            return q;
        }
    pthread_mutex_unlock(&kept_mu);
    queue_t *q = calloc(1, sizeof *q);
    if (!q || queue_new(q) != 0) { free(q); return NULL; }
    pthread_mutex_lock(&kept_mu);
    ++queues_made;
    pthread_mutex_unlock(&kept_mu);
    return q;
}
static void queue_give(queue_t *q, int device) {
    queue_wait(q);   /* nothing of this run is left in flight on it */
    pthread_mutex_lock(&kept_mu);
    if (nkept < KEPT_QUEUES) { kept[nkept].q = q; kept[nkept++].device = device; q = NULL; }
    pthread_mutex_unlock(&kept_mu);
    if (q) { queue_close(q); free(q); }
}
static void queues_close(void) {
    pthread_mutex_lock(&kept_mu);
    while (nkept > 0) {
        queue_t *q = kept[--nkept].q;
        queue_close(q);
        free(q);
    }
    pthread_mutex_unlock(&kept_mu);
}

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

/* -- the policies: one entry each ---------------------------------------------------------
 * A policy is its steps: whether it asks the runtime first (query_first), its transfer step,
 * what its map and unmap keep (none, prepinned: the application's register, nextgen: the map of
 * pinned ranges), its staging pool (none, exact sizes, power-of-two classes), whether it waits
 * once per region (asynchronous) and whether nextgen's map locks (lock_mapped). The Python
 * reference has the same table (vocab.POLICY_STEPS); engine.py compares the two when it loads.
 * Everything is read from here by pe_run, before any op's timestamps. */
enum { POOL_NONE, POOL_EXACT, POOL_CLASSES, POOL_N };
static const char *const POOL_NAMES[POOL_N] = {"none", "exact", "classes"};
/* ask the runtime first: memory it says is locked goes as one DMA from its alias; else -1 */
static int query_first(ctx_t *x, void *h, void *d, size_t n, int dir) {
    pp_info info;
    if (C(C_QUERY, PH_QUERY, query_info(h, &info))) { after_refusal(); info.locked = 0; }
    if (!info.locked) return -1;
    int rc = dma(x, info.dev_ptr ? (void *)info.dev_ptr : h, d, n, dir, 1);
    if (rc) { x->o->error = rc; return P_COPY_FAILED; }
    return P_ALREADY_LOCKED;
}
/* the transfer steps: (ctx, host side, device side, bytes, direction) -> path; besides these,
 * stage_pooled, lock_copy_unlock, pageable and nextgen_transfer above */
static int stage_fresh_path(ctx_t *x, void *h, void *d, size_t n, int dir) {
    int rc = stage_fresh(x, h, d, n, dir);
    if (rc) { x->o->error = rc; return P_COPY_FAILED; }
    return P_STAGED_FRESH;
}
static int pinned_or_pageable(ctx_t *x, void *h, void *d, size_t n, int dir) {
    if (!x->th->e->pinned[x->th->ops[x->i].buf]) return pageable(x, h, d, n, dir);
    int rc = dma(x, h, d, n, dir, 0);
    if (rc) { x->o->error = rc; return P_COPY_FAILED; }
    return P_PINNED_DIRECT;
}
/* the map steps: (ctx, buffer) -> path; nextgen's run under the policy's mutex */
static int nextgen_map_op(ctx_t *x, int b) {
    pthread_mutex_lock(&x->th->e->mu);
    int path = nextgen_map(x, b);
    pthread_mutex_unlock(&x->th->e->mu);
    return path;
}
static int nextgen_unmap_op(ctx_t *x, int b) {
    pthread_mutex_lock(&x->th->e->mu);
    int path = nextgen_unmap(x, b);
    pthread_mutex_unlock(&x->th->e->mu);
    return path;
}
typedef struct policy_s {
    const char *name;
    int query_first;
    const char *transfer_name;
    int (*transfer)(ctx_t *x, void *h, void *d, size_t n, int dir);
    const char *maps_name;
    int (*map)(ctx_t *x, int b), (*unmap)(ctx_t *x, int b);   /* NULL: no state for mapped buffers */
    int pool, asynchronous, lock_mapped;
} policy_t;
#define MAPS_NONE "none", NULL, NULL
#define MAPS_PREPINNED "prepinned", prepinned_map, prepinned_unmap
#define MAPS_NEXTGEN "nextgen", nextgen_map_op, nextgen_unmap_op
static const policy_t POLICIES[] = {
    /* name                 query first  transfer step                               maps            pool          async lock_mapped */
    {"stage_per_copy",      0,           "stage_fresh", stage_fresh_path,            MAPS_NONE,      POOL_NONE,    0,    0},
    {"lock_always",         0,           "lock_copy_unlock", lock_copy_unlock,       MAPS_NONE,      POOL_NONE,    0,    0},
    {"query_then_lock",     1,           "lock_copy_unlock", lock_copy_unlock,       MAPS_NONE,      POOL_NONE,    0,    0},
    {"nextgen",             0,           "nextgen", nextgen_transfer,                MAPS_NEXTGEN,   POOL_EXACT,   1,    0},
    {"nextgen_lock_mapped", 0,           "nextgen", nextgen_transfer,                MAPS_NEXTGEN,   POOL_EXACT,   1,    1},
    {"stage_pooled",        0,           "stage_pooled", stage_pooled,               MAPS_NONE,      POOL_CLASSES, 0,    0},
    {"prepinned",           0,           "pinned_or_pageable", pinned_or_pageable,   MAPS_PREPINNED, POOL_NONE,    1,    0},
    {"driver_pageable",     0,           "pageable", pageable,                       MAPS_NONE,      POOL_NONE,    1,    0},
    {"pinned_allocator",    0,           "nextgen", nextgen_transfer,                MAPS_NEXTGEN,   POOL_EXACT,   1,    0},
};
#define POL_N ((int)(sizeof POLICIES / sizeof POLICIES[0]))

/* -- one op ------------------------------------------------------------------------------ */
/* The end of a region: wait for the queue, unless nothing was enqueued since its last wait (a
 * staged D2H waits before its copy out): LLVM's AMDGPU plugin returns from a stream's
 * synchronize without a call when no operation is pending. */
static int sync_queue(ctx_t *x) {
    engine_t *e = x->th->e;
    int rc = e->asynchronous && x->th->pending ? C(C_WAIT, PH_WAIT, queue_wait(x->th->q)) : 0;
    x->th->pending = 0;
    pool_synced(e, x->th->t);
    return rc;
}
static int transfer(ctx_t *x, const pe_op *op) {
    const policy_t *pol = x->th->e->pol;
    const pe_buf *b = &x->th->e->bufs[op->buf];
    void *h = (void *)(uintptr_t)(b->host + (uint64_t)op->offset);
    void *d = (void *)(uintptr_t)(b->dev + (uint64_t)op->offset);
    size_t n = (size_t)op->nbytes;
    int dir = op->direction;
    if (pol->query_first) {
        int path = query_first(x, h, d, n, dir);
        if (path >= 0) return path;
    }
    return pol->transfer(x, h, d, n, dir);
}
static int run_op(ctx_t *x, const pe_op *op) {
    engine_t *e = x->th->e;
    int path;
    switch (op->op) {
    case PE_TRANSFER:
        path = transfer(x, op);
        if (op->flags & PE_WAIT) {
            int rc = sync_queue(x);
            if (rc && !x->o->error) x->o->error = rc;
        }
        return path;
    case PE_SYNC: {
        int rc = sync_queue(x);
        if (rc) x->o->error = rc;
        return X_SYNC;
    }
    case PE_KERNEL: {
        const pe_buf *pos = &e->bufs[op->buf], *out = &e->bufs[op->aux];
        int rc = C(C_KERNEL, PH_NONE, kernel_replica(x->th->q, e->kernel_fn, (void *)(uintptr_t)pos->dev,
                                                      (void *)(uintptr_t)out->dev, (int)op->nbytes, (int)op->offset));
        if (rc) { x->o->error = rc; return X_FAILED; }
        x->th->pending = 1;
        return X_KERNEL;
    }
    case PE_MAP:
    case PE_UNMAP:
        if (!e->pol->map) return M_UNTRACKED;   /* the policy keeps no state for mapped buffers */
        return op->op == PE_MAP ? e->pol->map(x, op->buf) : e->pol->unmap(x, op->buf);
    case PE_PIN:     /* the application's own register of its array (QMCPACK's hipHostRegister) */
    case PE_UNPIN: {
        void *p = (void *)(uintptr_t)e->bufs[op->buf].host;
        size_t n = (size_t)e->bufs[op->buf].nbytes;
        int counted = op->flags & PE_COUNT, rc;
        if (counted && op->op == PE_UNPIN) count_forget(p, n);   /* its entry out of pinpath's count (untimed) */
        rc = op->op == PE_PIN ? C(C_LOCK, PH_LOCK, do_lock(p, n)) : C(C_UNLOCK, PH_UNLOCK, do_unlock(p, n));
        if (rc) { after_refusal(); x->o->error = rc; return X_FAILED; }
        if (counted && op->op == PE_PIN && count_adopt(p, n) != 0) {   /* entered as one count (untimed) */
            do_unlock(p, n);
            x->o->error = PP_ECAP;   /* pinpath's count is full */
            return X_FAILED;
        }
        return op->op == PE_PIN ? M_LOCKED : M_UNLOCKED;
    }
    case PE_ADOPT: {   /* memory the pinned allocator handed out: entered as external, no call */
        const pe_buf *b = &e->bufs[op->buf];
        pthread_mutex_lock(&e->mu);
        int k = fits(e, b->host, (size_t)b->nbytes) ? add_entry(e, b->host, b->host, (size_t)b->nbytes, 1) : -1;
        pthread_mutex_unlock(&e->mu);
        return k >= 0 ? X_ADOPTED : M_OVERLAP_REFUSED;
    }
    default:
        return X_FAILED;
    }
}

static void *thread_main(void *arg) {
    thr_t *th = arg;
    engine_t *e = th->e;
    rt_start(e->device);   /* CUDA: the device's primary context current on this thread (platform.h) */
    th->queue_ok = (th->q = queue_take(e->device)) != NULL;
    pthread_mutex_lock(&e->gate_mu);
    e->ready++;
    pthread_cond_broadcast(&e->gate_cv);
    while (!e->go) pthread_cond_wait(&e->gate_cv, &e->gate_mu);
    pthread_mutex_unlock(&e->gate_mu);
    if (e->abort_run) return NULL;
    for (int64_t i = 0; i < th->nops; ++i) {
        const pe_op *op = &th->ops[i];
        if (op->thread != th->t) continue;
        pe_out *o = &th->out[i];
        memset(o, 0, sizeof *o);
        o->first_call = (int32_t)(th->base + th->n);
        if (!th->queue_ok) { o->path = X_FAILED; o->error = PP_ENOTSUP; continue; }
        ctx_t x = {th, i, o};
        if (e->evict_nbytes && op->op == PE_TRANSFER)   /* cold: other memory written, before the timestamps */
            memset(e->evict + th->t * e->evict_nbytes, (int)(1 + (i & 0x7f)), (size_t)e->evict_nbytes);
        o->start_ns = now_ns();
        o->path = run_op(&x, op);
        o->end_ns = now_ns();
        o->n_calls = (int32_t)(th->base + th->n) - o->first_call;
    }
    return NULL;
}

/* what the policy still holds when the plan ends: undone untimed and unlogged */
static void close_engine(engine_t *e, thr_t *th0) {
    pe_out scratch;
    memset(&scratch, 0, sizeof scratch);
    ctx_t x = {th0, -1, &scratch};
    int64_t saved = th0->n;
    th0->cap = th0->n;   /* nothing more is logged */
    for (int k = 0; k < e->nentries; ++k)
        if (e->entries[k].live) {
            e->entries[k].live = 0;
            if (!e->entries[k].external) unlock_own(&x, k + 1, (void *)e->entries[k].host, e->entries[k].nbytes);
        }
    for (int b = 0; b < e->nbufs; ++b)
        if (e->pinned[b] == 2) do_unlock((void *)e->bufs[b].host, (size_t)e->bufs[b].nbytes);
    for (int k = 0; k < e->nslots; ++k) stage_free(e->slots[k].ptr, e->slots[k].cls);
    th0->n = saved;
    e->overflow = 0;
}

/* -- the API ----------------------------------------------------------------------------- */
NATIVE_COMMON_API(pe_, PE_API, PE_ABI)
PE_API int pe_sizes(int which) {
    switch (which) {
    case 0: return (int)sizeof(pe_op);
    case 1: return (int)sizeof(pe_buf);
    case 2: return (int)sizeof(pe_out);
    case 3: return (int)sizeof(pe_call);
    default: return -1;
    }
}
/* the names behind the numbers: kind 0 policy, 1 phase, 2 path, 3 call; NULL past the end
 * (a policy's steps: pe_policy) */
PE_API const char *pe_name(int kind, int i) {
    if (i < 0) return NULL;
    switch (kind) {
    case 0: return i < POL_N ? POLICIES[i].name : NULL;
    case 1: return i < PH_N ? PHASE_NAMES[i] : NULL;
    case 2: return i < P_N ? PATH_NAMES[i] : NULL;
    case 3: return i < C_N ? CALL_NAMES[i] : i < PE_NCALLS ? OWN_CALL_NAMES[i - C_N] : NULL;
    default: return NULL;
    }
}
/* policy i's steps as its table entry names them: query_first, the transfer step, the maps, the
 * pool, asynchronous, lock_mapped (ints 0/1; NULL past the end) */
PE_API const char *pe_policy(int i, int *query_first_, const char **transfer_, const char **maps_,
                             const char **pool_, int *asynchronous_, int *lock_mapped_) {
    if (i < 0 || i >= POL_N) return NULL;
    const policy_t *p = &POLICIES[i];
    *query_first_ = p->query_first; *transfer_ = p->transfer_name; *maps_ = p->maps_name;
    *pool_ = POOL_NAMES[p->pool]; *asynchronous_ = p->asynchronous; *lock_mapped_ = p->lock_mapped;
    return p->name;
}
PE_API int pe_locks_counted(void) { return LOCKS_COUNTED; }   /* 1: the runtime counts a re-lock itself (HSA) */
PE_API int pe_init(int device) { return rt_start(device); }   /* once per thread or process (platform.h) */
PE_API int pe_fini(void) {   /* closes the kept queues, then pairs a per-process start (else nothing) */
    queues_close();
    return rt_stop();
}
PE_API int pe_queues_made(void) {   /* queues made since the process started: reuse shows here */
    pthread_mutex_lock(&kept_mu);
    int n = queues_made;
    pthread_mutex_unlock(&kept_mu);
    return n;
}

/* Execute `ops` under `policy`. Threads 0 .. nthreads-1 each run the ops that name them, in
 * order, after one barrier. `calls` has room for `calls_cap` entries, split evenly between the
 * threads; `ncalls` (nthreads entries) receives how many each thread logged. The cache state:
 * with evict_nbytes > 0 each thread writes its own evict_nbytes of `evict` (nthreads x evict_nbytes,
 * the caller's) right before each of its transfers, outside the op's timestamps; 0 writes nothing.
 * Returns 0, PP_EARG on bad arguments, PP_ENOMEM, PP_ETHREAD, or 1 when the call log overflowed
 * (the plan ran; logs are cut). */
PE_API int pe_run(int policy, int device, int64_t threshold_nbytes, const pe_op *ops, int64_t nops,
                  const pe_buf *bufs, int nbufs, int nthreads, uint64_t kernel_fn,
                  pe_out *out, pe_call *calls, int64_t calls_cap, int64_t *ncalls,
                  void *evict, int64_t evict_nbytes) {
    if (policy < 0 || policy >= POL_N || nthreads < 1 || nops < 0 || nbufs < 0 || !out || !calls || !ncalls ||
        (nops && !ops) || (nbufs && !bufs) || calls_cap < nthreads || evict_nbytes < 0 || (evict_nbytes && !evict))
        return PP_EARG;
    for (int64_t i = 0; i < nops; ++i) {
        const pe_op *op = &ops[i];
        if (op->op < 0 || op->op >= PE_NOPS || op->thread < 0 || op->thread >= nthreads || op->buf < 0 ||
            op->buf >= nbufs || (op->op == PE_KERNEL && (op->aux < 0 || op->aux >= nbufs)) ||
            (op->op == PE_TRANSFER && (op->offset < 0 || op->nbytes < 0 ||
                                       op->offset + op->nbytes > bufs[op->buf].nbytes ||
                                       (op->direction != PP_H2D && op->direction != PP_D2H))))
            return PP_EARG;
    }
    engine_t e;
    memset(&e, 0, sizeof e);
    e.pol = &POLICIES[policy]; e.device = device; e.threshold = threshold_nbytes;
    e.bufs = bufs; e.nbufs = nbufs; e.kernel_fn = kernel_fn;
    e.evict = evict; e.evict_nbytes = evict_nbytes;
    e.asynchronous = e.pol->asynchronous;
    e.lock_mapped = e.pol->lock_mapped;
    e.pool_exact = e.pol->pool == POOL_EXACT;
    e.refs = calloc((size_t)(nbufs ? nbufs : 1) * PE_MAXREFS, sizeof *e.refs);
    e.nrefs = calloc((size_t)(nbufs ? nbufs : 1), sizeof *e.nrefs);
    e.pinned = calloc((size_t)(nbufs ? nbufs : 1), 1);
    thr_t *th = calloc((size_t)nthreads, sizeof *th);
    pthread_t *tids = calloc((size_t)nthreads, sizeof *tids);
    if (!e.refs || !e.nrefs || !e.pinned || !th || !tids) {
        free(e.refs); free(e.nrefs); free(e.pinned); free(th); free(tids);
        return PP_ENOMEM;
    }
    pthread_mutex_init(&e.mu, NULL);
    pthread_mutex_init(&e.gate_mu, NULL);
    pthread_cond_init(&e.gate_cv, NULL);
    int64_t per = calls_cap / nthreads;
    int status = 0, started = 0;
    for (int t = 0; t < nthreads; ++t) {
        th[t] = (thr_t){.e = &e, .t = t, .ops = ops, .nops = nops, .out = out,
                        .log = calls + t * per, .cap = per, .base = t * per};
    }
    for (int t = 1; t < nthreads; ++t) {
        if (pthread_create(&tids[t], NULL, thread_main, &th[t]) != 0) { status = PP_ETHREAD; break; }
        ++started;
    }
    pthread_mutex_lock(&e.gate_mu);
    while (e.ready < started) pthread_cond_wait(&e.gate_cv, &e.gate_mu);
    e.abort_run = status != 0;   /* a thread could not start: run nothing, say why */
    e.go = 1;
    pthread_cond_broadcast(&e.gate_cv);
    pthread_mutex_unlock(&e.gate_mu);
    if (!status) thread_main(&th[0]);   /* the calling thread is thread 0 */
    for (int t = 1; t <= started; ++t) pthread_join(tids[t], NULL);
    int overflow = e.overflow;
    for (int t = 0; t < nthreads; ++t)   /* the queues go back before the policy's buffers are freed */
        if (th[t].queue_ok) queue_give(th[t].q, e.device);
    close_engine(&e, &th[0]);
    for (int t = 0; t < nthreads; ++t) ncalls[t] = th[t].n;
    pthread_cond_destroy(&e.gate_cv);
    pthread_mutex_destroy(&e.gate_mu);
    pthread_mutex_destroy(&e.mu);
    free(e.entries); free(e.units); free(e.slots); free(e.refs); free(e.nrefs); free(e.pinned);
    free(th); free(tids);
    return status ? status : overflow;
}
