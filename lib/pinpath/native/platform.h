/* platform.h: pinpath's one table of runtime calls, per platform, shared by the C timing
 * library (ptime.c), notebook 14's state.c and the transfer engine (engine.c). Each build defines one of
 *   -DPINPATH_CUDA (CUDA runtime: cuda_runtime_api.h, libcudart),
 *   -DPINPATH_HSA  (ROCm HSA runtime: hsa/hsa.h, hsa/hsa_ext_amd.h, libhsa-runtime64),
 *   -DPINPATH_HOST (libc only: mlock/munlock, a worker thread for copies).
 *
 * Every call returns the runtime's own code (cudaError_t, hsa_status_t, or errno; 0 = success).
 * The table (what a backend must fill):
 *   rt_init, rt_fini, do_null                      start, stop, the cheapest call
 *   rt_prepare                                     what the calls need found once after the start
 *   do_lock, do_unlock, do_query, locked_state     page locking of user memory and the query
 *   query_info                                     the query with the device alias and the range
 *   stage_alloc, stage_grant, stage_free           runtime-pinned (staging) memory
 *   queue_open, queue_new, queue_close, copy_async, queue_wait, queue_done, kernel_replica   copy queues
 *   dev_alloc, dev_free                            a copy's destination (none where HAS_DEV_ALLOC is 0)
 *   already_registered(rc)                         "this memory is locked already" answers
 * the native names of those calls (CALL_NAMES), which the trace and the engine's call log use, and
 * what the Python loaders need to know instead of the platform's name: RC_KIND (how return
 * codes are named), INIT_CALL, INIT_PER_THREAD (see rt_start below), STAGE_NEEDS_POOL; and what
 * engine.c, ptime.c and state.c choose by instead of the platform's name: LOCKS_BY_PAGE (a page
 * is locked or not: the engine keeps its own locks as page units, and a granted re-lock changed
 * nothing), PAGEABLE_PATH_SEEN (a pageable copy's path known), LOCK_ALIASES (a copy relying on a
 * lock names the lock's device alias), HAS_QUERY, HAS_COPY, HAS_DEV_ALLOC, rt_start on each thread.
 * No .c file nor engine part (engine_*.h) tests the platform's name (tests/test_architecture.py checks it).
 */
#ifndef PINPATH_PLATFORM_H
#define PINPATH_PLATFORM_H

#define _GNU_SOURCE
#pragma GCC diagnostic ignored "-Wunused-function"   /* each user takes the part of the table it needs */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define PP_EARG (-1)      /* a NULL array or pointer, reps < 0, an unknown case */
#define PP_ENOTSUP (-2)   /* the platform has no such call */
#define PP_ERESTORE (-3)  /* host: the caller's lock could not be put back */
/* pinpath's own failures, never a runtime's code (which is 0 or positive, errno on the host):
 * -4 is state.c's PS_ESETUP; nativebuild.OWN_CODES names them all */
#define PP_ENOMEM (-5)    /* pinpath's own allocation failed */
#define PP_ETHREAD (-6)   /* pinpath could not start a thread */
#define PP_ECAP (-7)      /* a plan past one of the engine's caps (PE_MAXREFS, PE_MAXUNITS, PE_MAXUSERS) */
#define PP_NOT_RUN (-1)   /* rc of a phase that was not performed (its ns is 0) */

static inline int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* TIME(ns_out, rc_out, call): time one call, the clock read right before and right after it
 * (ptime.c and state.c time every call they are about with it). */
#define TIME(ns_out, rc_out, call)            \
    do {                                      \
        int64_t t0_ = now_ns();               \
        int rc_ = (call);                     \
        int64_t t1_ = now_ns();               \
        (ns_out) = t1_ - t0_;                 \
        (rc_out) = rc_;                       \
    } while (0)

/* What a query says of a pointer: locked (by anyone) or a runtime pinned allocation, and
 * where the device sees it and the range it belongs to where the runtime says so (0 if not). */
typedef struct {
    int locked;
    uintptr_t dev_ptr, base;
    size_t nbytes;
} pp_info;

