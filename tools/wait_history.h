/* What tools/wait_history.cu (plain CUDA) and tools/wait_history_omp.cpp (the same through LLVM's
 * libomptarget) share: the histories (none, kernN, sleepN, busyN; N in us), the ops, the shuffled
 * rounds of blocks and the rows. Each program gives its own kernel history, timed op and byte check
 * (wh_hooks). Plain C, header-only, included once per program. */
#ifndef PINPATH_WAIT_HISTORY_H
#define PINPATH_WAIT_HISTORY_H

#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>

#define WH_DEFAULT_HISTORIES "none,kern20,kern200,kern2000,sleep2000,busy2000"
enum { WH_NONE, WH_KERN, WH_SLEEP, WH_BUSY };
#define WH_MAX_HIST 32
static int wh_n_hist, wh_hist_kind[WH_MAX_HIST];
static long long wh_hist_ns[WH_MAX_HIST];
static char wh_hist_name[WH_MAX_HIST][24];

/* d2h copies into host memory; a 10 us kernel with the 240 KiB copy behind it under one wait; the region
 * app's invocation (a 384 B H2D, a launch that does not spin, the 240 KiB D2H, one wait) and the same with
 * nothing moved (its --paired partner: the launch alone, one wait; no bytes, so no byte check) */
enum { WH_O_4B, WH_O_240K, WH_O_1M, WH_O_K240K, WH_O_REGION, WH_O_RKERNEL, WH_N_OP };
static const char *wh_op_name[WH_N_OP] = {"d2h_4B", "d2h_240KiB", "d2h_1MiB", "k10_d2h_240KiB",
                                          "region_h2d384_d2h_240KiB", "region_kernel_only"};
static const size_t wh_op_nbytes[WH_N_OP] = {4, 240 << 10, 1 << 20, 240 << 10, 240 << 10, 0};
#define WH_POS_NBYTES 384   /* the region's positions at nw=16 (24 bytes a walker) */
#define WH_MAX_NBYTES ((size_t)1 << 20)
#define WH_K10_NS 10000LL

static int64_t wh_now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* the histories of a comma list (each kind once per length, no empty item, digits only); 0 on a bad list */
static int wh_parse_histories(const char *list) {
    static const char *kinds[] = {"none", "kern", "sleep", "busy"};
    const char *at = list;
    if (strlen(list) >= 512) return 0;
    while (*at) {
        const char *end = strchr(at, ',');
        size_t len = end ? (size_t)(end - at) : strlen(at);
        char tok[32];
        if (len == 0 || len >= sizeof tok || wh_n_hist == WH_MAX_HIST) return 0;
        memcpy(tok, at, len);
        tok[len] = '\0';
        int k = -1;
        for (int i = 0; i < 4; i++)
            if (!strncmp(tok, kinds[i], strlen(kinds[i]))) k = i;
        if (k < 0) return 0;
        const char *digits = tok + strlen(kinds[k]);
        long long us = 0;
        if (k == WH_NONE) {
            if (*digits) return 0;
        } else {
            if (!*digits || strlen(digits) > 7) return 0;
            for (const char *c = digits; *c; c++)
                if (*c < '0' || *c > '9') return 0;
            us = strtoll(digits, NULL, 10);
            if (us < 1 || us > 1000000) return 0;
        }
        for (int h = 0; h < wh_n_hist; h++)
            if (wh_hist_kind[h] == k && wh_hist_ns[h] == us * 1000) return 0;   /* twice */
        wh_hist_kind[wh_n_hist] = k;
        wh_hist_ns[wh_n_hist] = us * 1000;
        if (k == WH_NONE) snprintf(wh_hist_name[wh_n_hist], sizeof wh_hist_name[0], "none");
        else snprintf(wh_hist_name[wh_n_hist], sizeof wh_hist_name[0], "%s%lldus", kinds[k], us);
        wh_n_hist++;
        if (!end) break;
        at = end + 1;
        if (!*at) return 0;   /* a trailing comma: an empty item */
    }
    return wh_n_hist > 0;
}

/* The physical layout of a host buffer, for the draw per process (README "Wait states"): its 4 KiB pages,
 * how many are present, and how many runs of consecutive page frames hold them (/proc/self/pagemap; the
 * frame numbers read as 0 without CAP_SYS_ADMIN: "frames unknown"). One line on stderr. */
static void wh_page_runs(const char *who, const char *process, const char *label, const void *p, size_t nbytes) {
    const uint64_t page = 4096, first = (uint64_t)(uintptr_t)p / page,
                   last = ((uint64_t)(uintptr_t)p + nbytes - 1) / page;
    FILE *f = fopen("/proc/self/pagemap", "rb");
    long pages = 0, present = 0, runs = 0, known = 0;
    uint64_t prev = 0;
    for (uint64_t v = first; f && v <= last; v++, pages++) {
        uint64_t e = 0;
        if (fseeko(f, (off_t)(v * 8), SEEK_SET) != 0 || fread(&e, 8, 1, f) != 1) break;
        if (!(e >> 63 & 1)) continue;
        present++;
        uint64_t pfn = e & ((1ULL << 55) - 1);
        if (pfn) known++;
        if (pfn && pfn != prev + 1) runs++;
        prev = pfn;
    }
    if (f) fclose(f);
    if (known == present && present > 0)
        fprintf(stderr, "%s: process %s buffer %s pages %ld present %ld frame_runs %ld\n", who, process, label, pages,
                present, runs);
    else
        fprintf(stderr, "%s: process %s buffer %s pages %ld present %ld frames unknown\n", who, process, label, pages,
                present);
}

