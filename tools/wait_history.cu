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
 * A block's first ops carry the previous block's history (the column `index` says where in its block
 * an op is). Bytes: the device buffer holds a non-zero pattern; each block's destination is zeroed
 * before it and compared after it, outside the clock (exit status 1 on a mismatch).
 *
 * Build: nvcc -O2 -o wait_history tools/wait_history.cu
 * Usage: wait_history MODE PROCESS SEED ROUNDS [BLOCK [HISTORIES]]   MODE: blocking (CU_CTX_SCHED_BLOCKING_SYNC), auto
 *        (CUDA's default), spin, yield; PROCESS: a label written in every row
 * Output (stdout): mode,process,round,history,op,index,ns (history as named, us appended: busy50us)
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t e_ = (call);                                                                 \
        if (e_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "wait_history: %s: %s\n", #call, cudaGetErrorString(e_));            \
            exit(2);                                                                             \
        }                                                                                        \
    } while (0)

static int64_t now_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000LL + t.tv_nsec;
}

__global__ void delay_kernel(long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while ((long long)(t - t0) < ns);
}

enum { H_NONE, H_KERN, H_SLEEP, H_BUSY };
#define MAX_HIST 32
static int n_hist, hist_kind[MAX_HIST];
static long long hist_ns[MAX_HIST];
static char hist_name[MAX_HIST][24];

/* the histories of a comma list (none, kernN, sleepN, busyN; N in us); 0 on a bad list */
static int parse_histories(const char *list) {
    static const char *kinds[] = {"none", "kern", "sleep", "busy"};
    char buf[512];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (n_hist == MAX_HIST) return 0;
        int k = -1;
        for (int i = 0; i < 4; i++)
            if (!strncmp(tok, kinds[i], strlen(kinds[i]))) k = i;
        if (k < 0) return 0;
        char *end;
        long long us = k == H_NONE ? 0 : strtoll(tok + strlen(kinds[k]), &end, 10);
        if (k == H_NONE ? strcmp(tok, "none") != 0 : (*end != '\0' || us < 1 || us > 1000000)) return 0;
        hist_kind[n_hist] = k;
        hist_ns[n_hist] = us * 1000;
        snprintf(hist_name[n_hist], sizeof hist_name[0], k == H_NONE ? "%s" : "%sus", tok);
        n_hist++;
    }
    return n_hist > 0;
}
enum { O_4B, O_240K, O_1M, O_K240K, N_OP };
static const char *op_name[N_OP] = {"d2h_4B", "d2h_240KiB", "d2h_1MiB", "k10_d2h_240KiB"};
static const size_t op_nbytes[N_OP] = {4, 240 << 10, 1 << 20, 240 << 10};
#define MAX_NBYTES ((size_t)1 << 20)

static cudaStream_t stream;
static unsigned char *dev, *host;

static void history(int h) {
    switch (hist_kind[h]) {
    case H_KERN:
        delay_kernel<<<1, 1, 0, stream>>>(hist_ns[h]);
        CHECK(cudaGetLastError());
        CHECK(cudaStreamSynchronize(stream));
        break;
    case H_SLEEP: {
        struct timespec t = {(time_t)(hist_ns[h] / 1000000000LL), (long)(hist_ns[h] % 1000000000LL)};
        nanosleep(&t, NULL);
        break;
    }
    case H_BUSY: {
        int64_t end = now_ns() + hist_ns[h];
        while (now_ns() < end) {
        }
        break;
    }
    default:
        break;
    }
}

static int64_t timed_op(int o) {
    int64_t t0 = now_ns();
    if (o == O_K240K) delay_kernel<<<1, 1, 0, stream>>>(10000);
    cudaMemcpyAsync(host, dev, op_nbytes[o], cudaMemcpyDeviceToHost, stream);
    cudaStreamSynchronize(stream);
    int64_t t1 = now_ns();
    return t1 - t0;
}