/* The directions of a copy (the engine's plan uses the same numbers). */
enum { PP_H2D = 0, PP_D2H = 1 };

/* The table's calls as the engine's call log numbers them; each platform gives their native
 * names in CALL_NAMES ("none" where it has no such call). */
enum { C_LOCK, C_UNLOCK, C_QUERY, C_ALLOC, C_GRANT, C_FREE, C_COPY, C_WAIT, C_HOST_COPY, C_KERNEL, C_N };
#define PP_UNUSED __attribute__((unused))   /* each user takes the part of the table it needs */

/* ---------------------------------------------------------------------------------- */
#if defined(PINPATH_CUDA)
#include <cuda_runtime_api.h>
#include <dlfcn.h>
static const char PLATFORM[] = "cuda";
/* cudaHostRegister of registered memory is refused (712), not counted */
static const int LOCKS_COUNTED = 0;
static const char *const CALL_NAMES[C_N] PP_UNUSED = {
    [C_LOCK] = "cudaHostRegister", [C_UNLOCK] = "cudaHostUnregister", [C_QUERY] = "cudaPointerGetAttributes",
    [C_ALLOC] = "cudaMallocHost", [C_GRANT] = "none", [C_FREE] = "cudaFreeHost", [C_COPY] = "cudaMemcpyAsync",
    [C_WAIT] = "cudaStreamSynchronize", [C_HOST_COPY] = "memcpy", [C_KERNEL] = "cuLaunchKernel"};
#define NEEDS_GRANT 0
#define RC_KIND "cudaError"                            /* return codes are cudaError_t */
#define INIT_CALL "cudaSetDevice({device})/cudaFree(0)"  /* what rt_init calls ({device}: Python fills it) */
#define INIT_PER_THREAD 1   /* the primary context is made current on each calling thread */
#define STAGE_NEEDS_POOL 0  /* pp_stage ignores its pool */
#define LOCKS_BY_PAGE 0     /* a registration is one range: registering it again is refused */
#define PAGEABLE_PATH_SEEN 0  /* the driver's path for pageable memory is seen only by CUPTI */
#define LOCK_ALIASES 0      /* a copy names the registered host pointer itself */

/* The runtime uses the device's primary context, the one cuda.bindings uses too. */
static int rt_init(int device) {
    int rc = (int)cudaSetDevice(device);
    return rc ? rc : (int)cudaFree(0);
}
static int rt_fini(void) { return 0; }
static int rt_prepare(void) { return 0; }
static int do_null(void) { int d; return (int)cudaGetDevice(&d); }
static int do_lock(void *p, size_t n) { return (int)cudaHostRegister(p, n, cudaHostRegisterDefault); }
static int do_unlock(void *p, size_t n) { (void)n; return (int)cudaHostUnregister(p); }
static void after_refusal(void) { (void)cudaGetLastError(); }   /* clear the recorded error */
static int already_registered(int rc) { return rc == (int)cudaErrorHostMemoryAlreadyRegistered; }
static int do_query(void *p) { struct cudaPointerAttributes a; return (int)cudaPointerGetAttributes(&a, p); }
static int query_info(void *p, pp_info *out) {
    struct cudaPointerAttributes a;
    int rc = (int)cudaPointerGetAttributes(&a, p);
    memset(out, 0, sizeof *out);
    if (rc) return rc;
    out->locked = a.type == cudaMemoryTypeHost;
    out->dev_ptr = (uintptr_t)a.devicePointer;   /* the range is not reported */
    return 0;
}
static int locked_state(void *p) {
    pp_info i;
    int rc = query_info(p, &i);
    if (rc) { after_refusal(); return -rc - 1000; }
    return i.locked ? 1 : 0;
}
static int stage_alloc(uint64_t pool, size_t n, void **out) { (void)pool; return (int)cudaMallocHost(out, n); }
static int stage_grant(void *p, size_t n) { (void)p; (void)n; return 0; }
static int stage_free(void *p, size_t n) { (void)n; return (int)cudaFreeHost(p); }
static const char *error_name(int rc) { return cudaGetErrorName((cudaError_t)rc); }

/* A copy queue is a stream: the caller's (queue_open; 0 is the legacy default stream) or one
 * made here (queue_new, destroyed by queue_close). */
