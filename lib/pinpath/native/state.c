/* state: what changes a transfer's cost (notebook 14_state_effects), timed in C.
 * Built and loaded like ptime.c (lib/pinpath/nativelib.py, load_source("state", platform)),
 * wrapped by lib/pinpath/statelib.py.
 *
 * Builds: -DPINPATH_CUDA (cudaHostRegister, cudaPointerGetAttributes, cudaMallocHost, cudaMemcpy),
 *         -DPINPATH_HSA  (hsa_amd_memory_lock, hsa_amd_pointer_info; no copies, no pinned pool here),
 *         -DPINPATH_HOST (mlock/munlock, mmap+mlock as the pinned allocator, memcpy as the copy).
 *
 * Each function is one round of one state: the caller passes fresh buffers (ps_buffer), the
 * function sets the state up untimed, times the calls it is about with CLOCK_MONOTONIC right
 * around each one, and undoes every registration and allocation it made before it returns.
 * Return codes of the timed calls go to rc arrays (0 = success; the runtime's code, errno on
 * the host); the functions return 0, PS_EARG, PS_ENOTSUP, or PS_ESETUP (an untimed setup call
 * failed: its code is in rc[0], nothing was timed).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PS_API __attribute__((visibility("default")))
#define PS_ABI 1
#define PS_EARG (-1)
#define PS_ENOTSUP (-2)
#define PS_ESETUP (-4)
#define PS_NOT_RUN (-1)   /* rc of a call that was not made (its ns is 0) */
#define HUGE_NBYTES ((size_t)2 << 20)

static inline int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

#define TIME(ns_out, rc_out, call)  \
    do {                            \
        int64_t t0_ = now_ns();     \
        int rc_ = (call);           \
        (ns_out) = now_ns() - t0_;  \
        (rc_out) = rc_;             \
    } while (0)

/* ---------------------------------------------------------------------------------- */
#if defined(PINPATH_CUDA)
#include <cuda_runtime_api.h>
static const char PLATFORM[] = "cuda";
static int rt_init(int device) { int rc = (int)cudaSetDevice(device); return rc ? rc : (int)cudaFree(0); }
static int rt_fini(void) { return 0; }
static int do_null(void) { int d; return (int)cudaGetDevice(&d); }
static int do_register(void *p, size_t n) { return (int)cudaHostRegister(p, n, cudaHostRegisterDefault); }
static void after_refusal(void) { (void)cudaGetLastError(); }
static int do_unregister(void *p) { int rc = (int)cudaHostUnregister(p); if (rc) after_refusal(); return rc; }
static int do_query(void *p) { struct cudaPointerAttributes a; return (int)cudaPointerGetAttributes(&a, p); }
static int pinned_alloc(size_t n, void **out) { return (int)cudaMallocHost(out, n); }
static int pinned_free(void *p, size_t n) { (void)n; return (int)cudaFreeHost(p); }
static void *dev_alloc(size_t n) { void *p = NULL; return cudaMalloc(&p, n) == cudaSuccess ? p : NULL; }
static int dev_free(void *p, size_t n) { (void)n; return (int)cudaFree(p); }
static int copy_h2d(void *dst, const void *src, size_t n) { return (int)cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice); }
static const int REGISTER_COUNTED = 0;   /* a re-register is refused (712) */
#define HAS_QUERY 1
#define HAS_PINNED 1
#define HAS_COPY 1

/* ---------------------------------------------------------------------------------- */
#elif defined(PINPATH_HSA)
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
static const char PLATFORM[] = "hsa";
static int rt_init(int device) { (void)device; return (int)hsa_init(); }
static int rt_fini(void) { return (int)hsa_shut_down(); }
static int do_null(void) { uint64_t t; return (int)hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, &t); }
static int do_register(void *p, size_t n) { void *a; return (int)hsa_amd_memory_lock(p, n, NULL, 0, &a); }
static int do_unregister(void *p) { return (int)hsa_amd_memory_unlock(p); }
static void after_refusal(void) {}
static int do_query(void *p) {
    hsa_amd_pointer_info_t info;
    info.size = sizeof info;
    return (int)hsa_amd_pointer_info(p, &info, NULL, NULL, NULL);
}
static int pinned_alloc(size_t n, void **out) { (void)n; (void)out; return PS_ENOTSUP; }
static int pinned_free(void *p, size_t n) { (void)p; (void)n; return PS_ENOTSUP; }
static void *dev_alloc(size_t n) { (void)n; return NULL; }
static int dev_free(void *p, size_t n) { (void)p; (void)n; return 0; }
static int copy_h2d(void *dst, const void *src, size_t n) { (void)dst; (void)src; (void)n; return PS_ENOTSUP; }
static const int REGISTER_COUNTED = 1;   /* ROCr counts locks: a granted re-lock is undone */
#define HAS_QUERY 1
#define HAS_PINNED 0   /* the pool handle lives in Python's runtime; ptime.c's pp_stage times it */
#define HAS_COPY 0

