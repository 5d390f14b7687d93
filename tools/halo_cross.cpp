// A diagnostic of advise's runtime term (issue 33 item 3), no verdict. advise's probe (updates
// --layout, until 37103bc) timed the stencil's pageable 32 KiB halo updates 1.05-1.19x slower than
// the stencil does while its pinned ones matched; that probe surrounded every copy with the host's
// use of it (a write before each copy, the D2H destination included, and a read after each D2H);
// the stencil copies its two D2H back to back, then uses the rows, then copies its two H2D, then
// runs two kernels. Here the same four updates of one grid are timed one by one under three host
// uses, each right after the stencil's two kernels (as the stencil's copies come after the step
// before) or right after the case before (as the probe's come), all six cases in every round, in an
// order shuffled round by round (--seed), so that no case always follows the same one:
//   app    D2H top, D2H bottom; the rows copied to the ghost rows; H2D ghost top, H2D ghost bottom
//   probe  per D2H: write its destination, copy, read it; per H2D: write its source, copy (updates
//          --layout until 37103bc)
//   nopre  as probe without the write before each D2H (updates --layout from 37103bc)
// Usage: halo_cross [--variant plain|app_pinned] [--nx 4096] [--ny 512] [--rounds 200] [--seed 1]
// stdout: '#'-lines of facts, then CSV: variant,host_use,kernels,round,copy,direction,ns.
// Afterwards, outside the timing, a round trip of the grid checks that both directions move its bytes
// (where it fails: exit 4 and no rows).
// Exit status: 0 ok, 2 usage, 3 not on the device, 4 the round trip failed, 5 registration failed.
#include "../lib/pinpath/native/offload/common.h"
#include "../lib/pinpath/native/offload/stencil_step.h"
#include <algorithm>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {
using namespace pinpath;

struct Options : CommonOptions {
  long nx = 4096, ny = 512;
  int rounds = 200, seed = 1;
};

enum Use { kApp, kProbe, kNopre };
const char *const kUseName[] = {"app", "probe", "nopre"};

volatile double sink;
void host_writes(double *row, long nx, int round) {   // never zeros
  const double v = 1.0 + static_cast<double>(round & 127) / 128.0;
  for (long x = 0; x < nx; ++x) row[x] = v;
}
void host_reads(const double *row, long nx) {
  double s = 0.0;
  for (long x = 0; x < nx; x += 8) s += row[x];   // every cache line
  sink = s;
}

struct Row { int use, kernels, round, copy; bool h2d; int64_t ns; };

// (kernels) the stencil's two kernels, untimed, then one step's four updates under host use `use`
void step(double *g, double *gn, long nx, long ny, Use use, bool kernels, int round, std::vector<Row> &rows) {
  const long top = nx, bottom = (ny - 2) * nx, ghost_top = 0, ghost_bottom = (ny - 1) * nx;
  const long d2h_at[2] = {top, bottom}, h2d_at[2] = {ghost_top, ghost_bottom};
  if (kernels) jacobi_step(g, gn, nx, ny);
  int64_t ns[4];
  for (int k = 0; k < 2; ++k) {
    double *p = g + d2h_at[k];
    if (use == kProbe) host_writes(p, nx, round + 1);
    const int64_t t0 = now_ns();
#pragma omp target update from(p[0:nx])
    ns[k] = now_ns() - t0;
    if (use != kApp) host_reads(p, nx);
  }
  if (use == kApp) {   // the stencil's exchange: periodic in y
    std::memcpy(g + ghost_bottom, g + top, nx * sizeof(double));
    std::memcpy(g + ghost_top, g + bottom, nx * sizeof(double));
  }
  for (int k = 0; k < 2; ++k) {
    double *p = g + h2d_at[k];
    if (use != kApp) host_writes(p, nx, round);
    const int64_t t0 = now_ns();
#pragma omp target update to(p[0:nx])
    ns[2 + k] = now_ns() - t0;
  }
  if (round < 0) return;   // warm-up
  for (int k = 0; k < 4; ++k) rows.push_back({use, kernels ? 1 : 0, round, k, k >= 2, ns[k]});
}

}  // namespace

int main(int argc, char **argv) {
  pinpath::program = "halo_cross";
  Options o;
  for_each_option(argc, argv, o, [&](const std::string &a, auto &value) {
    return option(a, "--nx", value, o.nx) || option(a, "--ny", value, o.ny) || option(a, "--rounds", value, o.rounds) ||
           option(a, "--seed", value, o.seed);
  });
  if (o.nx < 16 || o.ny < 4 || o.nx > (1L << 16) || o.ny > (1L << 16)) die(2, "--nx must be 16..65536, --ny 4..65536");
  if (o.rounds < 1) die(2, "--rounds must be >= 1");
  const long nx = o.nx, ny = o.ny, n = nx * ny;
  const size_t nbytes = sizeof(double) * static_cast<size_t>(n);
  double *g = static_cast<double *>(page_aligned(nbytes));
  double *gn = static_cast<double *>(page_aligned(nbytes));
  for (long i = 0; i < n; ++i) g[i] = 1.0 + static_cast<double>(i % 1000) / 1000.0;   // never zeros
  const bool initial = !on_device(o.allow_host);
  Pinner pin;
  if (o.variant == "app_pinned") {   // the grid, as the stencil registers it
    pin.open();
    const int rc = pin.lock(g, nbytes);
    if (rc != 0) die(5, "app_pinned: " + pin.how + " failed with " + std::to_string(rc));
  }
#pragma omp target enter data map(to : g[0:n]) map(alloc : gn[0:n])
  std::printf("# on_device=%d vendor=%d variant=%s nx=%ld ny=%ld row_nbytes=%zu rounds=%d seed=%d register=%s\n",
              initial ? 0 : 1, PINPATH_VENDOR, o.variant.c_str(), nx, ny, nx * sizeof(double), o.rounds, o.seed,
              o.variant == "app_pinned" ? pin.how.c_str() : "none");
  std::vector<Row> rows;
  rows.reserve(static_cast<size_t>(o.rounds) * 24);
  std::mt19937 rng(static_cast<unsigned>(o.seed));
  int order[6] = {0, 1, 2, 3, 4, 5};   // case k: host use k / 2, kernels k % 2
  for (int r = -10; r < o.rounds; ++r) {   // rounds below 0 warm up
    std::shuffle(order, order + 6, rng);
    for (const int k : order) step(g, gn, nx, ny, static_cast<Use>(k / 2), k % 2 == 1, r, rows);
  }
  // the round trip, outside the timing: the grid to the device, the host's copy poisoned, back
  std::vector<double> want(static_cast<size_t>(n));
  for (long i = 0; i < n; ++i) want[static_cast<size_t>(i)] = g[i] = 2.0 + static_cast<double>(i % 997);
#pragma omp target update to(g[0:n])
  std::memset(g, 0xA5, nbytes);
#pragma omp target update from(g[0:n])
  const bool ok = initial || std::memcmp(want.data(), g, nbytes) == 0;
#pragma omp target exit data map(delete : g[0:n], gn[0:n])
  if (o.variant == "app_pinned") pin.unlock(g, nbytes);
  if (!ok) die(4, "the grid's round trip through the device did not bring its bytes back: no rows");
  std::printf("variant,host_use,kernels,round,copy,direction,ns\n");
  for (const Row &w : rows)
    std::printf("%s,%s,%d,%d,%d,%s,%lld\n", o.variant.c_str(), kUseName[w.use], w.kernels, w.round, w.copy,
                w.h2d ? "h2d" : "d2h", static_cast<long long>(w.ns));
  std::free(g);
  std::free(gn);
  return 0;
}
