/* plain_policies: the yardstick for pinpath's native engine. The same transfer policies, written
 * by hand as an application or runtime developer would write them in plain C, with no plan, no
 * call log and no phase timing: clock, the policy's calls, clock.
 *
 * Build: as nativelib builds tools (-DPINPATH_CUDA with cuda_runtime_api.h and libcudart, or
 * -DPINPATH_HOST with libc only: mlock/munlock and a worker thread that does the "device" copy).
 * Usage: plain_policies [-e EVICT_NBYTES] OUT REPEATS ROUNDS SEED SPEC...   SPEC = policy:direction:nbytes,
 * OUT a file or -, SEED the shuffles' seed (a caller that runs one repeat per call passes a new seed each
 * time); EVICT_NBYTES (default 0: the buffers hot, each transfer right after the previous one): the
 * cache state, that many bytes of other memory written right before each timed transfer, outside
 * its clock reads (as the engine's plan with evict_nbytes)
 * Output, one line per timed transfer: policy,direction,nbytes,repeat,round,ns
 * Each repeat visits the policies in a shuffled order; for each, it allocates that policy's
 * buffers anew (page-aligned heap - from 128 KiB a fresh mapping, the mmap threshold fixed as in
 * pinpath's processes -, touched with a non-zero pattern, and the device buffer written from it
 * by a blocking copy; one host and one device buffer per size for both directions, one pooled
 * buffer per size class), warms each of its specs up once, times ROUNDS transfers of each, its
 * specs interleaved in a shuffled order, keeping the times in memory, writes them, and frees the
 * buffers (the engine runs one plan per policy the same way). Built as an executable it is a process of
 * its own; built as a shared object, plain_main runs it inside the caller's process (the same
 * CUDA runtime and allocator state as the engine beside it).
 */
#define _GNU_SOURCE
#include <malloc.h>
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
static void setup(void) {
    cudaSetDevice(0);
    cudaFree(0);
    if (!stream) cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking);
}
/* the device buffer written from `src` by a blocking copy, as pinpath writes the engine's (a
 * cudaMemset before it left a state the engine's transfers did not meet: fidelity_diag, NEXT.md) */
static void *dev_alloc(const void *src, size_t n) {
    void *p = NULL;
    cudaMalloc(&p, n);
    cudaMemcpy(p, src, n, cudaMemcpyHostToDevice);
    return p;
}
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
static int started;
static void setup(void) { if (!started++) pthread_create(&worker, NULL, work, NULL); }
static void *dev_alloc(const void *src, size_t n) { void *p = malloc(n); memcpy(p, src, n); return p; }
static void dev_free(void *p) { free(p); }
static void pin(void *p, size_t n) { mlock(p, n); }
/* Linux's only lock query: the VmFlags ("lo") of the mapping that holds p in /proc/self/smaps */
static int pinned(void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int inside = 0, locked = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = lo <= (unsigned long)p && (unsigned long)p < hi;
        else if (inside && !strncmp(line, "VmFlags:", 8)) { locked = strstr(line, " lo") != NULL; break; }
    }
    if (f) fclose(f);
    return locked;
}
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

/* a host buffer on pages of its own (as the engine's), touched with a non-zero pattern; NULL if
 * none could be had */
static char *host_alloc(size_t n, int seed) {
    char *h = NULL;
    if (posix_memalign((void **)&h, 4096, n)) return NULL;
    for (size_t b = 0; b < n; ++b) h[b] = (char)(1 + (b * 131 + (size_t)seed) % 251);
    return h;
}

/* owner / pool_owner: this spec allocated the host and device buffers / the pooled buffer that
 * other specs of its policy share (as the engine does: one buffer per size for both directions,
 * one pooled buffer per size class) */
