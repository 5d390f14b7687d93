// wait_history_omp: tools/wait_history.cu's question (issue 33 item 3, README "Wait states"), no verdict,
// asked of LLVM's libomptarget instead of plain CUDA. Plain CUDA in blocking-sync mode gave every process
// the same wait per history (on the H100 of 2026-12-07: a 240 KiB D2H 21.0-23.1 us back to back in six
// processes), while the region and advise's probe, through libomptarget, drew a soon or a late wait
// per process. Here the same ops and histories (tools/wait_history.h) are made by the runtime:
//   op:       `target update from(a[0:n])` of a mapped array (4 B, 240 KiB, 1 MiB), and a target region
//             that spins 10 us with map(always, from: a[0:240 KiB]) (a region's shape: one wait for both)
//             and region.cpp's invocation (map(always, to:) 384 B positions, map(always, from:) the 240 KiB
//             out; a one-line body where region.cpp runs a kernel of a few us) with its --paired partner
//             (the same maps, both arrays present: nothing moves)
//   kernN:    a target region spinning N us (the runtime waits on it)
//   sleepN, busyN, none: as in wait_history.cu
// --variant app_pinned registers the arrays (cuMemHostRegister, as region.cpp's app_pinned) before
// they are mapped; plain leaves them pageable. Bytes: the device copies hold a non-zero pattern, checked
// outside the clock per block and per op (tools/wait_history.h's wh_run).
// Build: python3 tools/wait_history.py build (the offload bundle's compiler and flags)
// Usage: wait_history_omp --variant plain|app_pinned PROCESS SEED ROUNDS [BLOCK [HISTORIES]] [--allow-host]
// stdout: mode (omp_<variant>),process,round,history,op,index,ns,cpu_before,cpu_after
// stderr: the 240 KiB and 1 MiB buffers' physical page runs (wait_history.h's wh_page_runs)
// Exit status: 0 ok, 1 wrong bytes, 2 usage, 3 not on the device, 5 registration failed.
#include "../lib/pinpath/native/offload/common.h"
#include "wait_history.h"

#include <cstring>
#include <string>
#include <vector>

namespace {
using namespace pinpath;

unsigned char *arr[4];                     // the 4 B, 240 KiB and 1 MiB arrays and the positions, mapped once
const int kArrayOf[WH_N_OP] = {0, 1, 2, 1, 1, 1};
std::vector<unsigned char> want;           // the pattern the device copies hold

#pragma omp declare target
void spin_ns(long long ns) {
  const double end = omp_get_wtime() + static_cast<double>(ns) * 1e-9;
  while (omp_get_wtime() < end) {
  }
}
#pragma omp end declare target

void kernel_waited(long long ns) {
#pragma omp target
  { spin_ns(ns); }
}

int64_t timed_op(int o) {
  unsigned char *a = arr[kArrayOf[o]];
  const long n = static_cast<long>(wh_op_nbytes[o]);
  const int64_t t0 = wh_now_ns();
  unsigned char *p = arr[3];
  const long m = WH_POS_NBYTES, r = static_cast<long>(wh_op_nbytes[WH_O_REGION]);
  if (o == WH_O_K240K) {
#pragma omp target map(always, from : a[0:n])
    {
      if (a[0] != 0) spin_ns(WH_K10_NS);   // the region's array in its body, unchanged
      else spin_ns(WH_K10_NS + 1);
    }
  } else if (o == WH_O_REGION) {   // region.cpp's invocation: map(always, to: pos) map(always, from: out)
#pragma omp target map(always, to : p[0:m]) map(always, from : a[0:r])
    {
      if (p[0] == 0) a[0] = 0;   // both arrays in the body; the pattern is never zero, so out is unchanged
    }
  } else if (o == WH_O_RKERNEL) {   // its --paired partner: both present, nothing moves
#pragma omp target map(to : p[0:m]) map(from : a[0:r])
    {
      if (p[0] == 0) a[0] = 0;
    }
  } else {
#pragma omp target update from(a[0:n])
  }
  return wh_now_ns() - t0;
}

unsigned char *dest(int o) { return arr[kArrayOf[o]]; }
}  // namespace

int main(int argc, char **argv) {
  program = "wait_history_omp";
  std::vector<std::string> pos;
  CommonOptions c;
  for_each_option(argc, argv, c, [&](const std::string &a, auto &) {
    if (a.rfind("--", 0) == 0) return false;
    pos.push_back(a);
    return true;
  });
  if (pos.size() < 3 || pos.size() > 5) die(2, "usage: --variant V PROCESS SEED ROUNDS [BLOCK [HISTORIES]]");
  const int rounds = std::atoi(pos[2].c_str()), block = pos.size() > 3 ? std::atoi(pos[3].c_str()) : 16;
  if (rounds < 1 || block < 1 || !wh_parse_histories(pos.size() > 4 ? pos[4].c_str() : WH_DEFAULT_HISTORIES))
    die(2, "bad arguments");
  const bool device = on_device(c.allow_host);
  want.resize(WH_MAX_NBYTES);
  for (size_t i = 0; i < WH_MAX_NBYTES; i++) want[i] = static_cast<unsigned char>(i * 7 + 1) | 1;   // never zero
  const size_t nbytes[4] = {wh_op_nbytes[WH_O_4B], wh_op_nbytes[WH_O_240K], wh_op_nbytes[WH_O_1M], WH_POS_NBYTES};
  Pinner pin;
  if (c.variant == "app_pinned") pin.open();
  for (int k = 0; k < 4; ++k) {
    arr[k] = static_cast<unsigned char *>(page_aligned(nbytes[k]));
    std::memcpy(arr[k], want.data(), nbytes[k]);
    if (c.variant == "app_pinned" && pin.lock(arr[k], nbytes[k]) != 0) die(5, "app_pinned: " + pin.how + " failed");
  }
  unsigned char *a0 = arr[0], *a1 = arr[1], *a2 = arr[2], *a3 = arr[3];
  const long n0 = nbytes[0], n1 = nbytes[1], n2 = nbytes[2], n3 = nbytes[3];
#pragma omp target enter data map(to : a0[0:n0], a1[0:n1], a2[0:n2], a3[0:n3])
  std::fprintf(stderr, "wait_history_omp: process %s variant %s on_device %d\n", pos[0].c_str(), c.variant.c_str(),
               device ? 1 : 0);
  for (int k = 1; k < 3; ++k)   // after the map: each buffer's physical page runs (wh_page_runs)
    wh_page_runs("wait_history_omp", pos[0].c_str(), k == 1 ? "240KiB" : "1MiB", arr[k], nbytes[k]);
  const std::string mode = "omp_" + c.variant;
  wh_hooks hk = {kernel_waited, timed_op, dest};
  const int bad = wh_run(&hk, want.data(), mode.c_str(), pos[0].c_str(), std::strtoull(pos[1].c_str(), nullptr, 10),
                         rounds, block);
#pragma omp target exit data map(delete : a0[0:n0], a1[0:n1], a2[0:n2], a3[0:n3])
  return bad ? 1 : 0;
}
