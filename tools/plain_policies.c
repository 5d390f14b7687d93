/* plain_policies: the yardstick for pinpath's native engine. The same transfer policies, written
 * by hand as an application or runtime developer would write them in plain C, with no plan, no
 * call log and no phase timing: clock, the policy's calls, clock.
 *
 * Build: as nativelib builds tools (-DPINPATH_CUDA with cuda_runtime_api.h and libcudart, or
 * -DPINPATH_HOST with libc only: mlock/munlock and a worker thread that does the "device" copy).
 * Usage: plain_policies REPEATS ROUNDS SPEC...    SPEC = policy:direction:nbytes
 * Output (stdout), one line per timed transfer: policy,direction,nbytes,repeat,round,ns
 * Each repeat allocates every buffer anew (malloc'd, touched with a non-zero pattern), warms
 * each spec up once, then times ROUNDS transfers of each spec, the specs interleaved.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static int64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

#if defined(PINPATH_CUDA)
#include <cuda_runtime_api.h>
static cudaStream_t stream;
static void setup(void) { cudaSetDevice(0); cudaFree(0); cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking); }
static void *dev_alloc(size_t n) { void *p = NULL; cudaMalloc(&p, n); cudaMemset(p, 0x5a, n); return p; }
static void dev_free(void *p) { cudaFree(p); }
static void pin(void *p, size_t n) { cudaHostRegister(p, n, cudaHostRegisterDefault); }
static void unpin(void *p) { cudaHostUnregister(p); }
static int pinned(void *p) {
    struct cudaPointerAttributes a;
    return cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeHost;
}
static void *pinned_alloc(size_t n) { void *p = NULL; cudaMallocHost(&p, n); return p; }
static void pinned_free(void *p) { cudaFreeHost(p); }
static void copy(void *dst, const void *src, size_t n, int h2d) {
    cudaMemcpyAsync(dst, src, n, h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, stream);
}
static void sync_all(void) { cudaStreamSynchronize(stream); }
#elif defined(PINPATH_HOST)
/* the host platform: "device" memory is a second mapping, copied by one worker thread */
static pthread_t worker;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static void *w_dst; static const void *w_src; static size_t w_n; static int w_busy;
static void *work(void *arg) {
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!w_busy) pthread_cond_wait(&cv, &mu);
        pthread_mutex_unlock(&mu);
        memcpy(w_dst, w_src, w_n);
        pthread_mutex_lock(&mu);
        w_busy = 0;
        pthread_cond_broadcast(&cv);
    }
    return NULL;
}
static void setup(void) { pthread_create(&worker, NULL, work, NULL); }
static void *dev_alloc(size_t n) { void *p = malloc(n); memset(p, 0x5a, n); return p; }
static void dev_free(void *p) { free(p); }
static void pin(void *p, size_t n) { mlock(p, n); }
static void unpin(void *p) { (void)p; }   /* the caller munlocks with the size: see unpin_n */
static int pinned(void *p) { (void)p; return 0; }   /* no cheap query; the runtime would read smaps */
static void *pinned_alloc(size_t n) {
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    mlock(p, n);
    return p;
}
static size_t pinned_n;   /* host munmap needs the size: the last allocation's */
static void pinned_free(void *p) { munlock(p, pinned_n); munmap(p, pinned_n); }
static void copy(void *dst, const void *src, size_t n, int h2d) {
    (void)h2d;
    pthread_mutex_lock(&mu);
    while (w_busy) pthread_cond_wait(&cv, &mu);
    w_dst = dst; w_src = src; w_n = n; w_busy = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
}
static void sync_all(void) {
    pthread_mutex_lock(&mu);
    while (w_busy) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
}
#else
#error "build with -DPINPATH_CUDA or -DPINPATH_HOST"
#endif

#if defined(PINPATH_HOST)
static void unpin_n(void *p, size_t n) { munlock(p, n); }
#else
static void unpin_n(void *p, size_t n) { (void)n; unpin(p); }
#endif

typedef struct { char policy[32]; int h2d; size_t n; char *host; void *dev; void *pool; int registered; } spec_t;

