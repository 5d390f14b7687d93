/* state: what changes a transfer's cost (notebook 14_state_effects), timed in C.
 * Built like ptime.c (lib/pinpath/nativelib.py: build(platform, source="state.c")), loaded and
 * wrapped by lib/pinpath/statelib.py.
 *
 * The runtime calls are platform.h's table (shared with ptime.c and engine.c): -DPINPATH_CUDA,
 * -DPINPATH_HSA (no copies here: the table has no device allocation), -DPINPATH_HOST.
 *
 * Each function is one round of one state: the caller passes fresh buffers (ps_buffer), the
 * function sets the state up untimed, times the calls it is about with CLOCK_MONOTONIC right
 * around each one, and undoes every registration and allocation it made before it returns.
 * Return codes of the timed calls go to rc arrays (0 = success; the runtime's code, errno on
 * the host); the functions return 0, PP_EARG, PP_ENOTSUP, or PS_ESETUP (an untimed setup call
 * failed: its code is in rc[0], nothing was timed).
 */
#include "platform.h"

#define PS_API __attribute__((visibility("default")))
#define PS_ABI 2
#define PS_ESETUP (-4)    /* an untimed setup call failed: its code is in rc[0] */
#define HUGE_NBYTES ((size_t)2 << 20)

/* The runtime's pinned allocation as a staging policy makes it: allocate, and grant the GPU
 * access where the runtime needs it (HSA: hsa_amd_agents_allow_access on the fine pool, the
 * agents and the pool found first by rt_prepare). */
static int pinned_alloc(size_t n, void **out) {
    int rc = rt_prepare();
    if (rc) return rc;
    int r = stage_alloc(0, n, out);
    if (r == 0 && NEEDS_GRANT && (r = stage_grant(*out, n)) != 0) stage_free(*out, n);
    return r;
}

/* A synchronous H2D copy on queue q: enqueue and wait (CUDA: cudaMemcpyAsync on a non-blocking
 * stream + cudaStreamSynchronize; host: the worker thread's memcpy). The caller makes q once,
 * untimed, as a runtime keeps its streams: a stream made inside the timed region would add its
 * creation and destruction to every copy. */
static int copy_sync(queue_t *q, void *dst, const void *src, size_t n) {
    int rc = copy_async(q, dst, src, n, PP_H2D);
    return rc ? rc : queue_wait(q);
}

/* the call whose age is measured: 0 = pointer query, 1 = re-register of registered memory */
static int aged_call(int op, void *p, size_t n) {
    if (op == 0) return do_query(p);
    int rc = do_lock(p, n);
    if (rc == 0 && LOCKS_COUNTED) do_unlock(p, n);   /* untimed: the caller's count stays one */
    if (rc != 0) after_refusal();
    return rc;
}

NATIVE_COMMON_API(ps_, PS_API, PS_ABI)
PS_API int ps_has_query(void) { return HAS_QUERY; }
PS_API int ps_has_pinned(void) { return 1; }
PS_API int ps_has_copy(void) { return HAS_DEV_ALLOC; }
/* Start the runtime where it is not started yet (rt_start, as ptime.c and engine.c), then what
 * its calls need found (rt_prepare; HSA: the agents and the fine pool, now, so no timed call pays
 * for it; a failure there is the pinned allocation's return code later). */
PS_API int ps_init(int device) {
    int rc = rt_start(device);
    if (rc == 0) (void)rt_prepare();
    return rc;
}
PS_API int ps_fini(void) { return rt_stop(); }

/* A fresh anonymous mapping of n bytes, every page written (so the backing is decided before
 * anything is timed): thp = 1 asks for transparent huge pages (2 MiB-aligned, MADV_HUGEPAGE),
 * thp = 0 for 4 KiB pages (MADV_NOHUGEPAGE). NULL if the mapping failed. Free with ps_buffer_free. */