/* ---------------------------------------------------------------------------------- */
#elif defined(PINPATH_HOST)
static const char PLATFORM[] = "host";
static int rt_init(int device) { (void)device; return 0; }
static int rt_fini(void) { return 0; }
static int do_null(void) { return getppid() > 0 ? 0 : errno; }
static int do_register(void *p, size_t n) { return mlock(p, n) == 0 ? 0 : errno; }
/* munlock needs the length: the length of the last register (the host build is single-threaded) */
static size_t host_len;
static int do_unregister(void *p) { return munlock(p, host_len) == 0 ? 0 : errno; }
static void after_refusal(void) {}
static int do_query(void *p) { (void)p; return PS_ENOTSUP; }
static int pinned_alloc(size_t n, void **out) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return errno;
    if (mlock(p, n) != 0) { int e = errno; munmap(p, n); return e; }
    *out = p;
    return 0;
}
static int pinned_free(void *p, size_t n) {
    int rc = munlock(p, n) == 0 ? 0 : errno;
    if (munmap(p, n) != 0 && rc == 0) rc = errno;
    return rc;
}
static void *dev_alloc(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}
static int dev_free(void *p, size_t n) { return munmap(p, n) == 0 ? 0 : errno; }
static int copy_h2d(void *dst, const void *src, size_t n) { memcpy(dst, src, n); return 0; }
static const int REGISTER_COUNTED = 0;   /* mlock does not stack: a re-lock changes nothing */
#define HAS_QUERY 0
#define HAS_PINNED 1
#define HAS_COPY 1

#else
#error "build with -DPINPATH_CUDA, -DPINPATH_HSA or -DPINPATH_HOST"
#endif

#if defined(PINPATH_HOST)
#define REGISTER(p, n) (host_len = (n), do_register((p), (n)))
#else
#define REGISTER(p, n) do_register((p), (n))
#endif

/* the call whose age is measured: 0 = pointer query, 1 = re-register of registered memory */
static int aged_call(int op, void *p, size_t n) {
    if (op == 0) return do_query(p);
    int rc = REGISTER(p, n);
    if (rc == 0 && REGISTER_COUNTED) do_unregister(p);   /* untimed: the caller's count stays one */
    if (rc != 0) after_refusal();
    return rc;
}

PS_API int ps_abi(void) { return PS_ABI; }
PS_API const char *ps_platform(void) { return PLATFORM; }
PS_API int ps_has_query(void) { return HAS_QUERY; }
PS_API int ps_has_pinned(void) { return HAS_PINNED; }
PS_API int ps_has_copy(void) { return HAS_COPY; }
PS_API int ps_init(int device) { return rt_init(device); }
PS_API int ps_fini(void) { return rt_fini(); }

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
PS_API int ps_buffer_free(void *p, size_t n) { return p && munmap(p, n) == 0 ? 0 : PS_EARG; }

/* A destination for copies: device memory (CUDA), a host mapping (host), NULL where the
 * platform has no copy here (HSA). */
PS_API void *ps_dev_alloc(size_t n) { return HAS_COPY ? dev_alloc(n) : NULL; }
PS_API int ps_dev_free(void *p, size_t n) { return p ? dev_free(p, n) : 0; }

