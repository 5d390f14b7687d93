/* cudalog: which CUDA streams LLVM's CUDA plugin uses, from the plugin's own driver calls.
 *
 * Built on a node with an NVIDIA driver as a shared object named libcuda.so whose DT_NEEDED is the
 * driver's libcuda.so.1 (pinpath.experiments.overlap builds it). Put first on LD_LIBRARY_PATH, it is
 * what the plugin's dlopen("libcuda.so") finds; the plugin's dlsym on it finds the calls below here
 * and every other one in the driver (dlsym searches the object's dependencies too). Each call below
 * writes one line to stderr, then calls the driver's own:
 *   pinpath-cuda: call=<name> stream=<CUstream> nbytes=<n> tid=<thread> t_ns=<CLOCK_MONOTONIC>
 * The lines cost a write(2) each: runs with the log are traced runs, never timed ones.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef unsigned long long CUdeviceptr;   /* 64-bit, the _v2 ABI */

static void *driver(const char *name) {
    static void *h;
    if (!h) h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h) h = dlopen("libcuda.so.1", RTLD_NOW);
    return h ? dlsym(h, name) : NULL;
}

static void log_call(const char *call, const void *stream, size_t nbytes) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    char line[200];
    int n = snprintf(line, sizeof line, "pinpath-cuda: call=%s stream=%p nbytes=%zu tid=%ld t_ns=%lld\n", call, stream,
                     nbytes, (long)syscall(SYS_gettid), (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
    if (n > 0) (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* real_: the driver's own fn (its type: this one's), or CUDA_ERROR_UNKNOWN where it has none */
#define REAL(fn)                                          \
    static __typeof__(fn) *real_;                         \
    if (!real_) real_ = (__typeof__(fn) *)driver(#fn);    \
    if (!real_) return 999

CUresult cuStreamCreate(void **stream, unsigned flags) {
    REAL(cuStreamCreate);
    CUresult rc = real_(stream, flags);
    log_call("cuStreamCreate", rc == 0 ? *stream : NULL, 0);
    return rc;
}

CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void *src, size_t n, void *stream) {
    REAL(cuMemcpyHtoDAsync_v2);
    log_call("cuMemcpyHtoDAsync", stream, n);
    return real_(dst, src, n, stream);
}

CUresult cuMemcpyDtoHAsync_v2(void *dst, CUdeviceptr src, size_t n, void *stream) {
    REAL(cuMemcpyDtoHAsync_v2);
    log_call("cuMemcpyDtoHAsync", stream, n);
    return real_(dst, src, n, stream);
}

CUresult cuLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                        unsigned shmem, void *stream, void **params, void **extra) {
    REAL(cuLaunchKernel);
    log_call("cuLaunchKernel", stream, 0);
    return real_(f, gx, gy, gz, bx, by, bz, shmem, stream, params, extra);
}

CUresult cuStreamSynchronize(void *stream) {
    REAL(cuStreamSynchronize);
    log_call("cuStreamSynchronize", stream, 0);
    return real_(stream);
}
