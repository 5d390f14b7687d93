/* pinpath's native twin: the microsecond calls of the lock-cost notebook timed from C, so a
 * Python figure can be set beside the same call without the interpreter (METHOD: "compare a
 * Python figure with a native twin in the same run when the claim is about microseconds").
 *
 * Build with -DPINPATH_CUDA (and -lcudart) or -DPINPATH_HOST. Usage: twin REPEATS WARMUP NBYTES...
 * Prints CSV: op,state,nbytes,repeat,ns,rc
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#ifdef PINPATH_CUDA
#include <cuda_runtime_api.h>
static int do_lock(void *p, size_t n) { return (int)cudaHostRegister(p, n, cudaHostRegisterDefault); }
static int do_unlock(void *p, size_t n) { (void)n; return (int)cudaHostUnregister(p); }
static int do_query(void *p) { struct cudaPointerAttributes a; return (int)cudaPointerGetAttributes(&a, p); }
static int do_null(void) { int d; return (int)cudaGetDevice(&d); }
static const int has_query = 1;
#else
#include <errno.h>
static int do_lock(void *p, size_t n) { return mlock(p, n) == 0 ? 0 : errno; }
static int do_unlock(void *p, size_t n) { return munlock(p, n) == 0 ? 0 : errno; }
static int do_query(void *p) { (void)p; return -1; }   /* Linux has no cheap lock query */
static int do_null(void) { return (int)getppid() > 0 ? 0 : 1; }
static const int has_query = 0;
#endif

static long long now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

#define TIMED(op, state, n, r, call)                                         \
    do {                                                                     \
        long long t0 = now_ns();                                             \
        int rc_ = (call);                                                    \
        long long t1 = now_ns();                                             \
        if ((r) >= 0) printf("%s,%s,%zu,%d,%lld,%d\n", op, state, (size_t)(n), r, t1 - t0, rc_); \
        rc = rc_;                                                            \
    } while (0)

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s REPEATS WARMUP NBYTES...\n", argv[0]);
        return 2;
    }
    int repeats = atoi(argv[1]), warmup = atoi(argv[2]), rc = 0;
    printf("op,state,nbytes,repeat,ns,rc\n");
    for (int r = -warmup; r < repeats; ++r) TIMED("null", "-", 0, r, do_null());
    for (int a = 3; a < argc; ++a) {
        size_t n = strtoull(argv[a], NULL, 10);
        unsigned char *buf = malloc(n);
        if (!buf) { fprintf(stderr, "malloc(%zu) failed\n", n); return 1; }
        memset(buf, 0x5a, n);   /* touched: the lock pins resident pages, as in the Python run */
        for (int r = -warmup; r < repeats; ++r) {
            TIMED("lock", "pageable", n, r, do_lock(buf, n));
            if (rc != 0) continue;
            if (has_query) TIMED("query", "locked", n, r, do_query(buf));
            TIMED("relock", "locked", n, r, do_lock(buf, n));
            if (rc == 0) TIMED("unlock_after_relock", "locked", n, r, do_unlock(buf, n));
            TIMED("unlock", "locked", n, r, do_unlock(buf, n));
            if (has_query) TIMED("query", "pageable", n, r, do_query(buf));
        }
        free(buf);
    }
#ifdef PINPATH_CUDA
    (void)cudaGetLastError();   /* the refused re-registers leave their error behind; clear it */
#endif
    return 0;
}
