// A second offload application for `pinpath advise` (issue 22): a 2-D Jacobi stencil that keeps its
// grid on the device, exchanges halos with `target update` every step and checkpoints the whole
// grid to the host now and then. Its transfer pattern is unlike the miniqmc region's: few large
// one-off copies (the grid in and out), many small row copies of the same host array every step,
// and a periodic whole-grid D2H.
//
// The grid is ny rows of nx doubles. Rows 0 and ny-1 are ghost rows (periodic in y: row 0 mirrors
// row ny-2, row ny-1 mirrors row 1), columns 0 and nx-1 are fixed. One step:
//   1. target update from: rows 1 and ny-2 (the halos a neighbour would need)
//   2. on the host: row 1 -> row ny-1, row ny-2 -> row 0 (standing in for the exchange with neighbours)
//   3. target update to: rows 0 and ny-1
//   4. kernel: gn = 0.25 (N + S + W + E) on the interior; kernel: g = gn on the interior
//   5. every --checkpoint steps: target update from the whole grid (the checkpoint)
// The same steps run on the host afterwards; the grids must be equal byte for byte.
//
// Usage: stencil [--nx 4096] [--ny 4096] [--steps 20] [--checkpoint 5] [--variant plain|app_pinned]
//                [--markers] [--allow-host]
// stdout: '#'-lines of facts (key=value), then CSV: variant,nx,ny,step,ns,transfer_ns,checkpoint.
// ns: the whole step; transfer_ns: its `target update`s. --markers writes "pinpath-region:
// invocation step=S invocation=0" to stderr before each step and "pinpath-region: teardown" before
// the exit, so LIBOMPTARGET_INFO's lines (also on stderr) can be assigned to steps.
// Exit status: 0 ok, 2 usage, 3 not on the device, 4 wrong grid, 5 registration failed.

#include "common.h"
#include "stencil_step.h"

#include <cstring>
#include <string>
#include <vector>

#pragma STDC FP_CONTRACT OFF  // no fused multiply-add: the host check must see the same rounding

namespace {
using namespace pinpath;

struct Options : CommonOptions {
  long nx = 4096, ny = 4096;
  int steps = 20, checkpoint = 5;
};

Options parse(int argc, char **argv) {
  Options o;
  for_each_option(argc, argv, o, [&](const std::string &a, auto &value) {
    return option(a, "--nx", value, o.nx) || option(a, "--ny", value, o.ny) || option(a, "--steps", value, o.steps) ||
           option(a, "--checkpoint", value, o.checkpoint);
  });
  if (o.nx < 3 || o.ny < 4 || o.nx > (1L << 16) || o.ny > (1L << 16)) die(2, "--nx must be 3..65536 and --ny 4..65536");
  if (o.steps < 1 || o.checkpoint < 1) die(2, "--steps and --checkpoint must be >= 1");
  return o;
}

// a deterministic start: no two neighbouring cells equal, no zeros
void fill(double *g, long n) {
  for (long i = 0; i < n; ++i) g[i] = 1.0 + static_cast<double>((static_cast<uint64_t>(i) * 2654435761u) % 1000) / 1000.0;
}

void exchange(double *g, long nx, long ny) {   // periodic in y, on the host
  std::memcpy(g + (ny - 1) * nx, g + nx, nx * sizeof(double));
  std::memcpy(g, g + (ny - 2) * nx, nx * sizeof(double));
}

void reference(double *g, double *gn, long nx, long ny, int steps) {
  for (int s = 0; s < steps; ++s) {
    exchange(g, nx, ny);
    for (long y = 1; y < ny - 1; ++y)
      for (long x = 1; x < nx - 1; ++x)
        gn[y * nx + x] = 0.25 * (((g[(y - 1) * nx + x] + g[(y + 1) * nx + x]) + g[y * nx + x - 1]) + g[y * nx + x + 1]);
    for (long y = 1; y < ny - 1; ++y)
      for (long x = 1; x < nx - 1; ++x) g[y * nx + x] = gn[y * nx + x];
  }
}

}  // namespace

