/* pageable_probe: why is the engine's driver_pageable D2H at 4 KiB faster than the yardstick's?
 * Both make the same two calls (cudaMemcpyAsync into pageable memory, cudaStreamSynchronize).
 * An earlier form of this probe found a stream made for each batch faster (0.88x at 4 KiB D2H)
 * than one kept for the process, and a kept stream fast in its first batch only: something
 * between batches slows a kept stream. Between batches the yardstick frees its host and device
 * buffers and allocates them again (the heap hands back the same addresses); the engine's host
 * buffers come from Python's heap, at addresses that move. This probe separates those.
 *
 * Build: nvcc -O2 -o pageable_probe tools/pageable_probe.c   (or cc with -lcudart)
 * Usage: pageable_probe REPEATS ROUNDS
 * Output, one line per timed transfer: variant,direction,nbytes,repeat,round,ns
 * Each variant but "fresh" has a stream of its own, made at the start and kept:
 *   again:    host and device buffers freed and allocated again per batch (the yardstick)
 *   fresh:    as "again", on a stream made for each batch and destroyed after it
 *   kept:     host and device buffers allocated once, never freed
 *   new_host: the device buffers kept, the host buffers allocated again per batch
 *   new_dev:  the host buffers kept, the device buffers allocated again per batch
 *   moved:    as "again", but each batch's host buffers at new addresses (the old ones are freed
 *             only after the new ones are allocated, and a page-sized spacer is left behind)
 *   copied:   as "again", the device buffers written from the host ones by a blocking cudaMemcpy
 *             instead of cudaMemset (as pinpath writes the engine's)
 * A batch: one variant, its host buffers touched with a pattern, one warm-up of each point, then
 * ROUNDS visits of the four points (4 KiB and 64 KiB, both directions) in a shuffled order. Each
 * repeat runs the variants in a shuffled order.
 */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

enum { AGAIN, FRESH, KEPT, NEW_HOST, NEW_DEV, MOVED, COPIED, NVARIANTS };
static const char *const NAMES[NVARIANTS] = {"again", "fresh", "kept", "new_host", "new_dev", "moved", "copied"};
static const size_t SIZES[2] = {4096, 65536};

typedef struct { cudaStream_t s; char *h[2]; void *d[2]; } variant_t;

static int64_t one(cudaStream_t s, char *h, void *d, size_t n, int h2d) {
    int64_t t0 = now();
    cudaMemcpyAsync(h2d ? d : h, h2d ? (void *)h : d, n, h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s);
    cudaStreamSynchronize(s);
    return now() - t0;
}

static char *host_alloc(size_t n, int r) {
    char *h = NULL;
    if (posix_memalign((void **)&h, 4096, n)) { perror("posix_memalign"); exit(1); }
    for (size_t b = 0; b < n; ++b) h[b] = (char)(1 + (b * 131 + (size_t)r) % 251);
    return h;
}
static void *dev_alloc(const char *from, size_t n) {
    void *d = NULL;
    cudaMalloc(&d, n);
    if (from) cudaMemcpy(d, from, n, cudaMemcpyHostToDevice);
    else cudaMemset(d, 0x5a, n);
    return d;
}

/* the variant's buffers before batch r: what it allocates again, it allocates here */
static void before(variant_t *v, int var, int r) {
    int new_host = var != KEPT && var != NEW_DEV, new_dev = var != KEPT && var != NEW_HOST;
    for (int k = 0; k < 2; ++k) {
        if (r == 0 || new_host) {
            char *old = v->h[k];
            if (var == MOVED && old) {
                v->h[k] = host_alloc(SIZES[k], r);
                free(old);
                if (!malloc(4096)) exit(1);   /* a spacer: the next batch cannot land here again */
            } else {
                free(old);
                v->h[k] = host_alloc(SIZES[k], r);
            }
        }
        if (r == 0 || new_dev) {
            cudaFree(v->d[k]);
            v->d[k] = dev_alloc(var == COPIED ? v->h[k] : NULL, SIZES[k]);
        }
    }
    if (var == FRESH) cudaStreamCreateWithFlags(&v->s, cudaStreamNonBlocking);
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s REPEATS ROUNDS\n", argv[0]); return 2; }
    int repeats = atoi(argv[1]), rounds = atoi(argv[2]);
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) { fprintf(stderr, "no CUDA device\n"); return 1; }
    variant_t vs[NVARIANTS];
    memset(vs, 0, sizeof vs);
    for (int v = 0; v < NVARIANTS; ++v)
        if (v != FRESH) cudaStreamCreateWithFlags(&vs[v].s, cudaStreamNonBlocking);
    srand(16);
    printf("variant,direction,nbytes,repeat,round,ns\n");
    for (int r = 0; r < repeats; ++r) {
        int order[NVARIANTS];
        for (int v = 0; v < NVARIANTS; ++v) order[v] = v;
        for (int i = NVARIANTS - 1; i > 0; --i) { int j = rand() % (i + 1), t = order[i]; order[i] = order[j]; order[j] = t; }
        for (int o = 0; o < NVARIANTS; ++o) {
            int var = order[o];
            variant_t *v = &vs[var];
            before(v, var, r);
            int pts[4] = {0, 1, 2, 3};   /* bit 0: size index, bit 1: h2d */
            for (int p = 0; p < 4; ++p) one(v->s, v->h[p & 1], v->d[p & 1], SIZES[p & 1], p >> 1);
            for (int round = 0; round < rounds; ++round) {
                for (int i = 3; i > 0; --i) { int j = rand() % (i + 1), t = pts[i]; pts[i] = pts[j]; pts[j] = t; }
                for (int i = 0; i < 4; ++i) {
                    int p = pts[i];
                    int64_t ns = one(v->s, v->h[p & 1], v->d[p & 1], SIZES[p & 1], p >> 1);
                    printf("%s,%s,%zu,%d,%d,%lld\n", NAMES[var], p >> 1 ? "h2d" : "d2h", SIZES[p & 1], r, round, (long long)ns);
                }
            }
            if (var == FRESH) { cudaStreamDestroy(v->s); v->s = NULL; }
        }
    }
    for (int v = 0; v < NVARIANTS; ++v) {
        for (int k = 0; k < 2; ++k) { free(vs[v].h[k]); cudaFree(vs[v].d[k]); }
        if (vs[v].s) cudaStreamDestroy(vs[v].s);
    }
    return 0;
}
