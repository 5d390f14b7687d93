"""The device work of the replica and of the overlap test, once for every backend:
the CUDA/HIP C source compiled at run time, and the same function in numpy (the host
platform's kernel, and the reference the D2H bytes are checked against)."""

from __future__ import annotations

import numpy as np

__all__ = ["VGH_DIM", "NSPLINES", "replica_expected", "REPLICA_KERNEL", "SPIN_KERNEL", "KERNEL_SOURCE",
           "SPIN_TIMEOUT_NS"]

VGH_DIM = 10          #: value, 3 gradient and 6 hessian components per spline (miniqmc vgh)
NSPLINES = 192        #: padded splines per walker for the NiO 32-atom cell (getAlignedSize(192))
SPIN_TIMEOUT_NS = 10_000_000_000   #: a latch that is never released lets its queue go after 10 s
REPLICA_KERNEL = "pinpath_vgh"
SPIN_KERNEL = "pinpath_spin"

# out[w][c][s] = pos[3w + c % 3] * (s + 1) + c: every output element depends on the H2D input,
# so a stale or partial D2H cannot pass the byte check.
KERNEL_SOURCE = r"""
extern "C" __global__ void pinpath_vgh(const double* pos, double* out, int nw, int nsplines) {
    int w = blockIdx.x;
    if (w >= nw) return;
    for (int s = threadIdx.x; s < nsplines; s += blockDim.x) {
        for (int c = 0; c < 10; ++c) {
            out[((long)w * 10 + c) * nsplines + s] = pos[3 * w + c % 3] * (double)(s + 1) + (double)c;
        }
    }
}

extern "C" __global__ void pinpath_spin(volatile int* flag, unsigned long long timeout_ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while (*flag == 0 && t - t0 < timeout_ns);
}
"""


def replica_expected(pos: np.ndarray, nw: int, nsplines: int = NSPLINES) -> np.ndarray:
    """What the replica kernel writes, as float64 [nw, VGH_DIM, nsplines]."""
    p = np.asarray(pos, dtype=np.float64).reshape(nw, 3)
    s = np.arange(1, nsplines + 1, dtype=np.float64)
    c = np.arange(VGH_DIM)
    return p[:, c % 3][:, :, None] * s[None, None, :] + c[None, :, None].astype(np.float64)
