// A third offload application for `pinpath advise` (issue 33), unlike the region (two arrays mapped by
// a region's clauses) and the stencil (slices of one large grid kept on the device): many small arrays,
// one per particle species, mapped in and out every step with `target enter data` / `target exit
// data`, and a counter on the stack mapped with them. Its pattern: per step 2 (S + 1) copies of small
// sizes, each of its own host buffer, every buffer moved every step; one of them a local variable.
//
// Species i has an array of sizes[i % len] bytes of doubles. One step:
//   1. on the host: every value + 1 (the push a particle code does between steps)
//   2. target enter data map(to: hits) (a long on the stack), then map(to: a_i[0:n_i]) for each species
//   3. kernels: per species a_i = a_i * 0.5 + 1; one region counts the values into hits (present: no copy)
//   4. target exit data map(from: a_i[0:n_i]) for each species, then map(from: hits)
// The same steps run on the host afterwards; the arrays must be equal byte for byte, and hits the
// number of values in every step.
//
// Usage: species [--species 16] [--sizes 64,512,2048,8192] [--steps 200] [--variant plain|app_pinned]
//                [--markers] [--allow-host]
// app_pinned: every species' array is registered once before the first step (the counter is a local
// variable: no user registers that).
// stdout: '#'-lines of facts (key=value), then CSV: variant,species,step,ns,transfer_ns,hits.
// ns: the whole step; transfer_ns: its enter and exit data directives (the copies and the maps).
// --markers writes "pinpath-region: invocation step=S invocation=0" to stderr before each step and
// "pinpath-region: teardown" before the exit, as stencil does.
// Exit status: 0 ok, 2 usage, 3 not on the device, 4 wrong values, 5 registration failed.

#include "common.h"

#include <cstring>
#include <string>
#include <vector>

#pragma STDC FP_CONTRACT OFF  // no fused multiply-add: the host check must see the same rounding

namespace {
using namespace pinpath;

struct Options : CommonOptions {
  int species = 16, steps = 200;
  std::string sizes = "64,512,2048,8192";
  std::vector<long> nbytes;
};

Options parse(int argc, char **argv) {
  Options o;
  for_each_option(argc, argv, o, [&](const std::string &a, auto &value) {
    return option(a, "--species", value, o.species) || option(a, "--steps", value, o.steps) ||
           option(a, "--sizes", value, o.sizes);
  });
  if (o.species < 1 || o.species > 4096 || o.steps < 1) die(2, "--species must be 1..4096 and --steps >= 1");
  for (size_t at = 0; at <= o.sizes.size();) {   // a comma-separated list of sizes, multiples of 8
    const size_t comma = std::min(o.sizes.find(',', at), o.sizes.size());
    const std::string word = o.sizes.substr(at, comma - at);
    char *end = nullptr;
    const long n = std::strtol(word.c_str(), &end, 10);
    if (word.empty() || *end || n < 8 || n > (1L << 26) || n % 8) die(2, "--sizes takes multiples of 8 in 8..67108864, got " + word);
    o.nbytes.push_back(n);
    at = comma + 1;
  }
  return o;
}

void fill(double *a, long n, int species) {
  for (long j = 0; j < n; ++j) a[j] = 1.0 + static_cast<double>((j * 7 + species * 13) % 101) / 64.0;
}

}  // namespace