int main(int argc, char **argv) {
  pinpath::program = "stencil";
  const Options o = parse(argc, argv);
  const long nx = o.nx, ny = o.ny, n = nx * ny;
  const size_t nbytes = sizeof(double) * n;
  double *g = static_cast<double *>(page_aligned(nbytes));
  double *gn = static_cast<double *>(page_aligned(nbytes));
  fill(g, n);
  std::memcpy(gn, g, nbytes);

  const int devices = omp_get_num_devices();
  const bool initial = !on_device(o.allow_host);

  Pinner pin;
  int64_t register_ns = 0, unregister_ns = 0;
  int register_rc = 0, unregister_rc = 0;
  if (o.variant == "app_pinned") {   // the grid only: gn never crosses the bus
    pin.open();
    const int64_t t0 = now_ns();
    register_rc = pin.lock(g, nbytes);
    register_ns = now_ns() - t0;
    if (register_rc != 0) die(5, "app_pinned: " + pin.how + " failed with " + std::to_string(register_rc));
  }

  int64_t t0 = now_ns();
#pragma omp target enter data map(to : g[0:n]) map(alloc : gn[0:n])
  const int64_t enter_ns = now_ns() - t0;
  std::printf("# offload_devices=%d on_device=%d vendor=%d variant=%s nx=%ld ny=%ld steps=%d checkpoint=%d "
              "grid_nbytes=%zu row_nbytes=%zu register=%s register_rc=%d register_ns=%lld enter_ns=%lld\n",
              devices, initial ? 0 : 1, PINPATH_VENDOR, o.variant.c_str(), nx, ny, o.steps, o.checkpoint, nbytes,
              nx * sizeof(double), o.variant == "app_pinned" ? pin.how.c_str() : "none", register_rc,
              static_cast<long long>(register_ns), static_cast<long long>(enter_ns));

  struct Row { int step; int64_t ns, transfer_ns; bool checkpoint; double sum; };
  std::vector<Row> rows;
  const long top = nx, bottom = (ny - 2) * nx, ghost_top = 0, ghost_bottom = (ny - 1) * nx;
  for (int step = 0; step < o.steps; ++step) {
    if (o.markers) std::fprintf(stderr, "pinpath-region: invocation step=%d invocation=0\n", step);
    const int64_t start = now_ns();
    int64_t moved = 0, u = now_ns();
    // one section per directive: OpenMP allows one array section of a variable per motion clause
#pragma omp target update from(g[top:nx])
#pragma omp target update from(g[bottom:nx])
    moved += now_ns() - u;
    exchange(g, nx, ny);
    u = now_ns();
#pragma omp target update to(g[ghost_top:nx])
#pragma omp target update to(g[ghost_bottom:nx])
    moved += now_ns() - u;
    jacobi_step(g, gn, nx, ny);
    const bool ckpt = (step + 1) % o.checkpoint == 0;
    double sum = 0.0;
    if (ckpt) {
      u = now_ns();
#pragma omp target update from(g[0:n])
      moved += now_ns() - u;
      for (long i = 0; i < n; ++i) sum += g[i];   // what a checkpoint writer would read
    }
    rows.push_back({step, now_ns() - start, moved, ckpt, sum});
  }
  if (o.markers) std::fprintf(stderr, "pinpath-region: teardown\n");
  t0 = now_ns();
#pragma omp target exit data map(from : g[0:n]) map(delete : gn[0:n])
  const int64_t exit_ns = now_ns() - t0;
  if (o.variant == "app_pinned") {
    const int64_t u0 = now_ns();
    unregister_rc = pin.unlock(g, nbytes);
    unregister_ns = now_ns() - u0;
  }

  // the same steps on the host, from the same start
  double *want = static_cast<double *>(page_aligned(nbytes));
  fill(want, n);
  std::memcpy(gn, want, nbytes);
  reference(want, gn, nx, ny, o.steps);
  const bool ok = std::memcmp(want, g, nbytes) == 0;
  double final_sum = 0.0;
  for (long i = 0; i < n; ++i) final_sum += g[i];

  std::printf("# exit_ns=%lld unregister_rc=%d unregister_ns=%lld wrong=%d final_sum=%.17g\n",
              static_cast<long long>(exit_ns), unregister_rc, static_cast<long long>(unregister_ns), ok ? 0 : 1,
              final_sum);
  std::printf("variant,nx,ny,step,ns,transfer_ns,checkpoint,checkpoint_sum\n");
  for (const Row &r : rows)
    std::printf("%s,%ld,%ld,%d,%lld,%lld,%s,%.17g\n", o.variant.c_str(), nx, ny, r.step, static_cast<long long>(r.ns),
                static_cast<long long>(r.transfer_ns), r.checkpoint ? "true" : "false", r.sum);
  std::fflush(stdout);
  std::free(g);
  std::free(gn);
  std::free(want);
  if (!ok) die(4, "the grid after the device's steps differs from the host's");
  return 0;
}
