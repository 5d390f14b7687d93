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

/* its parts, in this order: each builds on those before it */
#include "engine_queues.h"   /* copy queues kept for the process */
#include "engine_steps.h"    /* a runtime call timed; the mechanics every policy shares */
#include "engine_locks.h"    /* the locks a policy makes itself */
#include "engine_maps.h"     /* the maps: nextgen's pinned ranges, prepinned */

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
 * stage_pooled, lock_copy_unlock, pageable (engine_steps.h) and nextgen_transfer (engine_maps.h) */
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
                                       (op->direction != PP_H2D && op->direction != PP_D2H))) ||
            ((op->flags & PE_COUNT) && LOCKS_COUNTED))   /* the runtime counts itself: pinpath's count is not asked */
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
