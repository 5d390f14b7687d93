/* wait_history: a diagnostic (issue 33 item 3, README "Wait states"), no verdict. In CUDA's blocking-sync
 * mode (CU_CTX_SCHED_BLOCKING_SYNC, as LLVM's CUDA plugin sets it) a wait on a short copy returns either
 * soon (within the copy's time) or late (some tens of us after), and which one a process gets was
 * drawn per process and held for a step or longer, on both sides of advise (the application and the
 * runtime probe), whatever CPUs were kept awake. Does the state follow what the process waited on
 * just before? The probe times copies back to back; an application waits on its kernels between them.
 *
 * Per round, every (history, op) pair in a shuffled order, a block of BLOCK timed ops each, every op
 * preceded by its history (outside the clock). A history is none or KINDn, n in us:
 *   none       nothing: the ops back to back, as the runtime probe times them
 *   kernN      a delay kernel of N us and a blocking wait on it
 *   sleepN     the thread asleep (nanosleep) for N us: a wait that is not the driver's
 *   busyN      the thread busy on its CPU for N us: a gap with no wait at all
 * HISTORIES (a comma list) names them; the default is none,kern20,kern200,kern2000,sleep2000,busy2000.
 * The ops (timed: the enqueue and the stream's wait, clock_gettime around both):
 *   d2h_4B, d2h_240KiB, d2h_1MiB   a copy from device memory to pinned host memory
 *   k10_d2h_240KiB                 a 10 us kernel and the 240 KiB copy behind it, one wait (a region's shape)
 *   region_h2d384_d2h_240KiB       the region app's invocation: a 384 B H2D, a launch, the 240 KiB D2H, one wait
 *   region_kernel_only             its --paired partner: the launch alone, one wait (moves no bytes)
 * A block's first ops carry the previous block's history (the column `index` says where in its block
 * an op is). Bytes: the device buffer holds a non-zero pattern, checked outside the clock per block
 * and per op (wait_history.h's wh_run; exit status 1 on a mismatch).
 *
 * The histories, ops, rounds and rows are tools/wait_history.h's (shared with wait_history_omp.cpp, the
 * same through LLVM's libomptarget).
 * Build: nvcc -O2 -o wait_history tools/wait_history.cu
 * Usage: wait_history MODE PROCESS SEED ROUNDS [BLOCK [HISTORIES]]   MODE: blocking (CU_CTX_SCHED_BLOCKING_SYNC), auto
 *        (CUDA's default), spin, yield, each with _reg (blocking_reg): the host memory an aligned_alloc
 *        registered with cudaHostRegister, as an application's array under app_pinned, instead of
 *        cudaMallocHost's; PROCESS: a label written in every row
 * stderr: the host buffer's physical page runs (wait_history.h's wh_page_runs)
 * Output (stdout): mode,process,round,history,op,index,ns,cpu_before,cpu_after (history as named, us appended:
 *        busy50us; the CPUs the thread was on just before the op and right after its wait)
 */
#include <cuda_runtime.h>

#include "wait_history.h"

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "wait_history: %s: %s\n", #call, cudaGetErrorString(e_));            \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)

__global__ void delay_kernel(long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while ((long long)(t - t0) < ns);
}

static cudaStream_t stream;
static unsigned char *dev, *host, *pattern, *dev_pos, *host_pos;

static void kernel_waited(long long ns) {
    delay_kernel<<<1, 1, 0, stream>>>(ns);
    CHECK(cudaGetLastError());
    CHECK(cudaStreamSynchronize(stream));
}