typedef struct { cudaStream_t s; int owned; } queue_t;
static int queue_open(void *stream, queue_t *q) { q->s = (cudaStream_t)stream; q->owned = 0; return 0; }
static int queue_new(queue_t *q) { q->owned = 1; return (int)cudaStreamCreateWithFlags(&q->s, cudaStreamNonBlocking); }
static void queue_close(queue_t *q) {
    if (q->owned) { cudaStreamSynchronize(q->s); cudaStreamDestroy(q->s); }
}
static int copy_async(queue_t *q, void *dst, const void *src, size_t n, int dir) {
    return (int)cudaMemcpyAsync(dst, src, n, dir == PP_H2D ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, q->s);
}
static int queue_wait(queue_t *q) { return (int)cudaStreamSynchronize(q->s); }
static int queue_done(queue_t *q) { return cudaStreamQuery(q->s) != cudaErrorNotReady; }
/* device memory */
static void *dev_alloc(size_t n) { void *p = NULL; return cudaMalloc(&p, n) == cudaSuccess ? p : NULL; }
static int dev_free(void *p, size_t n) { (void)n; return (int)cudaFree(p); }

/* The replica's kernel: a CUfunction the caller loaded (NVRTC), launched through the driver's
 * cuLaunchKernel, looked up once in libcuda (no driver header needed). */
typedef int (*launch_fn)(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                         unsigned shmem, void *stream, void **params, void **extra);
static launch_fn cu_launch;
static int kernel_replica(queue_t *q, uint64_t fn, void *pos, void *out, int nw, int nsplines) {
    if (!cu_launch) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
        if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
        if (h) cu_launch = (launch_fn)dlsym(h, "cuLaunchKernel");
        if (!cu_launch) return PP_ENOTSUP;
    }
    void *params[] = {&pos, &out, &nw, &nsplines};
    return cu_launch((void *)(uintptr_t)fn, (unsigned)nw, 1, 1, (unsigned)nsplines, 1, 1, 0, q->s, params, NULL);
}
#define HAS_QUERY 1
#define HAS_COPY 1
#define HAS_DEV_ALLOC 1

/* ---------------------------------------------------------------------------------- */
#elif defined(PINPATH_HSA)
#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>
static const char PLATFORM[] = "hsa";
/* ROCr counts locks: a re-lock is granted and needs its own unlock */
static const int LOCKS_COUNTED = 1;
static const char *const CALL_NAMES[C_N] PP_UNUSED = {
    [C_LOCK] = "hsa_amd_memory_lock", [C_UNLOCK] = "hsa_amd_memory_unlock", [C_QUERY] = "hsa_amd_pointer_info",
    [C_ALLOC] = "hsa_amd_memory_pool_allocate", [C_GRANT] = "hsa_amd_agents_allow_access",
    [C_FREE] = "hsa_amd_memory_pool_free", [C_COPY] = "hsa_amd_memory_async_copy",
    [C_WAIT] = "hsa_signal_wait_scacquire", [C_HOST_COPY] = "memcpy", [C_KERNEL] = "none"};
#define NEEDS_GRANT 1
#define RC_KIND "hsa_status"
#define INIT_CALL "hsa_init"
#define INIT_PER_THREAD 0   /* hsa_init is counted: one start per process, paired by rt_stop */
#define STAGE_NEEDS_POOL 1  /* pp_stage allocates on the caller's pool (no agents are found there) */
#define LOCKS_BY_PAGE 0     /* locks are counted per range */
#define PAGEABLE_PATH_SEEN 0  /* ROCr's path for pageable memory is not reported */
#define LOCK_ALIASES 1      /* a copy from locked memory names its agent alias (lock_alias, query_info) */

/* The agents and the pool the engine's copies and staging use: the first CPU and GPU agents
 * and the CPU's fine-grained global pool, found once after hsa_init (as LLVM's plugin does). */
static hsa_agent_t cpu_agent, gpu_agent;
static hsa_amd_memory_pool_t fine_pool;
static int have_agents;

