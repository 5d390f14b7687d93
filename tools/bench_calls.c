/* bench_calls: the plain C reference for pinpath's native figures (issue #9, "Benchmarks").
 *
 * For each size on the command line: malloc a buffer, touch every byte (0x5a), note its
 * backing (AnonHugePages of its VMA in /proc/self/smaps: "thp" if > 0, else "4k"), then
 * per rep time   lock (unlocked memory) -> query (locked) -> re-lock (locked)
 *                -> unlock (locked) -> query_pageable (unlocked)
 * with clock_gettime(CLOCK_MONOTONIC) around each call. Results are kept in memory and
 * printed after the loops, as CSV: op,nbytes,backing,repeat,ns,rc.
 * The runtime is initialised (cudaSetDevice + cudaFree(0)) before anything is timed; the
 * null call (cudaGetDevice / getppid) is timed first, nbytes 0.
 *
 * malloc's mmap threshold is fixed at 128 KiB (glibc raises it as mmapped chunks are freed),
 * so a buffer of 1 MiB or more is always its own mapping; tools/bench_compare.py sets the
 * same threshold in the Python process.
 *
 * Build (tools/bench_compare.py does it through pinpath.nativelib.build_program):
 *   cc -O2 -DPINPATH_HOST bench_calls.c -o bench_calls
 *   cc -O2 -DPINPATH_CUDA -I<cuda include> bench_calls.c -o bench_calls <libcudart> -Wl,-rpath,<its dir>
 * Usage: bench_calls [-r REPS] [-w WARMUP] [-d DEVICE] NBYTES...
 */
#define _GNU_SOURCE
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#if defined(PINPATH_CUDA)
#include <cuda_runtime_api.h>
static int rt_init(int dev) { int rc = (int)cudaSetDevice(dev); return rc ? rc : (int)cudaFree(0); }
static int do_null(void) { int d; return (int)cudaGetDevice(&d); }
static int do_lock(void *p, size_t n) { return (int)cudaHostRegister(p, n, cudaHostRegisterDefault); }
static int do_unlock(void *p, size_t n) { (void)n; return (int)cudaHostUnregister(p); }
static int do_query(void *p) { struct cudaPointerAttributes a; return (int)cudaPointerGetAttributes(&a, p); }
static void after_refusal(void) { (void)cudaGetLastError(); }
/* a granted re-register means the memory was not registered: undo it */
static void undo_relock(void *p, size_t n) { do_unlock(p, n); }
#define HAS_QUERY 1
#elif defined(PINPATH_HOST)
static int rt_init(int dev) { (void)dev; return 0; }
static int do_null(void) { return getppid() > 0 ? 0 : errno; }
static int do_lock(void *p, size_t n) { return mlock(p, n) == 0 ? 0 : errno; }
static int do_unlock(void *p, size_t n) { return munlock(p, n) == 0 ? 0 : errno; }
static int do_query(void *p) { (void)p; return -2; }
static void after_refusal(void) {}
/* mlock does not stack: a granted re-lock changed nothing */
static void undo_relock(void *p, size_t n) { (void)p; (void)n; }
#define HAS_QUERY 0
#else
#error "build with -DPINPATH_CUDA or -DPINPATH_HOST"
#endif

static inline int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

typedef struct { const char *op; size_t nbytes; const char *backing; int repeat; int64_t ns; int rc; } row_t;

static const char *cur_backing = "-";   /* backing of the buffer being timed */
static row_t *rows;
static size_t nrows, caprows;

static void keep(const char *op, size_t n, int r, int64_t ns, int rc) {
    if (r < 0) return;   /* warm-up */
    if (nrows == caprows) {
        caprows = caprows ? 2 * caprows : 1024;
        rows = realloc(rows, caprows * sizeof *rows);
        if (!rows) { perror("realloc"); exit(1); }
    }
    rows[nrows++] = (row_t){op, n, cur_backing, r, ns, rc};
}

#define TIMED(op, n, r, call)                       \
    do {                                            \
        int64_t t0_ = now_ns();                     \
        rc = (call);                                \
        int64_t t1_ = now_ns();                     \
        keep(op, n, r, t1_ - t0_, rc);              \
    } while (0)

/* "thp" if the VMA holding p has AnonHugePages > 0, else "4k" */
static const char *backing(const void *p) {
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return "unknown";
    char line[512];
    int inside = 0;
    const char *out = "unknown";
    uintptr_t a = (uintptr_t)p;
    while (fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        char dash;
        if (sscanf(line, "%lx%c%lx ", &lo, &dash, &hi) == 3 && dash == '-') {
            if (inside) break;
            inside = lo <= a && a < hi;
            continue;
        }
        unsigned long kib;
        if (inside && sscanf(line, "AnonHugePages: %lu kB", &kib) == 1) {
            out = kib > 0 ? "thp" : "4k";
            break;
        }
    }
    fclose(f);
    return out;
}

int main(int argc, char **argv) {
    int reps = 20, warmup = 3, device = 0, opt;
    while ((opt = getopt(argc, argv, "r:w:d:")) != -1) {
        if (opt == 'r') reps = atoi(optarg);
        else if (opt == 'w') warmup = atoi(optarg);
        else if (opt == 'd') device = atoi(optarg);
        else { fprintf(stderr, "usage: %s [-r REPS] [-w WARMUP] [-d DEVICE] NBYTES...\n", argv[0]); return 2; }
    }
    if (optind >= argc || reps < 1 || warmup < 0) {
        fprintf(stderr, "usage: %s [-r REPS] [-w WARMUP] [-d DEVICE] NBYTES...\n", argv[0]);
        return 2;
    }
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
    int rc = rt_init(device);
    if (rc) { fprintf(stderr, "runtime init failed: %d\n", rc); return 1; }

    for (int r = -warmup; r < reps; ++r) TIMED("null", 0, r, do_null());
    for (int k = optind; k < argc; ++k) {
        size_t n = strtoull(argv[k], NULL, 10);
        unsigned char *buf = malloc(n);
        if (!buf) { fprintf(stderr, "malloc(%zu) failed\n", n); return 1; }
        memset(buf, 0x5a, n);   /* resident, non-zero */
        cur_backing = backing(buf);
        for (int r = -warmup; r < reps; ++r) {
            TIMED("lock", n, r, do_lock(buf, n));
            if (rc) { after_refusal(); continue; }
            if (HAS_QUERY) { TIMED("query", n, r, do_query(buf)); if (rc) after_refusal(); }
            TIMED("relock", n, r, do_lock(buf, n));
            if (rc == 0) undo_relock(buf, n); else after_refusal();
            TIMED("unlock", n, r, do_unlock(buf, n));
            if (HAS_QUERY) { TIMED("query_pageable", n, r, do_query(buf)); if (rc) after_refusal(); }
        }
        free(buf);
    }
    printf("op,nbytes,backing,repeat,ns,rc\n");
    for (size_t i = 0; i < nrows; ++i)
        printf("%s,%zu,%s,%d,%lld,%d\n", rows[i].op, rows[i].nbytes, rows[i].backing, rows[i].repeat,
               (long long)rows[i].ns, rows[i].rc);
    free(rows);
    return 0;
}
