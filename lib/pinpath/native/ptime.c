/* ptime: pinpath's C timing library. Python (lib/pinpath/nativelib.py) compiles it per
 * runtime into a shared object, loads it with ctypes and passes it its own buffers, so the
 * microsecond figures are taken in C on the very memory the Python side locks and copies,
 * without the interpreter between the two clock reads.
 *
 * Builds: -DPINPATH_CUDA (CUDA runtime, cuda_runtime_api.h, libcudart),
 *         -DPINPATH_HSA  (ROCm HSA runtime, hsa/hsa.h, libhsa-runtime64),
 *         -DPINPATH_HOST (libc only: mlock/munlock).
 *
 * Every timed function reads clock_gettime(CLOCK_MONOTONIC) right before and right after
 * the one call it times, writes the difference in nanoseconds to ns[i] and the call's
 * return code (cudaError_t, hsa_status_t, or errno for libc; 0 = success) to rc[i], for
 * i in [0, reps). The functions themselves return 0, PP_EARG on bad arguments, or
 * PP_ENOTSUP where the platform has no such call. The caller owns every array.
 *
 * Threads: nothing here is global except what the runtimes keep themselves, so several
 * threads may time calls at once, each on its own buffer (ctypes drops the GIL around
 * each call).
 */
#include "platform.h"

#define PP_API __attribute__((visibility("default")))
#define PP_ABI 2          /* bumped when a signature changes; nativelib.py checks it */

/* TIME(ns_out, rc_out, call): time one call. */
#define TIME(ns_out, rc_out, call)            \
    do {                                      \
        int64_t t0_ = now_ns();               \
        int rc_ = (call);                     \
        int64_t t1_ = now_ns();               \
        (ns_out) = t1_ - t0_;                 \
        (rc_out) = rc_;                       \
    } while (0)


/* ---------------------------------------------------------------------------------- */
/* Undo a granted inner (re-)lock so the caller's state is unchanged, untimed.
 * Counted runtimes (HSA) and CUDA (a grant means the caller had not registered) unlock;
 * on the host a re-mlock changed nothing, so nothing is undone. */
static int undo_inner_lock(void *p, size_t n) {
#if defined(PINPATH_HOST)
    (void)p; (void)n;
    return 0;
#else
    return do_unlock(p, n);
#endif
}

/* Time the unlock of a granted re-lock. On the host that munlock really unlocks the
 * caller's memory (mlock does not stack): the caller's lock is put back, untimed. */
static int timed_inner_unlock(void *p, size_t n, int64_t *ns, int32_t *rc) {
    int r;
    TIME(*ns, r, do_unlock(p, n));
    *rc = r;
#if defined(PINPATH_HOST)
    if (r == 0 && do_lock(p, n) != 0) return PP_ERESTORE;
#endif
    return 0;
}

#define CHECK_ARRAYS(reps, ...)                                                          \
    do {                                                                                 \
        if ((reps) < 0) return PP_EARG;                                                  \
        const void *arrs_[] = {__VA_ARGS__};                                             \
        for (size_t k_ = 0; (reps) > 0 && k_ < sizeof arrs_ / sizeof arrs_[0]; ++k_)     \
            if (!arrs_[k_]) return PP_EARG;                                              \
    } while (0)

NATIVE_COMMON_API(pp_, PP_API, PP_ABI)
PP_API int pp_locks_counted(void) { return LOCKS_COUNTED; }
PP_API int pp_has_query(void) { return HAS_QUERY; }
PP_API int pp_has_copy(void) { return HAS_COPY; }
PP_API int pp_stage_needs_pool(void) { return STAGE_NEEDS_POOL; }

/* Start the runtime where it is not started yet (rt_start): CUDA makes the device's primary
 * context current on the calling thread and creates it (cudaSetDevice + cudaFree(0)), once per
 * thread; HSA: hsa_init once per process (pp_fini pairs it); host: nothing. Call it before every
 * use; returns the runtime's code. */
PP_API int pp_init(int device) { return rt_start(device); }
PP_API int pp_fini(void) { return rt_stop(); }