static hsa_status_t pick_agent(hsa_agent_t a, void *data) {
    (void)data;
    hsa_device_type_t t;
    if (hsa_agent_get_info(a, HSA_AGENT_INFO_DEVICE, &t) != HSA_STATUS_SUCCESS) return HSA_STATUS_SUCCESS;
    if (t == HSA_DEVICE_TYPE_CPU && !cpu_agent.handle) cpu_agent = a;
    if (t == HSA_DEVICE_TYPE_GPU && !gpu_agent.handle) gpu_agent = a;
    return HSA_STATUS_SUCCESS;
}
static hsa_status_t pick_pool(hsa_amd_memory_pool_t p, void *data) {
    (void)data;
    hsa_amd_segment_t seg;
    uint32_t flags = 0;
    bool alloc = false;
    if (hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_SEGMENT, &seg) != HSA_STATUS_SUCCESS ||
        seg != HSA_AMD_SEGMENT_GLOBAL)
        return HSA_STATUS_SUCCESS;
    hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS, &flags);
    hsa_amd_memory_pool_get_info(p, HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED, &alloc);
    if (alloc && (flags & HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED) && !fine_pool.handle) fine_pool = p;
    return HSA_STATUS_SUCCESS;
}
static int find_agents(void) {
    if (have_agents) return 0;
    int rc = (int)hsa_iterate_agents(pick_agent, NULL);
    if (rc) return rc;
    if (!cpu_agent.handle || !gpu_agent.handle) return (int)HSA_STATUS_ERROR_INVALID_AGENT;
    rc = (int)hsa_amd_agent_iterate_memory_pools(cpu_agent, pick_pool, NULL);
    if (rc) return rc;
    if (!fine_pool.handle) return (int)HSA_STATUS_ERROR_INVALID_MEMORY_POOL;
    have_agents = 1;
    return 0;
}

static int rt_init(int device) { (void)device; return (int)hsa_init(); }   /* reference counted */
static int rt_fini(void) { return (int)hsa_shut_down(); }
static int rt_prepare(void) { return find_agents(); }   /* the agents and the pool, found once */
static int do_null(void) { uint64_t t; return (int)hsa_system_get_info(HSA_SYSTEM_INFO_TIMESTAMP, &t); }
/* all agents (NULL, 0), as LLVM's AMDGPU plugin calls it */
static int do_lock(void *p, size_t n) { void *agent_ptr; return (int)hsa_amd_memory_lock(p, n, NULL, 0, &agent_ptr); }
static int lock_alias(void *p, size_t n, void **alias) { return (int)hsa_amd_memory_lock(p, n, NULL, 0, alias); }
static int do_unlock(void *p, size_t n) { (void)n; return (int)hsa_amd_memory_unlock(p); }
static void after_refusal(void) {}
static int already_registered(int rc) { (void)rc; return 0; }   /* ROCr counts: a re-lock is granted */
static int do_query(void *p) {
    hsa_amd_pointer_info_t info;
    info.size = sizeof info;
    return (int)hsa_amd_pointer_info(p, &info, NULL, NULL, NULL);
}
static int query_info(void *p, pp_info *out) {
    hsa_amd_pointer_info_t info;
    info.size = sizeof info;
    memset(out, 0, sizeof *out);
    int rc = (int)hsa_amd_pointer_info(p, &info, NULL, NULL, NULL);
    if (rc) return rc;
    /* locked user memory, or a pool allocation of the CPU agent (pinned) */
    out->locked = info.type == HSA_EXT_POINTER_TYPE_LOCKED ||
                  (info.type == HSA_EXT_POINTER_TYPE_HSA && info.agentOwner.handle == cpu_agent.handle);
    if (out->locked) {
        out->base = (uintptr_t)info.hostBaseAddress;
        out->nbytes = info.sizeInBytes;
        out->dev_ptr = (uintptr_t)info.agentBaseAddress + ((uintptr_t)p - out->base);
    }
    return 0;
}
static int locked_state(void *p) {
    hsa_amd_pointer_info_t info;
    info.size = sizeof info;
    int rc = (int)hsa_amd_pointer_info(p, &info, NULL, NULL, NULL);
    if (rc) return -rc - 1000;
    return info.type == HSA_EXT_POINTER_TYPE_LOCKED ? 1 : info.type == HSA_EXT_POINTER_TYPE_HSA ? 2 : 0;
}
/* `pool` 0: the fine-grained CPU pool found by find_agents */
static int stage_alloc(uint64_t pool, size_t n, void **out) {
    hsa_amd_memory_pool_t mp = {pool ? pool : fine_pool.handle};
    return (int)hsa_amd_memory_pool_allocate(mp, n, 0, out);
}
static int stage_grant(void *p, size_t n) { (void)n; return (int)hsa_amd_agents_allow_access(1, &gpu_agent, NULL, p); }
static int stage_free(void *p, size_t n) { (void)n; return (int)hsa_amd_memory_pool_free(p); }
static const char *error_name(int rc) { (void)rc; return NULL; }   /* Python names HSA statuses */