/* The runtime's cheapest call, `reps` times. */
PS_API int ps_null(int reps, int64_t *ns, int32_t *rc) {
    if (reps < 0 || (reps && (!ns || !rc))) return PS_EARG;
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
    if (!p || calls < 0 || op < 0 || op > 1 || !reg_ns || !reg_rc || !first_ns || !first_rc) return PS_EARG;
    if (calls && (!held_ns || !held_rc || !fresh_ns || !fresh_rc)) return PS_EARG;
    if (op == 0 && !HAS_QUERY) return PS_ENOTSUP;
    int r;
    TIME(reg_ns[0], r, REGISTER(p, n));
    reg_rc[0] = r;
    if (r) { after_refusal(); return PS_ESETUP; }
    TIME(first_ns[0], r, aged_call(op, p, n));
    first_rc[0] = r;
    for (int i = 0; i < calls; ++i) { TIME(held_ns[i], r, aged_call(op, p, n)); held_rc[i] = r; }
    do_unregister(p);
    for (int i = 0; i < calls; ++i) {
        fresh_ns[i] = 0;
        fresh_rc[i] = PS_NOT_RUN;
        if (REGISTER(p, n) != 0) { after_refusal(); continue; }
        TIME(fresh_ns[i], r, aged_call(op, p, n));
        fresh_rc[i] = r;
        do_unregister(p);
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
    if (!HAS_PINNED) return PS_ENOTSUP;
    if (!n || live_pinned < 0 || live_registered < 0 || prior_frees < 0 || reps < 1 || !alloc_ns || !free_ns || !rc)
        return PS_EARG;
    int status = 0, held = 0, regd = 0, made = 0;
    void **live = calloc((size_t)live_pinned + 1, sizeof *live);
    void **regs = calloc((size_t)live_registered + 1, sizeof *regs);
    void **prior = calloc((size_t)prior_frees + 1, sizeof *prior);
    if (!live || !regs || !prior) { status = PS_EARG; goto out; }
    for (; held < live_pinned; ++held) {
        int r = pinned_alloc(n, &live[held]);
        if (r) { after_refusal(); rc[0] = r; status = PS_ESETUP; goto out; }
    }
    for (; regd < live_registered; ++regd) {
        regs[regd] = ps_buffer(reg_nbytes, 0);
        int r = regs[regd] ? REGISTER(regs[regd], reg_nbytes) : ENOMEM;
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
    for (; made > 0; --made) pinned_free(prior[made - 1], n);
    for (int i = 0; i < reps; ++i) {
        void *q = NULL;
        int r;
        TIME(alloc_ns[i], r, pinned_alloc(n, &q));
        rc[i] = r;
        free_ns[i] = 0;
        if (r) { after_refusal(); continue; }
        TIME(free_ns[i], r, pinned_free(q, n));
        if (r) rc[i] = r;
    }
out:
    for (; made > 0; --made) pinned_free(prior[made - 1], n);
    for (; regd > 0; --regd) {
#if defined(PINPATH_HOST)
        host_len = reg_nbytes;
#endif
        do_unregister(regs[regd - 1]);
        ps_buffer_free(regs[regd - 1], reg_nbytes);
    }
    for (; held > 0; --held) pinned_free(live[held - 1], n);
    free(live); free(regs); free(prior);
    return status;
}

/* Lock and copy on one buffer, `reps` times: copy of the pageable buffer to dst, register,
 * copy of the registered buffer, unregister; each timed. rc is reps x 4 in that order; where
 * the platform has no copy (dst NULL) the copies are not run (ns 0, rc PS_NOT_RUN). */
PS_API int ps_lock_copy(void *p, size_t n, void *dst, int reps, int64_t *copy_pageable_ns, int64_t *lock_ns,
                        int64_t *copy_locked_ns, int64_t *unlock_ns, int32_t *rc) {
    if (!p || reps < 1 || !copy_pageable_ns || !lock_ns || !copy_locked_ns || !unlock_ns || !rc) return PS_EARG;
    for (int i = 0; i < reps; ++i) {
        int32_t *r4 = rc + 4 * (size_t)i;
        int r;
        copy_pageable_ns[i] = lock_ns[i] = copy_locked_ns[i] = unlock_ns[i] = 0;
        r4[0] = r4[1] = r4[2] = r4[3] = PS_NOT_RUN;
        if (dst) { TIME(copy_pageable_ns[i], r, copy_h2d(dst, p, n)); r4[0] = r; }
        TIME(lock_ns[i], r, REGISTER(p, n));
        r4[1] = r;
        if (r) { after_refusal(); continue; }
        if (dst) { TIME(copy_locked_ns[i], r, copy_h2d(dst, p, n)); r4[2] = r; }
        TIME(unlock_ns[i], r, do_unregister(p));
        r4[3] = r;
    }
    return 0;
}