/* Untimed helpers, so a caller can set up a state without its own runtime. */
PP_API int pp_lock_once(void *p, size_t n) {
    if (!p) return PP_EARG;
    int rc = do_lock(p, n);
    if (rc) after_refusal();
    return rc;
}
PP_API int pp_unlock_once(void *p, size_t n) { return p ? do_unlock(p, n) : PP_EARG; }
/* 1: locked/registered, 2: a runtime allocation (HSA), 0: neither, PP_ENOTSUP on the
 * host, -1000 - rc when the query itself failed. */
PP_API int pp_locked(void *p) { return p ? locked_state(p) : PP_EARG; }

/* The runtime's cheapest call: cudaGetDevice, hsa_system_get_info(TIMESTAMP), getppid. */
PP_API int pp_null(int reps, int64_t *ns, int32_t *rc) {
    CHECK_ARRAYS(reps, ns, rc);
    for (int i = 0; i < reps; ++i) {
        int r;
        TIME(ns[i], r, do_null());
        rc[i] = r;
    }
    return 0;
}

/* A lock (timed), repeated; each granted one is undone by undo (untimed). */
static int time_locks(void *p, size_t n, int reps, int64_t *ns, int32_t *rc, int (*undo)(void *, size_t)) {
    if (!p) return PP_EARG;
    CHECK_ARRAYS(reps, ns, rc);
    for (int i = 0; i < reps; ++i) {
        int r;
        TIME(ns[i], r, do_lock(p, n));
        rc[i] = r;
        if (r == 0) undo(p, n); else after_refusal();
    }
    return 0;
}

/* Lock of unlocked memory (timed); each granted lock is undone untimed, so every rep
 * starts unlocked. */
PP_API int pp_lock(void *p, size_t n, int reps, int64_t *ns, int32_t *rc) {
    return time_locks(p, n, reps, ns, rc, do_unlock);
}

/* Unlock of locked memory (timed), after an untimed lock; a refused lock leaves
 * ns = 0 and its code in rc. */
PP_API int pp_unlock(void *p, size_t n, int reps, int64_t *ns, int32_t *rc) {
    if (!p) return PP_EARG;
    CHECK_ARRAYS(reps, ns, rc);
    for (int i = 0; i < reps; ++i) {
        int r = do_lock(p, n);
        if (r) { after_refusal(); ns[i] = 0; rc[i] = r; continue; }
        TIME(ns[i], r, do_unlock(p, n));
        rc[i] = r;
    }
    return 0;
}

/* Re-lock of memory the caller has locked (timed). CUDA refuses (712, the recorded
 * error is cleared); a granted inner lock is undone untimed where locks are counted,
 * so the caller's count is unchanged. */
PP_API int pp_relock(void *p, size_t n, int reps, int64_t *ns, int32_t *rc) {
    return time_locks(p, n, reps, ns, rc, undo_inner_lock);
}

/* C13's path on memory the caller has locked: re-lock (timed), then, when it was
 * granted, the unlock of that re-lock (timed). Refused: unlock_ns = 0, unlock_rc = -1.
 * Host: that munlock unlocks the caller's memory too; it is re-locked untimed. */
PP_API int pp_relock_unlock(void *p, size_t n, int reps, int64_t *lock_ns, int64_t *unlock_ns,
                            int32_t *lock_rc, int32_t *unlock_rc) {
    if (!p) return PP_EARG;
    CHECK_ARRAYS(reps, lock_ns, unlock_ns, lock_rc, unlock_rc);
    for (int i = 0; i < reps; ++i) {
        int r;
        TIME(lock_ns[i], r, do_lock(p, n));
        lock_rc[i] = r;
        unlock_ns[i] = 0;
        unlock_rc[i] = PP_NOT_RUN;
        if (r != 0) { after_refusal(); continue; }
        if (timed_inner_unlock(p, n, &unlock_ns[i], &unlock_rc[i]) != 0) return PP_ERESTORE;
    }
    return 0;
}

/* Pointer query (timed): cudaPointerGetAttributes, hsa_amd_pointer_info; the host has
 * none (PP_ENOTSUP). */
PP_API int pp_query(void *p, int reps, int64_t *ns, int32_t *rc) {
    if (!HAS_QUERY) return PP_ENOTSUP;
    if (!p) return PP_EARG;
    CHECK_ARRAYS(reps, ns, rc);
    for (int i = 0; i < reps; ++i) {
        int r;
        TIME(ns[i], r, do_query(p));
        rc[i] = r;
        if (r) after_refusal();
    }
    return 0;
}