/* A copy queue is a completion signal counting the copies in flight on it. */
typedef struct { hsa_signal_t sig; } queue_t;
static int queue_open(void *stream, queue_t *q) {
    (void)stream;
    int rc = find_agents();
    return rc ? rc : (int)hsa_signal_create(0, 0, NULL, &q->sig);
}
static int queue_new(queue_t *q) { return queue_open(NULL, q); }
static void queue_close(queue_t *q) { hsa_signal_destroy(q->sig); }
static int copy_async(queue_t *q, void *dst, const void *src, size_t n, int dir) {
    hsa_signal_add_relaxed(q->sig, 1);   /* the copy's completion takes 1 off */
    hsa_agent_t dst_agent = dir == PP_H2D ? gpu_agent : cpu_agent, src_agent = dir == PP_H2D ? cpu_agent : gpu_agent;
    int rc = (int)hsa_amd_memory_async_copy(dst, dst_agent, src, src_agent, n, 0, NULL, q->sig);
    if (rc) hsa_signal_subtract_relaxed(q->sig, 1);
    return rc;
}
static int queue_wait(queue_t *q) {
    hsa_signal_value_t v = hsa_signal_wait_scacquire(q->sig, HSA_SIGNAL_CONDITION_EQ, 0, UINT64_MAX,
                                                     HSA_WAIT_STATE_BLOCKED);
    return v == 0 ? 0 : (int)HSA_STATUS_ERROR;
}
static int queue_done(queue_t *q) { return hsa_signal_load_scacquire(q->sig) == 0; }
/* the table has no device allocation on HSA */
static void *dev_alloc(size_t n) { (void)n; return NULL; }
static int dev_free(void *p, size_t n) { (void)p; (void)n; return 0; }
/* no code object: on HSA the replica runs its transfers only */
static int kernel_replica(queue_t *q, uint64_t fn, void *pos, void *out, int nw, int nsplines) {
    (void)q; (void)fn; (void)pos; (void)out; (void)nw; (void)nsplines;
    return PP_ENOTSUP;
}
#define HAS_QUERY 1
#define HAS_COPY 0   /* ptime's pp_c12 takes a caller's CUDA stream; the engine copies on HSA too */
#define HAS_DEV_ALLOC 0

/* ---------------------------------------------------------------------------------- */
#elif defined(PINPATH_HOST)
static const char PLATFORM[] = "host";
/* mlock does not stack: a re-lock is granted, and one munlock undoes every lock */
static const int LOCKS_COUNTED = 0;
static const char *const CALL_NAMES[C_N] PP_UNUSED = {
    [C_LOCK] = "mlock", [C_UNLOCK] = "munlock", [C_QUERY] = "smaps_lookup", [C_ALLOC] = "mmap", [C_GRANT] = "none",
    [C_FREE] = "munmap", [C_COPY] = "memmove@worker", [C_WAIT] = "worker_wait", [C_HOST_COPY] = "memcpy",
    [C_KERNEL] = "kernel@worker"};
#define NEEDS_GRANT 0
#define RC_KIND "errno"
#define INIT_CALL "nothing"
#define INIT_PER_THREAD 0   /* nothing to start */
#define STAGE_NEEDS_POOL 0
#define LOCKS_BY_PAGE 1     /* mlock locks pages and one munlock undoes them all: the engine keeps page
                             * units, and a granted re-lock changed nothing (ptime.c) */
