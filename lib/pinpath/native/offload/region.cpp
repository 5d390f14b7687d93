// The miniqmc offload region of aomp#160, compiled with OpenMP offload and run through LLVM's
// libomptarget: pinpath's ground truth for experiments/replica.py.
//
// einspline_spo_omp<T>::multi_evaluate_vgh (miniqmc 46073436): the positions (24 nw bytes) and the
// value/gradient/hessian output (15,360 nw bytes) are mapped once (`target enter data`, as miniqmc's
// OMPallocator does); every invocation is one `target teams` region with map(always, to: pos) and
// map(always, from: out): one H2D, one kernel, one D2H. 384 invocations per Monte Carlo step.
//
// The kernel writes out[w][c][s] = pos[3w + c%3] * (s+1) + c (pinpath.kernels.replica_expected),
// so every D2H can be checked byte for byte against the positions sent.
//
// Usage: region --nw N [--variant plain|app_pinned] [--steps S (5)] [--invocations I (384)]
//               [--verify all|first|none] [--seed K] [--paired] [--markers] [--allow-host]
// --verify: after its timing, compare the D2H of every invocation (all, the default), of the first
// invocation of each step (first), or of none with the formula; the output is poisoned (0xA5)
// before each checked invocation. --allow-host: accept a host execution (tests of a build
// without offload); otherwise a region that runs on the host fails (probe region, NaN output).
// --paired: each invocation is followed (or, every other one, preceded) by the same region with plain
// map(to/from) clauses, which move nothing because the arrays are present: its time is kernel_ns, and
// transfer_ns = ns - kernel_ns is what the two copies cost through the runtime (pinpath advise's
// real figure for this region).
// stdout: '#'-lines of facts (key=value), then CSV: variant,nw,step,invocation,ns,verified (with
// --paired also kernel_ns,transfer_ns).
// --markers writes "pinpath-region: ..." lines to stderr between invocations (outside the timed
// part), so the runtime's LIBOMPTARGET_INFO lines, also on stderr, can be assigned to invocations.
// Exit status: 0 ok, 2 usage, 3 not on the device, 4 wrong bytes, 5 registration failed.

#include "common.h"

#include <chrono>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#pragma STDC FP_CONTRACT OFF  // no fused multiply-add: the host check must see the same rounding

namespace {
using namespace pinpath;

constexpr int kVghDim = 10;              // value, 3 gradient, 6 hessian components
constexpr int kNsplines = 192;           // getAlignedSize<double>(192) for the NiO 32-atom cell
constexpr int kInvocationsPerStep = 384; // one region per electron move: 32 atoms x 12 electrons

struct Options : CommonOptions {
  long nw = 0;
  int steps = 5;
  int invocations = kInvocationsPerStep;
  std::string verify = "all";
  uint64_t seed = 1;
  bool paired = false;
};

Options parse(int argc, char **argv) {
  Options o;
  for_each_option(argc, argv, o, [&](const std::string &a, auto &value) {
    return option(a, "--nw", value, o.nw) || option(a, "--steps", value, o.steps) ||
           option(a, "--invocations", value, o.invocations) || option(a, "--verify", value, o.verify) ||
           option(a, "--seed", value, o.seed) || (a == "--paired" && (o.paired = true));
  });
  if (o.nw < 1 || o.nw > 1 << 20) die(2, "--nw must be a walker count >= 1");
  if (o.steps < 1 || o.invocations < 1) die(2, "--steps and --invocations must be >= 1");
  if (o.verify != "all" && o.verify != "first" && o.verify != "none") die(2, "--verify is all, first or none");
  return o;
}

// the positions: uniform in [-1, 1], never zero, so every output element depends on the H2D
void fill_positions(double *pos, long n, std::mt19937_64 &rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (long i = 0; i < n; ++i) {
    double v = 0.0;
    while (v == 0.0) v = u(rng);
    pos[i] = v;
  }
}

// first wrong element, or -1: the same expression as the kernel and pinpath.kernels.replica_expected
long first_mismatch(const double *pos, const double *out, long nw) {
  for (long w = 0; w < nw; ++w)
    for (int c = 0; c < kVghDim; ++c)
      for (int s = 0; s < kNsplines; ++s) {
        const double want = pos[3 * w + c % 3] * static_cast<double>(s + 1) + static_cast<double>(c);
        const long i = (w * kVghDim + c) * kNsplines + s;
        if (std::memcmp(&want, &out[i], sizeof(double)) != 0) return i;
      }
  return -1;
}

}  // namespace

// one invocation of the region under the map clauses MAPS: the same kernel whatever they are. A host
// execution writes NaN, so the byte check then fails loudly (unless --allow-host).
#define PINPATH_REGION(MAPS)                                                                          \
  PINPATH_PRAGMA(omp target teams distribute num_teams(nw) thread_limit(nsplines) MAPS)              \
  for (long w = 0; w < nw; ++w) {                                                                     \
    const double poison = (omp_is_initial_device() && !on_host_ok) ? NAN : 0.0;                       \
    PINPATH_PRAGMA(omp parallel for)                                                                  \
    for (int s = 0; s < nsplines; ++s)                                                                \
      for (int c = 0; c < kVghDim; ++c)                                                               \
        out[(w * kVghDim + c) * nsplines + s] =                                                       \
            pos[3 * w + c % 3] * static_cast<double>(s + 1) + static_cast<double>(c) + poison;        \
  }

