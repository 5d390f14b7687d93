// C15 as meant: does LLVM's offload runtime overlap independent target tasks? N regions, each with
// its own arrays (map(to: in_c[0:n]) map(from: out_c[0:n]) and a small kernel out = 3 * in + c), are
// run two ways, in alternating rounds:
//   nowait: all N as `target nowait` tasks, then one `taskwait` (the runtime may overlap them: on
//           CUDA each task in flight has its own stream from the plugin's pool);
//   wait:   the same N `target nowait` regions, each followed by its own `taskwait` (sequential).
// Each round's wall time runs from before the first region to after the last wait (steady clock);
// the outputs are poisoned (0xA5) before and checked after each round, outside the timed part.
//
// Usage: overlap [--variant plain|app_pinned] [--chains N (8)] [--nbytes B (16 MiB)] [--rounds R (5)]
//                [--markers] [--allow-host]
// app_pinned: the application registers every array first (cuMemHostRegister, hipHostRegister,
// mlock), so the runtime's copies are from pinned memory; plain: the arrays as malloc'd (pageable).
// --markers writes "pinpath-overlap: mode=M round=R" lines to stderr before each round (outside the
// timed part), so the runtime's LIBOMPTARGET_INFO lines and pinpath's CUDA call log (stderr) can be
// assigned to rounds.
// stdout: '#'-lines of facts (key=value), then CSV: variant,mode,round,chains,nbytes,ns,verified.
// Exit status: 0 ok, 2 usage, 3 not on the device, 4 wrong bytes, 5 registration failed.

#include "common.h"

#include <cstring>
#include <string>
#include <vector>

namespace {
using namespace pinpath;

struct Options : CommonOptions {
  int chains = 8;
  long nbytes = 16L << 20;
  int rounds = 5;
};

Options parse(int argc, char **argv) {
  Options o;
  for_each_option(argc, argv, o, [&](const std::string &a, auto &value) {
    return option(a, "--chains", value, o.chains) || option(a, "--nbytes", value, o.nbytes) ||
           option(a, "--rounds", value, o.rounds);
  });
  if (o.chains < 1 || o.chains > 1024) die(2, "--chains must be 1 to 1024");
  if (o.nbytes < 4 || o.nbytes % 4) die(2, "--nbytes must be a positive multiple of 4");
  if (o.rounds < 1) die(2, "--rounds must be >= 1");
  return o;
}

// one region: chain c's input to the device, out = 3 * in + c there, the output back. A host
// execution writes 0 instead (unless allowed), so the check fails loudly.
inline void region(const uint32_t *in, uint32_t *out, long n, uint32_t c, bool on_host_ok) {
#pragma omp target teams distribute parallel for nowait map(to : in[0:n]) map(from : out[0:n])
  for (long i = 0; i < n; ++i) out[i] = (omp_is_initial_device() && !on_host_ok) ? 0u : 3u * in[i] + c;
}

long first_mismatch(const uint32_t *in, const uint32_t *out, long n, uint32_t c) {
  for (long i = 0; i < n; ++i)
    if (out[i] != 3u * in[i] + c) return i;
  return -1;
}

}  // namespace

int main(int argc, char **argv) {
  pinpath::program = "overlap";
  const Options o = parse(argc, argv);
  const long n = o.nbytes / 4;
  std::vector<uint32_t *> ins(o.chains), outs(o.chains);
  for (int c = 0; c < o.chains; ++c) {
    ins[c] = static_cast<uint32_t *>(page_aligned(o.nbytes));
    outs[c] = static_cast<uint32_t *>(page_aligned(o.nbytes));
    for (long i = 0; i < n; ++i) ins[c][i] = static_cast<uint32_t>(i * 2654435761u + c);
    std::memset(outs[c], 0, o.nbytes);   // touched before anything is timed
  }
  const int devices = omp_get_num_devices();
  const bool initial = !on_device(o.allow_host);

  Pinner pin;
  int register_rc = 0;
  if (o.variant == "app_pinned") {
    pin.open();
    for (int c = 0; c < o.chains && register_rc == 0; ++c) {
      register_rc = pin.lock(ins[c], o.nbytes);
      if (register_rc == 0) register_rc = pin.lock(outs[c], o.nbytes);
    }
    if (register_rc != 0) die(5, "app_pinned: " + pin.how + " failed with " + std::to_string(register_rc));
  }
  std::printf("# offload_devices=%d on_device=%d vendor=%d variant=%s chains=%d nbytes=%ld rounds=%d register=%s\n",
              devices, initial ? 0 : 1, PINPATH_VENDOR, o.variant.c_str(), o.chains, o.nbytes, o.rounds,
              o.variant == "app_pinned" ? pin.how.c_str() : "none");
  std::printf("variant,mode,round,chains,nbytes,ns,verified\n");

  int wrong = 0;
  // one untimed round of each mode first (the device image, the plugin's streams and buffers), then
  // the timed rounds, the modes alternating so drift spreads over both
  for (int r = -1; r < o.rounds; ++r) {
    for (const char *mode : {(r % 2 == 0) ? "nowait" : "wait", (r % 2 == 0) ? "wait" : "nowait"}) {
      const bool nowait = std::strcmp(mode, "nowait") == 0;
      for (int c = 0; c < o.chains; ++c) std::memset(outs[c], 0xA5, o.nbytes);
      if (o.markers) std::fprintf(stderr, "pinpath-overlap: mode=%s round=%d\n", mode, r);
      const int64_t t0 = now_ns();
      for (int c = 0; c < o.chains; ++c) {
        region(ins[c], outs[c], n, static_cast<uint32_t>(c), o.allow_host);
        if (!nowait) {
#pragma omp taskwait
        }
      }
#pragma omp taskwait
      const int64_t ns = now_ns() - t0;
      if (o.markers) std::fprintf(stderr, "pinpath-overlap: mode=%s round=%d end\n", mode, r);
      bool ok = true;
      for (int c = 0; c < o.chains && ok; ++c) {
        const long at = first_mismatch(ins[c], outs[c], n, static_cast<uint32_t>(c));
        if (at >= 0) {
          std::fprintf(stderr, "overlap: %s round %d chain %d: element %ld differs\n", mode, r, c, at);
          ok = false;
        }
      }
      wrong += !ok;
      if (r >= 0)
        std::printf("%s,%s,%d,%d,%ld,%lld,%s\n", o.variant.c_str(), mode, r, o.chains, o.nbytes,
                    static_cast<long long>(ns), ok ? "true" : "false");
    }
  }
  for (int c = 0; c < o.chains; ++c) {
    if (o.variant == "app_pinned") {
      pin.unlock(ins[c], o.nbytes);
      pin.unlock(outs[c], o.nbytes);
    }
    std::free(ins[c]);
    std::free(outs[c]);
  }
  std::printf("# wrong=%d\n", wrong);
  return wrong ? 4 : 0;
}