/* Pinned staging buffer: allocate (timed) and free (timed). cudaMallocHost/cudaFreeHost;
 * hsa_amd_memory_pool_allocate on `pool` (a hsa_amd_memory_pool_t handle) and
 * hsa_amd_memory_pool_free; host mmap+mlock / munlock+munmap. `pool` is ignored but
 * by HSA. rc is the first failure of the rep; a failed allocation leaves free_ns 0. */
PP_API int pp_stage(uint64_t pool, size_t n, int reps, int64_t *alloc_ns, int64_t *free_ns, int32_t *rc) {
    CHECK_ARRAYS(reps, alloc_ns, free_ns, rc);
    for (int i = 0; i < reps; ++i) {
        void *p = NULL;
        int r;
        TIME(alloc_ns[i], r, stage_alloc(pool, n, &p));
        free_ns[i] = 0;
        rc[i] = r;
        if (r) { after_refusal(); continue; }
        TIME(free_ns[i], r, stage_free(p, n));
        rc[i] = r;
    }
    return 0;
}

/* carlobertolli's three cases (C12), an H2D copy of `n` bytes from host_ptr to dev_ptr
 * on `stream` (CUDA: a cudaStream_t/CUstream handle made by the caller; host: ignored,
 * a worker thread of this call copies). Every phase is timed apart:
 *   case 1: lock(a); enqueue copy(a); wait; unlock(a)       (a unlocked beforehand)
 *   case 2: enqueue copy(a); wait                              (a locked by the caller)
 *   case 3: re-lock(a); enqueue copy(a); wait; unlock of the re-lock when granted
 *           (CUDA refuses with 712 and copies from a as it is)
 * rc is reps x 4 (lock, enqueue, wait, unlock); a phase not run has ns 0 and rc -1.
 * Case 1 stops the rep after a refused lock. */
PP_API int pp_c12(int which, void *host_ptr, void *dev_ptr, size_t n, void *stream, int reps,
                  int64_t *lock_ns, int64_t *enqueue_ns, int64_t *wait_ns, int64_t *unlock_ns, int32_t *rc) {
#if HAS_COPY
    if (which < 1 || which > 3 || !host_ptr || !dev_ptr) return PP_EARG;
    CHECK_ARRAYS(reps, lock_ns, enqueue_ns, wait_ns, unlock_ns, rc);
    queue_t q;
    if (queue_open(stream, &q) != 0) return PP_EARG;
    int status = 0;
    for (int i = 0; i < reps; ++i) {
        int32_t *r4 = rc + 4 * (size_t)i;
        int r;
        lock_ns[i] = enqueue_ns[i] = wait_ns[i] = unlock_ns[i] = 0;
        r4[0] = r4[1] = r4[2] = r4[3] = PP_NOT_RUN;
        if (which != 2) {
            TIME(lock_ns[i], r, do_lock(host_ptr, n));
            r4[0] = r;
            if (r) { after_refusal(); if (which == 1) continue; }
        }
        TIME(enqueue_ns[i], r, copy_async(&q, dev_ptr, host_ptr, n, PP_H2D));
        r4[1] = r;
        if (r == 0) { TIME(wait_ns[i], r, queue_wait(&q)); r4[2] = r; }
        if (which == 1 && r4[0] == 0) {
            TIME(unlock_ns[i], r, do_unlock(host_ptr, n));
            r4[3] = r;
        } else if (which == 3 && r4[0] == 0) {
            int64_t ns;
            int32_t ur;
            if (timed_inner_unlock(host_ptr, n, &ns, &ur) != 0) { status = PP_ERESTORE; break; }
            unlock_ns[i] = ns;
            r4[3] = ur;
        }
    }
    queue_close(&q);
    return status;
#else
    (void)which; (void)host_ptr; (void)dev_ptr; (void)n; (void)stream; (void)reps;
    (void)lock_ns; (void)enqueue_ns; (void)wait_ns; (void)unlock_ns; (void)rc;
    return PP_ENOTSUP;
#endif
}