int main(int argc, char **argv) {
  pinpath::program = "region";
  const Options o = parse(argc, argv);
  const long nw = o.nw;
  const long pos_len = 3 * nw, out_len = kVghDim * nw * kNsplines;
  const size_t pos_nbytes = sizeof(double) * pos_len, out_nbytes = sizeof(double) * out_len;
  double *pos = static_cast<double *>(page_aligned(pos_nbytes));
  double *out = static_cast<double *>(page_aligned(out_nbytes));
  std::mt19937_64 rng(o.seed);
  fill_positions(pos, pos_len, rng);
  std::memset(out, 0, out_nbytes);

  const int devices = omp_get_num_devices();
  const bool initial = !on_device(o.allow_host);

  Pinner pin;
  int64_t register_ns = 0, unregister_ns = 0;
  int register_rc = 0, unregister_rc = 0;
  if (o.variant == "app_pinned") {
    pin.open();
    const int64_t t0 = now_ns();
    register_rc = pin.lock(pos, pos_nbytes);
    if (register_rc == 0) register_rc = pin.lock(out, out_nbytes);
    register_ns = now_ns() - t0;
    if (register_rc != 0) die(5, "app_pinned: " + pin.how + " failed with " + std::to_string(register_rc));
  }

  // mapped once, as miniqmc's OMPallocator does: enter data map(alloc), exit data map(delete)
  int64_t t0 = now_ns();
#pragma omp target enter data map(alloc : pos[0:pos_len], out[0:out_len])
  const int64_t enter_ns = now_ns() - t0;

  std::printf("# offload_devices=%d on_device=%d vendor=%d variant=%s nw=%ld steps=%d invocations=%d "
              "verify=%s pos_nbytes=%zu out_nbytes=%zu register=%s register_rc=%d register_ns=%lld "
              "enter_ns=%lld\n",
              devices, initial ? 0 : 1, PINPATH_VENDOR, o.variant.c_str(), nw, o.steps, o.invocations,
              o.verify.c_str(), pos_nbytes, out_nbytes, o.variant == "app_pinned" ? pin.how.c_str() : "none",
              register_rc, static_cast<long long>(register_ns), static_cast<long long>(enter_ns));

  struct Row { int step, inv; int64_t ns, kernel_ns; int verified; };   // verified: 1 yes, 0 wrong, -1 not checked
  std::vector<Row> rows;
  rows.reserve(static_cast<size_t>(o.steps) * o.invocations);
  long wrong = 0;
  const int on_host_ok = o.allow_host ? 1 : 0;
  const int nsplines = kNsplines;
  for (int step = 0; step < o.steps; ++step) {
    for (int inv = 0; inv < o.invocations; ++inv) {
      const bool check = o.verify == "all" || (o.verify == "first" && inv == 0);
      fill_positions(pos, pos_len, rng);
      if (check) std::memset(out, 0xA5, out_nbytes);   // a D2H that did not happen cannot pass
      if (o.markers) std::fprintf(stderr, "pinpath-region: invocation step=%d invocation=%d\n", step, inv);
      // --paired: the present-only region before this invocation every other time, after it otherwise
      const bool kernel_first = o.paired && inv % 2 == 1;
      int64_t kernel_ns = 0;
      if (kernel_first) {
        const int64_t k0 = now_ns();
        PINPATH_REGION(map(to : pos[0:pos_len]) map(from : out[0:out_len]))
        kernel_ns = now_ns() - k0;
      }
      const int64_t start = now_ns();
      PINPATH_REGION(map(always, to : pos[0:pos_len]) map(always, from : out[0:out_len]))
      const int64_t ns = now_ns() - start;
      if (o.paired && !kernel_first) {
        const int64_t k0 = now_ns();
        PINPATH_REGION(map(to : pos[0:pos_len]) map(from : out[0:out_len]))
        kernel_ns = now_ns() - k0;
      }
      int verified = -1;
      if (check) {
        verified = first_mismatch(pos, out, nw) < 0 ? 1 : 0;
        wrong += verified == 0;
      }
      rows.push_back({step, inv, ns, kernel_ns, verified});
    }
  }

  if (o.markers) std::fprintf(stderr, "pinpath-region: teardown\n");
  t0 = now_ns();
#pragma omp target exit data map(delete : pos[0:pos_len], out[0:out_len])
  const int64_t exit_ns = now_ns() - t0;
  if (o.variant == "app_pinned") {
    const int64_t u0 = now_ns();
    unregister_rc = pin.unlock(pos, pos_nbytes);
    const int rc2 = pin.unlock(out, out_nbytes);
    if (unregister_rc == 0) unregister_rc = rc2;
    unregister_ns = now_ns() - u0;
  }

  std::printf("# exit_ns=%lld unregister_rc=%d unregister_ns=%lld wrong=%ld\n", static_cast<long long>(exit_ns),
              unregister_rc, static_cast<long long>(unregister_ns), wrong);
  std::printf("variant,nw,step,invocation,ns,verified%s\n", o.paired ? ",kernel_ns,transfer_ns" : "");
  for (const Row &r : rows) {
    std::printf("%s,%ld,%d,%d,%lld,%s", o.variant.c_str(), nw, r.step, r.inv, static_cast<long long>(r.ns),
                r.verified < 0 ? "" : (r.verified ? "true" : "false"));
    if (o.paired) std::printf(",%lld,%lld", static_cast<long long>(r.kernel_ns), static_cast<long long>(r.ns - r.kernel_ns));
    std::printf("\n");
  }
  std::fflush(stdout);
  std::free(pos);
  std::free(out);
  if (wrong) die(4, std::to_string(wrong) + " invocation(s) delivered bytes that differ from the kernel's formula");
  return 0;
}
