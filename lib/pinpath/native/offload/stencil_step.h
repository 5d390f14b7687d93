// The stencil's two kernels of one step (stencil.cpp), shared with tools/halo_cross.cpp, which times
// the stencil's halo updates right after them: gn = 0.25 (N + S + W + E) on the interior of the
// ny x nx grid g, then g = gn on the interior. Both arrays must be mapped (target enter data) before;
// each kernel is a target region, which returns when the kernel is done.
#pragma once

namespace pinpath {

inline void jacobi_step(double *g, double *gn, long nx, long ny) {
#pragma omp target teams distribute parallel for collapse(2)
  for (long y = 1; y < ny - 1; ++y)
    for (long x = 1; x < nx - 1; ++x)
      gn[y * nx + x] = 0.25 * (((g[(y - 1) * nx + x] + g[(y + 1) * nx + x]) + g[y * nx + x - 1]) + g[y * nx + x + 1]);
#pragma omp target teams distribute parallel for collapse(2)
  for (long y = 1; y < ny - 1; ++y)
    for (long x = 1; x < nx - 1; ++x) g[y * nx + x] = gn[y * nx + x];
}

}  // namespace pinpath