#define PAGEABLE_PATH_SEEN 1  /* a pageable copy is the worker's own memmove: its path is known */
#define LOCK_ALIASES 0      /* one address space */

static int rt_init(int device) { (void)device; return 0; }
static int rt_fini(void) { return 0; }
static int rt_prepare(void) { return 0; }
static int do_null(void) { return getppid() > 0 ? 0 : errno; }
static int do_lock(void *p, size_t n) { return mlock(p, n) == 0 ? 0 : errno; }
static int do_unlock(void *p, size_t n) { return munlock(p, n) == 0 ? 0 : errno; }
static void after_refusal(void) {}
static int already_registered(int rc) { (void)rc; return 0; }   /* mlock grants a re-lock */
static int do_query(void *p) { (void)p; return PP_ENOTSUP; }     /* ptime: no cheap lock query */
/* Linux's only answer: the VmFlags of the mapping holding p in /proc/self/smaps ("lo" = locked) */
static int query_info(void *p, pp_info *out) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return errno;
    char line[512];
    int inside = 0;
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            inside = lo <= a && a < hi;
            if (inside) { out->base = lo; out->nbytes = hi - lo; }
        } else if (inside && strncmp(line, "VmFlags:", 8) == 0) {
            out->locked = strstr(line, " lo") != NULL;
            out->dev_ptr = out->locked ? a : 0;
            break;
        }
    }
    fclose(f);
    if (!out->locked) out->base = out->nbytes = 0;
    return 0;
}
static int locked_state(void *p) { (void)p; return PP_ENOTSUP; }
/* staging: a fresh anonymous mapping, locked (mlock faults every page in) */
static int stage_alloc(uint64_t pool, size_t n, void **out) {
    (void)pool;
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return errno;
    if (mlock(p, n) != 0) { int e = errno; munmap(p, n); return e; }
    *out = p;
    return 0;
}
static int stage_grant(void *p, size_t n) { (void)p; (void)n; return 0; }
static int stage_free(void *p, size_t n) {
    int rc = munlock(p, n) == 0 ? 0 : errno;
    if (munmap(p, n) != 0 && rc == 0) rc = errno;
    return rc;
}
static const char *error_name(int rc) { (void)rc; return NULL; }   /* Python names errno values */

/* The copy queue: one worker thread doing the queue's one task at a time (a copy, or the
 * replica's kernel), as the host runtime's queue does; enqueueing waits for the task before. */
typedef struct {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    void *dst;
    const void *src;
    size_t n;
    int nw, nsplines;   /* nw > 0: the task is the replica's kernel (src: positions, dst: output) */
    int pending, quit;
} queue_t;