PS_API void *ps_buffer(size_t n, int thp) {
    if (n == 0) return NULL;
    size_t extra = thp ? HUGE_NBYTES : 0;
    uint8_t *raw = mmap(NULL, n + extra, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) return NULL;
    uint8_t *p = raw;
    if (thp) {   /* trim to a 2 MiB boundary so whole huge pages fit */
        p = (uint8_t *)(((uintptr_t)raw + HUGE_NBYTES - 1) & ~(uintptr_t)(HUGE_NBYTES - 1));
        if (p > raw) munmap(raw, (size_t)(p - raw));
        size_t tail = (size_t)(raw + n + extra - (p + n));
        if (tail) munmap(p + n, tail);
    }
#ifdef MADV_HUGEPAGE
    madvise(p, n, thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#endif
    memset(p, 0x5a, n);
    return p;
}
PS_API int ps_buffer_free(void *p, size_t n) { return p && munmap(p, n) == 0 ? 0 : PP_EARG; }

/* A destination for copies: device memory (CUDA), a host mapping (host), NULL where the
 * platform has no copy here (HSA). */
PS_API void *ps_dev_alloc(size_t n) { return dev_alloc(n); }
PS_API int ps_dev_free(void *p, size_t n) { return p ? dev_free(p, n) : 0; }

/* The runtime's cheapest call, `reps` times. */
PS_API int ps_null(int reps, int64_t *ns, int32_t *rc) {
    if (reps < 0 || (reps && (!ns || !rc))) return PP_EARG;
    for (int i = 0; i < reps; ++i) { int r; TIME(ns[i], r, do_null()); rc[i] = r; }
    return 0;
}

/* Registration age of `op` (0 query, 1 re-register) on a buffer that is not registered:
 *   register (timed: reg_ns[0], reg_rc[0]); the first `op` after it (first_ns/first_rc);
 *   `calls` more in a row while it stays registered (held_ns/held_rc[calls]); unregister;
 *   then `calls` times: register, one `op` (fresh_ns/fresh_rc[calls]), unregister (untimed).
 * A refused first register: PS_ESETUP with its code in reg_rc[0]. */
PS_API int ps_reg_age(void *p, size_t n, int op, int calls, int64_t *reg_ns, int32_t *reg_rc,
                      int64_t *first_ns, int32_t *first_rc, int64_t *held_ns, int32_t *held_rc,
                      int64_t *fresh_ns, int32_t *fresh_rc) {
    if (!p || calls < 0 || op < 0 || op > 1 || !reg_ns || !reg_rc || !first_ns || !first_rc) return PP_EARG;
    if (calls && (!held_ns || !held_rc || !fresh_ns || !fresh_rc)) return PP_EARG;
    if (op == 0 && !HAS_QUERY) return PP_ENOTSUP;
    int r;
    TIME(reg_ns[0], r, do_lock(p, n));
    reg_rc[0] = r;
    if (r) { after_refusal(); return PS_ESETUP; }
    TIME(first_ns[0], r, aged_call(op, p, n));
    first_rc[0] = r;
    for (int i = 0; i < calls; ++i) { TIME(held_ns[i], r, aged_call(op, p, n)); held_rc[i] = r; }
    do_unlock(p, n);
    for (int i = 0; i < calls; ++i) {
        fresh_ns[i] = 0;
        fresh_rc[i] = PP_NOT_RUN;
        if (do_lock(p, n) != 0) { after_refusal(); continue; }
        TIME(fresh_ns[i], r, aged_call(op, p, n));
        fresh_rc[i] = r;
        do_unlock(p, n);
    }
    return 0;
}

/* The pinned allocator (cudaMallocHost/cudaFreeHost; host mmap+mlock) in a state set up
 * untimed: `live_pinned` allocations of n bytes held, `live_registered` mappings of reg_nbytes
 * registered and held, and `prior_frees` allocations of n bytes made and freed just before.
 * Then `reps` allocations, each freed at once, both timed (a failed allocation: free_ns 0).
 * Everything is undone before returning. */
PS_API int ps_alloc_state(size_t n, int live_pinned, int live_registered, size_t reg_nbytes, int prior_frees,
                          int reps, int64_t *alloc_ns, int64_t *free_ns, int32_t *rc) {
    if (!n || live_pinned < 0 || live_registered < 0 || prior_frees < 0 || reps < 1 || !alloc_ns || !free_ns || !rc)
        return PP_EARG;
    int status = 0, held = 0, regd = 0, made = 0;
    void **live = calloc((size_t)live_pinned + 1, sizeof *live);
    void **regs = calloc((size_t)live_registered + 1, sizeof *regs);
    void **prior = calloc((size_t)prior_frees + 1, sizeof *prior);
    if (!live || !regs || !prior) { status = PP_EARG; goto out; }
    for (; held < live_pinned; ++held) {
        int r = pinned_alloc(n, &live[held]);
        if (r) { after_refusal(); rc[0] = r; status = PS_ESETUP; goto out; }
    }
    for (; regd < live_registered; ++regd) {
        regs[regd] = ps_buffer(reg_nbytes, 0);
        int r = regs[regd] ? do_lock(regs[regd], reg_nbytes) : ENOMEM;
        if (r) {
            after_refusal();
            if (regs[regd]) ps_buffer_free(regs[regd], reg_nbytes);
            rc[0] = r; status = PS_ESETUP; goto out;
        }
    }
    for (; made < prior_frees; ++made) {
        int r = pinned_alloc(n, &prior[made]);
        if (r) { after_refusal(); rc[0] = r; status = PS_ESETUP; goto out; }
    }
    for (; made > 0; --made) stage_free(prior[made - 1], n);
    for (int i = 0; i < reps; ++i) {
        void *q = NULL;
        int r;
        TIME(alloc_ns[i], r, pinned_alloc(n, &q));
        rc[i] = r;
        free_ns[i] = 0;
        if (r) { after_refusal(); continue; }
        TIME(free_ns[i], r, stage_free(q, n));
        if (r) rc[i] = r;
    }
out:
    for (; made > 0; --made) stage_free(prior[made - 1], n);
    for (; regd > 0; --regd) {
        do_unlock(regs[regd - 1], reg_nbytes);
        ps_buffer_free(regs[regd - 1], reg_nbytes);
    }
    for (; held > 0; --held) stage_free(live[held - 1], n);
    free(live); free(regs); free(prior);
    return status;
}

/* Lock and copy on one buffer, `reps` times: copy of the pageable buffer to dst, register,
 * copy of the registered buffer, unregister; each timed. rc is reps x 4 in that order; where
 * the platform has no copy (dst NULL) the copies are not run (ns 0, rc PP_NOT_RUN). */
PS_API int ps_lock_copy(void *p, size_t n, void *dst, int reps, int64_t *copy_pageable_ns, int64_t *lock_ns,
                        int64_t *copy_locked_ns, int64_t *unlock_ns, int32_t *rc) {
    if (!p || reps < 1 || !copy_pageable_ns || !lock_ns || !copy_locked_ns || !unlock_ns || !rc) return PP_EARG;
    queue_t q;
    int qrc = 0;   /* untimed: one queue for every copy of the call, used once before them */
    if (dst && (qrc = queue_new(&q)) == 0 && (qrc = copy_sync(&q, dst, p, n < 4096 ? n : 4096)) != 0) queue_close(&q);
    if (qrc) { rc[0] = qrc; return PS_ESETUP; }
    for (int i = 0; i < reps; ++i) {
        int32_t *r4 = rc + 4 * (size_t)i;
        int r;
        copy_pageable_ns[i] = lock_ns[i] = copy_locked_ns[i] = unlock_ns[i] = 0;
        r4[0] = r4[1] = r4[2] = r4[3] = PP_NOT_RUN;
        if (dst) { TIME(copy_pageable_ns[i], r, copy_sync(&q, dst, p, n)); r4[0] = r; }
        TIME(lock_ns[i], r, do_lock(p, n));
        r4[1] = r;
        if (r) { after_refusal(); continue; }
        if (dst) { TIME(copy_locked_ns[i], r, copy_sync(&q, dst, p, n)); r4[2] = r; }
        TIME(unlock_ns[i], r, do_unlock(p, n));
        r4[3] = r;
    }
    if (dst) queue_close(&q);
    return 0;
}

/* Cache residency: one H2D transfer of n bytes under `policy`, with the buffer hot or cold, `reps`
 * times; hot and cold interleaved (even reps hot first, odd reps cold first).
 *   policy 0 pinned    a pinned allocation (pinned_alloc) copied directly;
 *          1 pageable  the pageable buffer p copied directly (the runtime stages it);
 *          2 lock      register p, copy it, unregister (all three timed as one transfer);
 *          3 staged    memcpy of p into a pinned buffer allocated once (untimed), then its copy.
 *   hot:  one untimed transfer of the same buffer under the same policy right before the timed one
 *         (the buffer just copied, as in a loop of transfers);
 *   cold: `evict_nbytes` of OTHER memory (evict, the caller's) written right before the timed
 *         one (as an application's compute phase writes its arrays between transfers).
 * Neither preparation is between the timestamps. hot_ns/cold_ns[reps]; rc is reps x 2 (hot, cold). */
static int cache_one(int policy, queue_t *q, void *dst, void *p, void *own, size_t n) {
    int rc;
    switch (policy) {
    case 0: return copy_sync(q, dst, own, n);
    case 1: return copy_sync(q, dst, p, n);
    case 2:
        if ((rc = do_lock(p, n)) != 0) { after_refusal(); return rc; }
        rc = copy_sync(q, dst, p, n);
        int un = do_unlock(p, n);
        return rc ? rc : un;
    default:
        memcpy(own, p, n);
        return copy_sync(q, dst, own, n);
    }
}

PS_API int ps_cache(int policy, void *p, size_t n, void *dst, void *evict, size_t evict_nbytes, int reps,
                    int64_t *hot_ns, int64_t *cold_ns, int32_t *rc) {
    if (policy < 0 || policy > 3 || !p || !n || !dst || (evict_nbytes && !evict) || reps < 1 || !hot_ns || !cold_ns || !rc)
        return PP_EARG;
    void *own = NULL;   /* pinned: the buffer copied; staged: the staging buffer */
    int r = (policy == 0 || policy == 3) ? pinned_alloc(n, &own) : 0;
    if (r) { after_refusal(); rc[0] = r; return PS_ESETUP; }
    if (own) memcpy(own, p, n);
    queue_t q;
    if ((r = queue_new(&q)) != 0) {
        if (own) stage_free(own, n);
        rc[0] = r;
        return PS_ESETUP;
    }
    for (int i = 0; i < reps; ++i) {
        for (int k = 0; k < 2; ++k) {
            int cold = (k + i) % 2;   /* even reps: hot, then cold; odd: cold, then hot */
            if (cold) {
                if (evict_nbytes) memset(evict, (int)(0x11 + i + k), evict_nbytes);
            } else {
                (void)cache_one(policy, &q, dst, p, own, n);
            }
            int64_t *ns = cold ? &cold_ns[i] : &hot_ns[i];
            TIME(*ns, r, cache_one(policy, &q, dst, p, own, n));
            rc[2 * (size_t)i + (size_t)cold] = r;
        }
    }
    queue_close(&q);
    if (own) stage_free(own, n);
    return 0;
}