int main(int argc, char **argv) {
  pinpath::program = "species";
  const Options o = parse(argc, argv);
  const int S = o.species;
  std::vector<double *> a(static_cast<size_t>(S));
  std::vector<long> n(static_cast<size_t>(S));
  long values = 0;
  for (int i = 0; i < S; ++i) {
    n[i] = o.nbytes[static_cast<size_t>(i) % o.nbytes.size()] / 8;
    a[i] = static_cast<double *>(page_aligned(static_cast<size_t>(n[i]) * 8));
    fill(a[i], n[i], i);
    values += n[i];
  }
  const int devices = omp_get_num_devices();
  const bool initial = !on_device(o.allow_host);

  Pinner pin;
  int64_t register_ns = 0;
  if (o.variant == "app_pinned") {   // every species' array, once
    pin.open();
    const int64_t t0 = now_ns();
    for (int i = 0; i < S; ++i) {
      const int rc = pin.lock(a[i], static_cast<size_t>(n[i]) * 8);
      if (rc != 0) die(5, "app_pinned: " + pin.how + " failed with " + std::to_string(rc));
    }
    register_ns = now_ns() - t0;
  }
  std::printf("# offload_devices=%d on_device=%d vendor=%d variant=%s species=%d sizes=%s steps=%d values=%ld "
              "register=%s register_ns=%lld\n",
              devices, initial ? 0 : 1, PINPATH_VENDOR, o.variant.c_str(), S, o.sizes.c_str(), o.steps, values,
              o.variant == "app_pinned" ? pin.how.c_str() : "none", static_cast<long long>(register_ns));

  struct Row { int step; int64_t ns, transfer_ns; long hits; };
  std::vector<Row> rows;
  bool counted = true;
  for (int step = 0; step < o.steps; ++step) {
    if (o.markers) std::fprintf(stderr, "pinpath-region: invocation step=%d invocation=0\n", step);
    const int64_t start = now_ns();
    for (int i = 0; i < S; ++i)
      for (long j = 0; j < n[i]; ++j) a[i][j] += 1.0;
    long hits = 0;   // a local variable: on the stack
    int64_t u = now_ns();
#pragma omp target enter data map(to : hits)
    for (int i = 0; i < S; ++i) {
      double *p = a[i];
      const long m = n[i];
#pragma omp target enter data map(to : p[0:m])
    }
    int64_t moved = now_ns() - u;
    for (int i = 0; i < S; ++i) {
      double *p = a[i];
      const long m = n[i];
#pragma omp target teams distribute parallel for
      for (long j = 0; j < m; ++j) p[j] = p[j] * 0.5 + 1.0;
#pragma omp target map(tofrom : hits)
      { hits += m; }
    }
    u = now_ns();
    for (int i = 0; i < S; ++i) {
      double *p = a[i];
      const long m = n[i];
#pragma omp target exit data map(from : p[0:m])
    }
#pragma omp target exit data map(from : hits)
    moved += now_ns() - u;
    counted = counted && hits == values;
    rows.push_back({step, now_ns() - start, moved, hits});
  }
  if (o.markers) std::fprintf(stderr, "pinpath-region: teardown\n");
  if (o.variant == "app_pinned")
    for (int i = 0; i < S; ++i) pin.unlock(a[i], static_cast<size_t>(n[i]) * 8);

  // the same steps on the host, from the same start
  bool same = true;
  std::vector<double> want;
  for (int i = 0; i < S; ++i) {
    want.assign(static_cast<size_t>(n[i]), 0.0);
    fill(want.data(), n[i], i);
    for (int s = 0; s < o.steps; ++s)
      for (long j = 0; j < n[i]; ++j) want[j] = (want[j] + 1.0) * 0.5 + 1.0;
    same = same && std::memcmp(want.data(), a[i], static_cast<size_t>(n[i]) * 8) == 0;
  }
  const bool ok = same && counted;
  std::printf("# wrong=%d counted=%d\n", ok ? 0 : 1, counted ? 1 : 0);
  std::printf("variant,species,step,ns,transfer_ns,hits\n");
  for (const Row &r : rows)
    std::printf("%s,%d,%d,%lld,%lld,%ld\n", o.variant.c_str(), S, r.step, static_cast<long long>(r.ns),
                static_cast<long long>(r.transfer_ns), r.hits);
  std::fflush(stdout);
  for (double *p : a) std::free(p);
  if (!ok) die(4, same ? "the counter was not the number of values in every step"
                       : "the arrays after the device's steps differ from the host's");
  return 0;
}