typedef struct { char policy[32]; int h2d; size_t n; char *host; void *dev; void *pool; int owner, pool_owner; } spec_t;

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
        if (!strcmp(p, "query_then_lock") && pinned(h)) {   /* not in these runs: the buffer is pageable */
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

/* the cache state: evict_nbytes of evict written before each timed transfer (0: none) */
static unsigned char *evict;
static size_t evict_nbytes, evict_cap;

static void run_policy(spec_t *specs, int *idx, int k, int r, int rounds, FILE *out) {
    for (int i = 0; i < k; ++i) {
        spec_t *s = &specs[idx[i]];
        int pooled = !strcmp(s->policy, "stage_pooled") || !strcmp(s->policy, "nextgen");
        s->owner = 1; s->pool_owner = pooled; s->pool = NULL;
        for (int j = 0; j < i; ++j) {
            spec_t *o = &specs[idx[j]];
            if (s->owner && o->owner && o->n == s->n) { s->owner = 0; s->host = o->host; s->dev = o->dev; }
            if (s->pool_owner && o->pool_owner && pool_class(o->policy, o->n) == pool_class(s->policy, s->n)) {
                s->pool_owner = 0; s->pool = o->pool;
            }
        }
        if (s->owner) {
            if (!(s->host = host_alloc(s->n, r))) { perror("posix_memalign"); exit(1); }
            s->dev = dev_alloc(s->host, s->n);
            if (!strcmp(s->policy, "prepinned") || !strcmp(s->policy, "nextgen_lock_mapped")) pin(s->host, s->n);
        }
        if (s->pool_owner) {
#if defined(PINPATH_HOST)
            pinned_n = pool_class(s->policy, s->n);
#endif
            s->pool = pinned_alloc(pool_class(s->policy, s->n));
        }
    }
    for (int i = 0; i < k; ++i) one(&specs[idx[i]]);   /* warm-up */
    /* the times are kept in memory and written after the last round, as the engine's are: a line
     * written between transfers (its stdio buffer, a write(2) every few dozen lines) was a state
     * the engine's transfers did not meet */
    int64_t *ns = malloc(sizeof *ns * (size_t)k * (size_t)rounds);
    int *who = malloc(sizeof *who * (size_t)k * (size_t)rounds);
    if (!ns || !who) { perror("plain_policies"); exit(1); }
    for (int round = 0; round < rounds; ++round) {
        for (int i = k - 1; i > 0; --i) { int j = rand() % (i + 1), t = idx[i]; idx[i] = idx[j]; idx[j] = t; }
        for (int i = 0; i < k; ++i) {
            who[round * k + i] = idx[i];
            if (evict_nbytes) memset(evict, 1 + (round * k + i) % 127, evict_nbytes);   /* cold, untimed */
            ns[round * k + i] = one(&specs[idx[i]]);
        }
    }
    for (int m = 0; m < k * rounds; ++m) {
        spec_t *s = &specs[who[m]];
        fprintf(out, "%s,%s,%zu,%d,%d,%lld\n", s->policy, s->h2d ? "h2d" : "d2h", s->n, r, m / k, (long long)ns[m]);
    }
    free(ns);
    free(who);
    for (int i = 0; i < k; ++i) {
        spec_t *s = &specs[idx[i]];
        if (s->pool_owner) {
#if defined(PINPATH_HOST)
            pinned_n = pool_class(s->policy, s->n);
#endif
            pinned_free(s->pool);
        }
        if (!s->owner) continue;
        if (!strcmp(s->policy, "prepinned") || !strcmp(s->policy, "nextgen_lock_mapped")) unpin_n(s->host, s->n);
        dev_free(s->dev);
        free(s->host);
    }
}

__attribute__((visibility("default"))) int plain_main(int argc, char **argv) {
    size_t want_evict = 0;
    if (argc > 2 && !strcmp(argv[1], "-e")) {
        want_evict = (size_t)strtoull(argv[2], NULL, 10);
        argv[2] = argv[0];
        argv += 2;
        argc -= 2;
    }
    if (argc < 6) {
        fprintf(stderr, "usage: plain_policies [-e EVICT_NBYTES] OUT REPEATS ROUNDS SEED policy:direction:nbytes ...\n");
        return 2;
    }
    if (want_evict > evict_cap) {   /* kept between calls, every page written once (untimed) */
        free(evict);
        evict_cap = 0;
        if (!(evict = malloc(want_evict))) { perror("plain_policies"); return 2; }
        memset(evict, 1, want_evict);
        evict_cap = want_evict;
    }
    evict_nbytes = want_evict;
    int repeats = atoi(argv[2]), rounds = atoi(argv[3]), ns = argc - 5;
    unsigned seed = (unsigned)strtoul(argv[4], NULL, 10);
    spec_t *specs = calloc((size_t)ns, sizeof *specs);
    int *pol = calloc((size_t)ns, sizeof *pol), npol = 0;   /* the first spec of each policy */
    for (int i = 0; i < ns; ++i) {
        char dir[8];
        unsigned long long n;
        if (sscanf(argv[5 + i], "%31[a-z_]:%7[a-z2]:%llu", specs[i].policy, dir, &n) != 3 || n == 0) {
            fprintf(stderr, "plain_policies: bad spec %s\n", argv[5 + i]);
            return 2;
        }
        specs[i].h2d = !strcmp(dir, "h2d");
        specs[i].n = (size_t)n;
        int seen = 0;
        for (int j = 0; j < npol; ++j) seen |= !strcmp(specs[pol[j]].policy, specs[i].policy);
        if (!seen) pol[npol++] = i;
    }
    /* the allocator state pinpath's processes run in (libc.fix_mmap_threshold): every buffer of
     * 128 KiB or more a fresh mapping of its own, never recycled heap pages of another backing */
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    FILE *out = strcmp(argv[1], "-") ? fopen(argv[1], "w") : stdout;
    if (!out) { perror(argv[1]); return 2; }
    setup();
    srand(seed);
    int *idx = malloc(sizeof(int) * (size_t)ns);
    for (int r = 0; r < repeats; ++r) {
        for (int i = npol - 1; i > 0; --i) { int j = rand() % (i + 1), t = pol[i]; pol[i] = pol[j]; pol[j] = t; }
        for (int p = 0; p < npol; ++p) {
            int k = 0;
            for (int i = 0; i < ns; ++i)
                if (!strcmp(specs[i].policy, specs[pol[p]].policy)) idx[k++] = i;
            run_policy(specs, idx, k, r, rounds, out);
        }
    }
    if (out != stdout) fclose(out); else fflush(stdout);
    free(idx); free(pol); free(specs);
    return 0;
}

/* plain_buffers: a host and a device buffer of n bytes made as run_policy makes them (page-aligned
 * heap touched with a pattern; cudaMalloc written from it), for a caller that times other code on them;
 * plain_buffers_free gives them back. */
__attribute__((visibility("default"))) int plain_buffers(size_t n, int seed, void **host, void **dev) {
    setup();
    char *h = host_alloc(n, seed);
    if (!h) return 12;
    *host = h;
    *dev = dev_alloc(h, n);
    return 0;
}
__attribute__((visibility("default"))) void plain_buffers_free(void *host, void *dev) { dev_free(dev); free(host); }
/* plain_time: ROUNDS transfers of one point on buffers the caller owns (after one warm-up), for
 * the policies that need no buffer of their own (driver_pageable, lock_always, query_then_lock);
 * ns_out gets each one's time; with `lines`, a line is written to a scratch file after each
 * transfer. Returns 0, or 2 for another policy. tools/fidelity_diag.py runs
 * the engine and this on the same buffers, to tell the buffers' share of a difference from the
 * rest's. */
__attribute__((visibility("default"))) int plain_time(const char *policy, void *host, void *dev, size_t n, int h2d,
                                                      int rounds, int64_t *ns_out, int lines) {
    if (strcmp(policy, "driver_pageable") && strcmp(policy, "lock_always") && strcmp(policy, "query_then_lock"))
        return 2;
    spec_t s;
    memset(&s, 0, sizeof s);
    snprintf(s.policy, sizeof s.policy, "%s", policy);
    s.host = host; s.dev = dev; s.n = n; s.h2d = h2d;
    setup();
    one(&s);
    static FILE *sink;   /* lines: one line written after each transfer, as plain_main did before */
    if (lines && !sink) sink = tmpfile();
    for (int i = 0; i < rounds; ++i) {
        ns_out[i] = one(&s);
        if (lines && sink) fprintf(sink, "%s,%s,%zu,0,%d,%lld\n", policy, h2d ? "h2d" : "d2h", n, i, (long long)ns_out[i]);
    }
    return 0;
}

int main(int argc, char **argv) { return plain_main(argc, argv); }
