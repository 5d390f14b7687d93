/* pageable_probe: why is the engine's driver_pageable D2H at 4 KiB faster than the yardstick's?
 * Both make the same two calls (cudaMemcpyAsync into pageable memory, cudaStreamSynchronize); they
 * differ in the stream's life (the engine makes one per plan, the yardstick keeps one for the
 * process) and in the clock reads around each call (the engine's call log). This program times
 * the yardstick's way and each of those differences alone, interleaved, in one process.
 *
 * Build: nvcc -O2 -o pageable_probe tools/pageable_probe.c   (or cc with -lcudart)
 * Usage: pageable_probe REPEATS ROUNDS
 * Output, one line per timed transfer: variant,direction,nbytes,repeat,round,ns
 *   kept:    the stream made once for the process (the yardstick)
 *   fresh:   a stream made for each batch and destroyed after it (the engine's queue per plan)
 *   clocked: the kept stream, with two clock reads around each call (the engine's call log)
 * A batch: one variant, fresh page-aligned host buffers touched with a pattern, one warm-up of
 * each point, then ROUNDS visits of the four points (4 KiB and 64 KiB, both directions) in a
 * shuffled order. Each repeat runs the three variants in a shuffled order.
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

enum { KEPT, FRESH, CLOCKED, NVARIANTS };
static const char *const NAMES[NVARIANTS] = {"kept", "fresh", "clocked"};
static volatile int64_t sink;

static int64_t one(cudaStream_t s, char *h, void *d, size_t n, int h2d, int clocked) {
    int64_t t0 = now();
    if (clocked) sink += now();
    cudaMemcpyAsync(h2d ? d : h, h2d ? (void *)h : d, n, h2d ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, s);
    if (clocked) { sink += now(); sink += now(); }
    cudaStreamSynchronize(s);
    if (clocked) sink += now();
    return now() - t0;
}

int main(int argc, char **argv) {
    if (argc != 3) { fprintf(stderr, "usage: %s REPEATS ROUNDS\n", argv[0]); return 2; }
    int repeats = atoi(argv[1]), rounds = atoi(argv[2]);
    const size_t sizes[2] = {4096, 65536};
    if (cudaSetDevice(0) != cudaSuccess || cudaFree(0) != cudaSuccess) { fprintf(stderr, "no CUDA device\n"); return 1; }
    cudaStream_t kept;
    cudaStreamCreateWithFlags(&kept, cudaStreamNonBlocking);
    srand(16);
    printf("variant,direction,nbytes,repeat,round,ns\n");
    for (int r = 0; r < repeats; ++r) {
        int order[NVARIANTS] = {KEPT, FRESH, CLOCKED};
        for (int i = NVARIANTS - 1; i > 0; --i) { int j = rand() % (i + 1), t = order[i]; order[i] = order[j]; order[j] = t; }
        for (int v = 0; v < NVARIANTS; ++v) {
            int var = order[v];
            cudaStream_t s = kept;
            if (var == FRESH) cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
            char *h[2];
            void *d[2];
            for (int k = 0; k < 2; ++k) {
                if (posix_memalign((void **)&h[k], 4096, sizes[k])) return 1;
                for (size_t b = 0; b < sizes[k]; ++b) h[k][b] = (char)(1 + (b * 131 + (size_t)r) % 251);
                cudaMalloc(&d[k], sizes[k]);
                cudaMemset(d[k], 0x5a, sizes[k]);
            }
            int pts[4] = {0, 1, 2, 3};   /* bit 0: size index, bit 1: h2d */
            for (int p = 0; p < 4; ++p) one(s, h[p & 1], d[p & 1], sizes[p & 1], p >> 1, var == CLOCKED);
            for (int round = 0; round < rounds; ++round) {
                for (int i = 3; i > 0; --i) { int j = rand() % (i + 1), t = pts[i]; pts[i] = pts[j]; pts[j] = t; }
                for (int i = 0; i < 4; ++i) {
                    int p = pts[i];
                    int64_t ns = one(s, h[p & 1], d[p & 1], sizes[p & 1], p >> 1, var == CLOCKED);
                    printf("%s,%s,%zu,%d,%d,%lld\n", NAMES[var], p >> 1 ? "h2d" : "d2h", sizes[p & 1], r, round, (long long)ns);
                }
            }
            for (int k = 0; k < 2; ++k) { cudaFree(d[k]); free(h[k]); }
            if (var == FRESH) cudaStreamDestroy(s);
        }
    }
    cudaStreamDestroy(kept);
    return 0;
}
