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


/* ---------------------------------------------------------------------------------- */
/* Undo a granted inner (re-)lock so the caller's state is unchanged, untimed.
 * Counted runtimes (HSA) and CUDA (a grant means the caller had not registered) unlock;
 * where a page is locked or not (LOCKS_BY_PAGE: the host's mlock) a re-lock changed nothing,
 * so nothing is undone. */
static int undo_inner_lock(void *p, size_t n) {
    return LOCKS_BY_PAGE ? 0 : do_unlock(p, n);
}

/* Time the unlock of a granted re-lock. Where a page is locked or not (the host's mlock does
 * not stack) that unlock really unlocks the caller's memory: its lock is put back, untimed. */
static int timed_inner_unlock(void *p, size_t n, int64_t *ns, int32_t *rc) {
    int r;
    TIME(*ns, r, do_unlock(p, n));
    *rc = r;
    if (LOCKS_BY_PAGE && r == 0 && do_lock(p, n) != 0) return PP_ERESTORE;
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

#include "counts.h"   /* pinpath's own count of locks (ROCT's count's analogue) */

/* C7, C9, C13's path as a counting runtime takes it, on memory the caller has locked: the re-lock
 * counted by pinpath (timed), then its unlock (timed), which only takes the count back down. */
PP_API int pp_counted_relock_unlock(void *p, size_t n, int reps, int64_t *lock_ns, int64_t *unlock_ns,
                                    int32_t *lock_rc, int32_t *unlock_rc) {
    if (!p) return PP_EARG;
    CHECK_ARRAYS(reps, lock_ns, unlock_ns, lock_rc, unlock_rc);
    if (count_adopt(p, n) != 0) return PP_EARG;
    for (int i = 0; i < reps; ++i) {
        int r;
        TIME(lock_ns[i], r, counted_lock(p, n));
        lock_rc[i] = r;
        unlock_ns[i] = 0;
        unlock_rc[i] = PP_NOT_RUN;
        if (r == 0) { TIME(unlock_ns[i], r, counted_unlock(p, n)); unlock_rc[i] = r; }
    }
    count_forget(p, n);
    return 0;
}

/* carlobertolli's three cases (C12), an H2D copy of `n` bytes from host_ptr to dev_ptr
 * on `stream` (CUDA: a cudaStream_t/CUstream handle made by the caller; host: ignored,
 * a worker thread of this call copies). Every phase is timed apart:
 *   case 1: lock(a); enqueue copy(a); wait; unlock(a)       (a unlocked beforehand)
 *   case 2: enqueue copy(a); wait                              (a locked by the caller)
 *   case 3: re-lock(a); enqueue copy(a); wait; unlock of the re-lock when granted
 *           (CUDA refuses with 712 and copies from a as it is)
 *   case 4: case 3 with the re-lock and its unlock counted by pinpath (pp_counted_relock_unlock)
 * rc is reps x 4 (lock, enqueue, wait, unlock); a phase not run has ns 0 and rc -1.
 * Case 1 stops the rep after a refused lock. */
PP_API int pp_c12(int which, void *host_ptr, void *dev_ptr, size_t n, void *stream, int reps,
                  int64_t *lock_ns, int64_t *enqueue_ns, int64_t *wait_ns, int64_t *unlock_ns, int32_t *rc) {
    if (!HAS_COPY) return PP_ENOTSUP;
    if (which < 1 || which > 4 || !host_ptr || !dev_ptr) return PP_EARG;
    CHECK_ARRAYS(reps, lock_ns, enqueue_ns, wait_ns, unlock_ns, rc);
    queue_t q;
    if (queue_open(stream, &q) != 0) return PP_EARG;
    if (which == 4 && count_adopt(host_ptr, n) != 0) { queue_close(&q); return PP_EARG; }
    int status = 0;
    for (int i = 0; i < reps; ++i) {
        int32_t *r4 = rc + 4 * (size_t)i;
        int r;
        lock_ns[i] = enqueue_ns[i] = wait_ns[i] = unlock_ns[i] = 0;
        r4[0] = r4[1] = r4[2] = r4[3] = PP_NOT_RUN;
        if (which != 2) {
            TIME(lock_ns[i], r, which == 4 ? counted_lock(host_ptr, n) : do_lock(host_ptr, n));
            r4[0] = r;
            if (r) { after_refusal(); if (which == 1) continue; }
        }
        TIME(enqueue_ns[i], r, copy_async(&q, dev_ptr, host_ptr, n, PP_H2D));
        r4[1] = r;
        if (r == 0) { TIME(wait_ns[i], r, queue_wait(&q)); r4[2] = r; }
        if (which == 1 && r4[0] == 0) {
            TIME(unlock_ns[i], r, do_unlock(host_ptr, n));
            r4[3] = r;
        } else if (which == 4 && r4[0] == 0) {
            TIME(unlock_ns[i], r, counted_unlock(host_ptr, n));
            r4[3] = r;
        } else if (which == 3 && r4[0] == 0) {
            int64_t ns;
            int32_t ur;
            if (timed_inner_unlock(host_ptr, n, &ns, &ur) != 0) { status = PP_ERESTORE; break; }
            unlock_ns[i] = ns;
            r4[3] = ur;
        }
    }
    if (which == 4) count_forget(host_ptr, n);
    queue_close(&q);
    return status;
}

/* ---------------------------------------------------------------------------------- */
/* C11 as meant: can another thread's unlock pull the lock out from under a copy that relies
 * on it? Per rep, on a fresh queue:
 *   idle:     lock [a, a + b_nbytes) untimed, then its unlock timed with nothing in flight;
 *   thread B: locks [a, a + b_nbytes) (b_nbytes >= n: exactly A's range, or more) and says so;
 *   thread A: asks the runtime whether a is locked (what a query-then-lock runtime asks),
 *             enqueues `copies` async H2D copies of [a, a + n) to dev_ptr without a lock of
 *             its own (it relies on B's: on HSA it copies from the agent alias the query
 *             returned), then says so;
 *   thread B: unlocks its range at once (timed);
 *   thread A: polls the queue until the copies are done (the first poll that sees them done),
 *             then waits on it.
 * The driver's answer is in the timestamps and codes: B's unlock returning after the copies
 * ended although an idle unlock would have ended before (it waited), a failed code, or (checked
 * by the caller, outside this call) bytes that differ. The poll is a tight loop of the queue's
 * own query (cudaStreamQuery, hsa_signal_load, the host worker's flag) with sched_yield between
 * polls, as the waits between the threads are (two spinning threads on few cores).
 * t is reps x C11_T: B's lock start/end, A's first enqueue start, last enqueue end, B's unlock
 * start/end, copies seen done, A's wait end (CLOCK_MONOTONIC ns), the idle unlock's ns.
 * rc is reps x C11_RC: B's lock, A's query (1 locked, 0 not, -1000 - rc failed), A's enqueues
 * (the first failure), B's unlock, A's wait, the idle lock or unlock (the first failure);
 * a step not run has rc PP_NOT_RUN. */
#include <sched.h>
#include <stdatomic.h>

enum { C11_T = 9, C11_RC = 6 };

typedef struct {
    void *a;
    size_t b_nbytes;
    int device;
    atomic_int stage;    /* 1: B locked (or failed to), 2: A enqueued */
    int64_t *t;          /* this rep's row */
    int32_t *rc;
} c11_b;

static void *c11_thread_b(void *arg) {
    c11_b *b = arg;
    int r = rt_start(b->device);
    b->t[0] = now_ns();
    if (r == 0) r = do_lock(b->a, b->b_nbytes);
    b->t[1] = now_ns();
    b->rc[0] = r;
    if (r) after_refusal();
    atomic_store(&b->stage, 1);
    while (atomic_load(&b->stage) < 2) sched_yield();
    if (b->rc[0] == 0) {
        b->t[4] = now_ns();
        r = do_unlock(b->a, b->b_nbytes);
        b->t[5] = now_ns();
        b->rc[3] = r;
    }
    return NULL;
}

PP_API int pp_c11(void *a, size_t n, size_t b_nbytes, void *dev_ptr, int copies, int device, int reps,
                  int64_t *t, int32_t *rc) {
    if (!a || !dev_ptr || b_nbytes < n || copies < 1) return PP_EARG;
    CHECK_ARRAYS(reps, t, rc);
    for (int i = 0; i < reps; ++i) {
        int64_t *ti = t + C11_T * (size_t)i;
        int32_t *ri = rc + C11_RC * (size_t)i;
        for (int k = 0; k < C11_T; ++k) ti[k] = 0;
        for (int k = 0; k < C11_RC; ++k) ri[k] = PP_NOT_RUN;
        int r = do_lock(a, b_nbytes);
        if (r == 0) { TIME(ti[8], r, do_unlock(a, b_nbytes)); } else after_refusal();
        ri[5] = r;
        queue_t q;
        if ((r = queue_new(&q)) != 0) { ri[2] = r; continue; }
        c11_b b = {.a = a, .b_nbytes = b_nbytes, .device = device, .t = ti, .rc = ri};
        atomic_init(&b.stage, 0);
        pthread_t th;
        if (pthread_create(&th, NULL, c11_thread_b, &b) != 0) { queue_close(&q); return PP_EARG; }
        while (atomic_load(&b.stage) < 1) sched_yield();
        pp_info info;
        r = query_info(a, &info);
        ri[1] = r ? -1000 - r : info.locked;
        if (r) after_refusal();
        const void *src = a;
        if (LOCK_ALIASES && !r && info.locked && info.dev_ptr) src = (const void *)info.dev_ptr;   /* B's lock's alias */
        ri[2] = 0;
        ti[2] = now_ns();
        for (int k = 0; k < copies && ri[2] == 0; ++k) ri[2] = copy_async(&q, dev_ptr, src, n, PP_H2D);
        ti[3] = now_ns();
        atomic_store(&b.stage, 2);
        if (ri[2] == 0) {
            while (!queue_done(&q)) sched_yield();
            ti[6] = now_ns();
            ri[4] = queue_wait(&q);
            ti[7] = now_ns();
        }
        pthread_join(th, NULL);
        queue_close(&q);
    }
    return 0;
}