static int64_t timed_op(int o) {
    int64_t t0 = wh_now_ns();
    if (o == WH_O_REGION) cudaMemcpyAsync(dev_pos, host_pos, WH_POS_NBYTES, cudaMemcpyHostToDevice, stream);
    if (o == WH_O_K240K) delay_kernel<<<1, 1, 0, stream>>>(WH_K10_NS);
    if (o == WH_O_REGION || o == WH_O_RKERNEL) delay_kernel<<<1, 1, 0, stream>>>(0);   /* a launch, no spin */
    if (wh_op_nbytes[o]) cudaMemcpyAsync(host, dev, wh_op_nbytes[o], cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    return wh_now_ns() - t0;
}

static unsigned char *dest(int o) {
    (void)o;
    CHECK(cudaGetLastError());   /* once per block, outside the clock */
    return host;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: wait_history blocking|auto|spin|yield[_reg] PROCESS SEED ROUNDS [BLOCK [HISTORIES]]\n");
        return 2;
    }
    const char *mode = argv[1], *process = argv[2];
    int rounds = atoi(argv[4]), block = argc > 5 ? atoi(argv[5]) : 16;
    char wait[16] = "";   /* the mode less a _reg suffix: host memory malloc'ed and registered */
    const size_t len = strlen(mode);
    const int registered = len > 4 && !strcmp(mode + len - 4, "_reg");
    snprintf(wait, sizeof wait, "%.*s", (int)(registered ? len - 4 : len), mode);
    unsigned flags = !strcmp(wait, "blocking") ? cudaDeviceScheduleBlockingSync
                   : !strcmp(wait, "spin")     ? cudaDeviceScheduleSpin
                   : !strcmp(wait, "yield")    ? cudaDeviceScheduleYield
                   : !strcmp(wait, "auto")     ? cudaDeviceScheduleAuto : 99u;
    if (flags == 99u || rounds < 1 || block < 1 || !wh_parse_histories(argc > 6 ? argv[6] : WH_DEFAULT_HISTORIES)) {
        fprintf(stderr, "wait_history: bad arguments\n");
        return 2;
    }
    CHECK(cudaSetDeviceFlags(flags));   /* before the context exists: it sets the primary context's wait */
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(0));
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));   /* as the plugin's streams */
    CHECK(cudaMalloc((void **)&dev, WH_MAX_NBYTES));
    if (registered) {   /* as an application's own array under app_pinned (cuMemHostRegister) */
        host = (unsigned char *)aligned_alloc(4096, WH_MAX_NBYTES);
        if (!host) exit(2);
        memset(host, 0, WH_MAX_NBYTES);
        CHECK(cudaHostRegister(host, WH_MAX_NBYTES, cudaHostRegisterDefault));
    } else {
        CHECK(cudaMallocHost((void **)&host, WH_MAX_NBYTES));
    }
    wh_page_runs("wait_history", process, registered ? "registered" : "mallochost", host, WH_MAX_NBYTES);
    if (registered) {   /* the region's positions, in the same kind of host memory */
        host_pos = (unsigned char *)aligned_alloc(4096, 4096);
        if (!host_pos) exit(2);
        CHECK(cudaHostRegister(host_pos, 4096, cudaHostRegisterDefault));
    } else {
        CHECK(cudaMallocHost((void **)&host_pos, 4096));
    }
    memset(host_pos, 3, WH_POS_NBYTES);
    CHECK(cudaMalloc((void **)&dev_pos, WH_POS_NBYTES));
    pattern = (unsigned char *)malloc(WH_MAX_NBYTES);
    for (size_t i = 0; i < WH_MAX_NBYTES; i++) pattern[i] = (unsigned char)(i * 7 + 1) | 1;   /* never zero */
    CHECK(cudaMemcpy(dev, pattern, WH_MAX_NBYTES, cudaMemcpyHostToDevice));
    unsigned got_flags = 0;
    CHECK(cudaGetDeviceFlags(&got_flags));
    fprintf(stderr, "wait_history: process %s mode %s device flags 0x%x\n", process, mode, got_flags);
    wh_hooks hk = {kernel_waited, timed_op, dest};
    return wh_run(&hk, pattern, mode, process, strtoull(argv[3], NULL, 10), rounds, block) ? 1 : 0;
}