static void replica_on_host(const double *pos, double *out, int nw, int nsplines) {
    for (int w = 0; w < nw; ++w)
        for (int c = 0; c < 10; ++c)
            for (int s = 0; s < nsplines; ++s)
                out[((long)w * 10 + c) * nsplines + s] = pos[3 * w + c % 3] * (double)(s + 1) + (double)c;
}
static void *worker(void *arg) {
    queue_t *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->pending && !q->quit) pthread_cond_wait(&q->cv, &q->mu);
        if (q->pending) {
            void *d = q->dst; const void *s = q->src; size_t n = q->n;
            int nw = q->nw, ns = q->nsplines;
            pthread_mutex_unlock(&q->mu);
            if (nw > 0) replica_on_host(s, d, nw, ns); else memcpy(d, s, n);
            pthread_mutex_lock(&q->mu);
            q->pending = 0;
            pthread_cond_broadcast(&q->cv);
        } else if (q->quit) {
            break;
        }
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}
static int queue_open(void *stream, queue_t *q) {
    (void)stream;
    memset(q, 0, sizeof *q);
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->cv, NULL);
    return pthread_create(&q->thread, NULL, worker, q);
}
static int queue_new(queue_t *q) { return queue_open(NULL, q); }
static void queue_close(queue_t *q) {
    pthread_mutex_lock(&q->mu);
    q->quit = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    pthread_join(q->thread, NULL);
    pthread_cond_destroy(&q->cv);
    pthread_mutex_destroy(&q->mu);
}
static int enqueue(queue_t *q, void *dst, const void *src, size_t n, int nw, int nsplines) {
    pthread_mutex_lock(&q->mu);
    while (q->pending) pthread_cond_wait(&q->cv, &q->mu);
    q->dst = dst; q->src = src; q->n = n; q->nw = nw; q->nsplines = nsplines; q->pending = 1;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
    return 0;
}
static int copy_async(queue_t *q, void *dst, const void *src, size_t n, int dir) {
    (void)dir;
    return enqueue(q, dst, src, n, 0, 0);
}
static int queue_wait(queue_t *q) {
    pthread_mutex_lock(&q->mu);
    while (q->pending) pthread_cond_wait(&q->cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
    return 0;
}
static int queue_done(queue_t *q) {
    pthread_mutex_lock(&q->mu);
    int done = !q->pending;
    pthread_mutex_unlock(&q->mu);
    return done;
}
/* "device" memory: a host mapping */
static void *dev_alloc(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}
static int dev_free(void *p, size_t n) { return munmap(p, n) == 0 ? 0 : errno; }
static int kernel_replica(queue_t *q, uint64_t fn, void *pos, void *out, int nw, int nsplines) {
    (void)fn;
    return enqueue(q, out, pos, 0, nw, nsplines);
}
#define HAS_QUERY 0   /* ptime's pp_query: smaps is no call to time against a runtime's */
#define HAS_COPY 1
#define HAS_DEV_ALLOC 1

#else
#error "build with -DPINPATH_CUDA, -DPINPATH_HSA or -DPINPATH_HOST"
#endif

#if !LOCK_ALIASES
/* the device-visible alias of a lock: the pointer itself (CUDA's registration maps it as is;
 * the host has one address space) */
static int lock_alias(void *p, size_t n, void **alias) {
    int rc = do_lock(p, n);
    *alias = rc ? NULL : p;
    return rc;
}
#endif

/* rt_start/rt_stop: rt_init once per calling thread where INIT_PER_THREAD (CUDA), else once per
 * process (HSA: hsa_init is counted, and rt_stop pairs that one start; the host starts nothing).
 * Safe to call before every use; a failed start is tried again on the next call. */
static pthread_mutex_t rt_start_mu = PTHREAD_MUTEX_INITIALIZER;
static int rt_started;                 /* per process */
static _Thread_local int rt_started_here;   /* per thread */
static int rt_start(int device) {
    if (INIT_PER_THREAD) {
        if (rt_started_here) return 0;
        int rc = rt_init(device);
        if (rc == 0) rt_started_here = 1;
        return rc;
    }
    pthread_mutex_lock(&rt_start_mu);
    int rc = rt_started ? 0 : rt_init(device);
    if (rc == 0) rt_started = 1;
    pthread_mutex_unlock(&rt_start_mu);
    return rc;
}
static int rt_stop(void) {
    pthread_mutex_lock(&rt_start_mu);
    int rc = rt_started ? rt_fini() : 0;
    rt_started = 0;
    pthread_mutex_unlock(&rt_start_mu);
    return rc;
}

/* NATIVE_COMMON_API(P, API, ABI_): what each of the three libraries exports for its one loader
 * (lib/pinpath/nativebuild.py): its ABI, its platform, the runtime's name for a code (NULL where
 * Python names it), the kind of its codes, and what its start calls. Each library writes P##init
 * (rt_start) and P##fini (rt_stop) itself: the engine closes its queues first, state.c finds HSA's
 * agents after the start. */
#define NATIVE_COMMON_API(P, API, ABI_)                                  \
    API int P##abi(void) { return ABI_; }                                 \
    API const char *P##platform(void) { return PLATFORM; }                \
    API const char *P##error_name(int rc) { return error_name(rc); }      \
    API const char *P##rc_kind(void) { return RC_KIND; }                  \
    API const char *P##init_call(void) { return INIT_CALL; }

#endif /* PINPATH_PLATFORM_H */