typedef struct {
    void (*kernel_waited)(long long ns);   /* a delay kernel of ns and a wait on it */
    int64_t (*timed_op)(int op);           /* the op, enqueue to its wait's return, in ns */
    unsigned char *(*dest)(int op);        /* the op's host destination */
} wh_hooks;

static void wh_history(const wh_hooks *hk, int h) {
    if (wh_hist_kind[h] == WH_KERN) {
        hk->kernel_waited(wh_hist_ns[h]);
    } else if (wh_hist_kind[h] == WH_SLEEP) {
        struct timespec t = {(time_t)(wh_hist_ns[h] / 1000000000LL), (long)(wh_hist_ns[h] % 1000000000LL)};
        nanosleep(&t, NULL);
    } else if (wh_hist_kind[h] == WH_BUSY) {
        int64_t end = wh_now_ns() + wh_hist_ns[h];
        while (wh_now_ns() < end) {
        }
    }
}

static uint64_t wh_rng;
static uint64_t wh_next_rand(void) {   /* xorshift64 */
    wh_rng ^= wh_rng << 13;
    wh_rng ^= wh_rng >> 7;
    wh_rng ^= wh_rng << 17;
    return wh_rng;
}

/* A warm-up (every history and op once), then ROUNDS rounds, each every (history, op) pair in a
 * shuffled order, a block of BLOCK timed ops each, every op after its history; the rows on stdout
 * (mode,process,round,history,op,index,ns,cpu_before,cpu_after) at the end. Bytes, outside the clock:
 * each block's destination is zeroed before it and compared whole with ``pattern`` (what the device
 * holds) after it; before each op its first and last byte are zeroed again and checked when the op's wait has
 * returned, so that every op, not only a block's last, is seen to have landed. Returns how many
 * blocks and ops were wrong. */
static int wh_run(const wh_hooks *hk, const unsigned char *pattern, const char *mode, const char *process,
                  unsigned long long seed, int rounds, int block) {
    wh_rng = seed * 2654435761ULL + 88172645463325252ULL;
    for (int h = 0; h < wh_n_hist; h++)
        for (int o = 0; o < WH_N_OP; o++) {
            wh_history(hk, h);
            hk->timed_op(o);
        }
    int npairs = wh_n_hist * WH_N_OP, bad = 0;
    int *order = (int *)malloc((size_t)rounds * npairs * sizeof(int));
    int64_t *ns = (int64_t *)malloc((size_t)rounds * npairs * block * sizeof(int64_t));
    /* the CPU the thread was on just before each op and right after its wait (outside the clock): a wait
     * woken on another CPU than it slept on, or on the same one */
    int *cpu = (int *)malloc((size_t)rounds * npairs * block * 2 * sizeof(int));
    if (!order || !ns || !cpu) {
        fprintf(stderr, "wait_history: out of memory\n");
        exit(2);
    }
    for (int r = 0; r < rounds; r++) {
        int *ord = order + (size_t)r * npairs;
        for (int i = 0; i < npairs; i++) ord[i] = i;
        for (int i = npairs - 1; i > 0; i--) {   /* Fisher-Yates */
            int j = (int)(wh_next_rand() % (uint64_t)(i + 1)), t = ord[i];
            ord[i] = ord[j];
            ord[j] = t;
        }
        for (int k = 0; k < npairs; k++) {
            int h = ord[k] / WH_N_OP, o = ord[k] % WH_N_OP;
            int64_t *out = ns + ((size_t)r * npairs + k) * block;
            unsigned char *dst = hk->dest(o);
            const size_t n = wh_op_nbytes[o], last = n ? n - 1 : 0;   /* n 0: an op that moves nothing */
            if (n) memset(dst, 0, n);
            for (int i = 0; i < block; i++) {
                if (n) dst[0] = dst[last] = 0;
                wh_history(hk, h);
                int *at = cpu + 2 * (((size_t)r * npairs + k) * block + i);
                at[0] = sched_getcpu();
                out[i] = hk->timed_op(o);
                at[1] = sched_getcpu();
                if (n && (dst[0] != pattern[0] || dst[last] != pattern[last])) bad++;
            }
            if (n && memcmp(dst, pattern, n) != 0) bad++;
        }
    }
    printf("mode,process,round,history,op,index,ns,cpu_before,cpu_after\n");
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < npairs; k++) {
            int h = order[(size_t)r * npairs + k] / WH_N_OP, o = order[(size_t)r * npairs + k] % WH_N_OP;
            for (int i = 0; i < block; i++) {
                size_t at = ((size_t)r * npairs + k) * block + i;
                printf("%s,%s,%d,%s,%s,%d,%lld,%d,%d\n", mode, process, r, wh_hist_name[h], wh_op_name[o], i,
                       (long long)ns[at], cpu[2 * at], cpu[2 * at + 1]);
            }
        }
    if (bad) fprintf(stderr, "wait_history: %d blocks' or ops' bytes differ from the device's\n", bad);
    free(order);
    free(ns);
    free(cpu);
    return bad;
}

#endif