/* one transfer of spec s under its policy, waited for; returns its time */
static int64_t one(spec_t *s) {
    char *h = s->host;
    size_t n = s->n;
    const char *p = s->policy;
    int64_t t0 = now();
    if (!strcmp(p, "driver_pageable") || !strcmp(p, "prepinned") || !strcmp(p, "nextgen_lock_mapped")) {
        copy(s->h2d ? s->dev : h, s->h2d ? (void *)h : s->dev, n, s->h2d);
        sync_all();
    } else if (!strcmp(p, "lock_always") || !strcmp(p, "query_then_lock") ||
               (!strcmp(p, "nextgen") && n >= (1u << 20))) {
        if (!strcmp(p, "query_then_lock") && pinned(h)) {   /* never here: the buffer is not pinned */
            copy(s->h2d ? s->dev : h, s->h2d ? (void *)h : s->dev, n, s->h2d);
            sync_all();
        } else {
            pin(h, n);
            copy(s->h2d ? s->dev : h, s->h2d ? (void *)h : s->dev, n, s->h2d);
            sync_all();
            unpin_n(h, n);
        }
    } else if (!strcmp(p, "stage_per_copy")) {
#if defined(PINPATH_HOST)
        pinned_n = n;
#endif
        char *b = pinned_alloc(n);
        if (s->h2d) { memcpy(b, h, n); copy(s->dev, b, n, 1); sync_all(); }
        else { copy(b, s->dev, n, 0); sync_all(); memcpy(h, b, n); }
        pinned_free(b);
    } else {   /* stage_pooled, nextgen below the threshold: a pooled buffer, kept */
        char *b = s->pool;
        if (s->h2d) { memcpy(b, h, n); copy(s->dev, b, n, 1); sync_all(); }
        else { copy(b, s->dev, n, 0); sync_all(); memcpy(h, b, n); }
    }
    return now() - t0;
}

static size_t pool_class(const char *policy, size_t n) {
    if (strcmp(policy, "stage_pooled")) return n;   /* nextgen's pool: exact sizes */
    size_t c = 4096;
    while (c < n) c <<= 1;
    return c;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: plain_policies REPEATS ROUNDS policy:direction:nbytes ...\n");
        return 2;
    }
    int repeats = atoi(argv[1]), rounds = atoi(argv[2]), ns = argc - 3;
    spec_t *specs = calloc((size_t)ns, sizeof *specs);
    for (int i = 0; i < ns; ++i) {
        char dir[8];
        unsigned long long n;
        if (sscanf(argv[3 + i], "%31[a-z_]:%7[a-z2]:%llu", specs[i].policy, dir, &n) != 3 || n == 0) {
            fprintf(stderr, "plain_policies: bad spec %s\n", argv[3 + i]);
            return 2;
        }
        specs[i].h2d = !strcmp(dir, "h2d");
        specs[i].n = (size_t)n;
    }
    setup();
    srand(20201019);
    int *order = malloc(sizeof(int) * (size_t)ns);
    for (int r = 0; r < repeats; ++r) {
        for (int i = 0; i < ns; ++i) {
            spec_t *s = &specs[i];
            s->host = malloc(s->n);
            for (size_t k = 0; k < s->n; ++k) s->host[k] = (char)(1 + (k * 131 + (size_t)r) % 251);
            s->dev = dev_alloc(s->n);
            s->pool = NULL;
            if (!strcmp(s->policy, "stage_pooled") || !strcmp(s->policy, "nextgen")) {
#if defined(PINPATH_HOST)
                pinned_n = pool_class(s->policy, s->n);
#endif
                s->pool = pinned_alloc(pool_class(s->policy, s->n));
            }
            if (!strcmp(s->policy, "prepinned") || !strcmp(s->policy, "nextgen_lock_mapped")) pin(s->host, s->n);
            one(s);   /* warm-up */
            order[i] = i;
        }
        for (int k = 0; k < rounds; ++k) {
            for (int i = ns - 1; i > 0; --i) { int j = rand() % (i + 1), t = order[i]; order[i] = order[j]; order[j] = t; }
            for (int i = 0; i < ns; ++i) {
                spec_t *s = &specs[order[i]];
                int64_t t = one(s);
                printf("%s,%s,%zu,%d,%d,%lld\n", s->policy, s->h2d ? "h2d" : "d2h", s->n, r, k, (long long)t);
            }
        }
        for (int i = 0; i < ns; ++i) {
            spec_t *s = &specs[i];
            if (!strcmp(s->policy, "prepinned") || !strcmp(s->policy, "nextgen_lock_mapped")) unpin_n(s->host, s->n);
            if (s->pool) {
#if defined(PINPATH_HOST)
                pinned_n = pool_class(s->policy, s->n);
#endif
                pinned_free(s->pool);
            }
            dev_free(s->dev);
            free(s->host);
        }
    }
    fflush(stdout);
    return 0;
}