static uint64_t rng;
static uint64_t next_rand(void) {   /* xorshift64 */
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

int main(int argc, char **argv) {
    if (argc < 5) {
        fprintf(stderr, "usage: wait_history blocking|auto|spin|yield PROCESS SEED ROUNDS [BLOCK [HISTORIES]]\n");
        return 2;
    }
    const char *mode = argv[1], *process = argv[2];
    rng = strtoull(argv[3], NULL, 10) * 2654435761ULL + 88172645463325252ULL;
    int rounds = atoi(argv[4]), block = argc > 5 ? atoi(argv[5]) : 16;
    unsigned flags = !strcmp(mode, "blocking") ? cudaDeviceScheduleBlockingSync
                   : !strcmp(mode, "spin")     ? cudaDeviceScheduleSpin
                   : !strcmp(mode, "yield")    ? cudaDeviceScheduleYield
                   : !strcmp(mode, "auto")     ? cudaDeviceScheduleAuto : 99u;
    const char *histories = argc > 6 ? argv[6] : "none,kern20,kern200,kern2000,sleep2000,busy2000";
    if (flags == 99u || rounds < 1 || block < 1 || !parse_histories(histories)) {
        fprintf(stderr, "wait_history: bad arguments\n");
        return 2;
    }
    CHECK(cudaSetDeviceFlags(flags));   /* before the context exists: it sets the primary context's wait */
    CHECK(cudaSetDevice(0));
    CHECK(cudaFree(0));
    CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));   /* as the plugin's streams */
    CHECK(cudaMalloc((void **)&dev, MAX_NBYTES));
    CHECK(cudaMallocHost((void **)&host, MAX_NBYTES));
    unsigned char *pattern = (unsigned char *)malloc(MAX_NBYTES);
    for (size_t i = 0; i < MAX_NBYTES; i++) pattern[i] = (unsigned char)(i * 7 + 1) | 1;   /* never zero */
    CHECK(cudaMemcpy(dev, pattern, MAX_NBYTES, cudaMemcpyHostToDevice));
    unsigned got_flags = 0;
    CHECK(cudaGetDeviceFlags(&got_flags));
    fprintf(stderr, "wait_history: process %s mode %s device flags 0x%x\n", process, mode, got_flags);

    /* warm-up: every op and history once */
    for (int h = 0; h < n_hist; h++)
        for (int o = 0; o < N_OP; o++) { history(h); timed_op(o); }

    int npairs = n_hist * N_OP;
    int *order = (int *)malloc((size_t)rounds * npairs * sizeof(int));   /* kept, rows written at the end */
    int64_t *ns = (int64_t *)malloc((size_t)rounds * npairs * block * sizeof(int64_t));
    int bad = 0;
    for (int r = 0; r < rounds; r++) {
        int *ord = order + (size_t)r * npairs;
        for (int i = 0; i < npairs; i++) ord[i] = i;
        for (int i = npairs - 1; i > 0; i--) {   /* Fisher-Yates */
            int j = (int)(next_rand() % (uint64_t)(i + 1)), t = ord[i];
            ord[i] = ord[j];
            ord[j] = t;
        }
        for (int k = 0; k < npairs; k++) {
            int h = ord[k] / N_OP, o = ord[k] % N_OP;
            int64_t *out = ns + ((size_t)r * npairs + k) * block;
            memset(host, 0, op_nbytes[o]);
            for (int i = 0; i < block; i++) {
                history(h);
                out[i] = timed_op(o);
            }
            CHECK(cudaGetLastError());
            if (memcmp(host, pattern, op_nbytes[o]) != 0) bad++;
        }
    }
    printf("mode,process,round,history,op,index,ns\n");
    for (int r = 0; r < rounds; r++)
        for (int k = 0; k < npairs; k++) {
            int h = order[(size_t)r * npairs + k] / N_OP, o = order[(size_t)r * npairs + k] % N_OP;
            for (int i = 0; i < block; i++)
                printf("%s,%s,%d,%s,%s,%d,%lld\n", mode, process, r, hist_name[h], op_name[o], i,
                       (long long)ns[((size_t)r * npairs + k) * block + i]);
        }
    if (bad) fprintf(stderr, "wait_history: %d blocks' bytes differ from the device's\n", bad);
    return bad ? 1 : 0;
}
