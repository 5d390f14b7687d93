"""The device work of the replica and of the overlap test, once for every backend:
the CUDA/HIP C source compiled at run time, and the same function in numpy (the host
platform's kernel, and the reference the D2H bytes are checked against)."""

from __future__ import annotations

import numpy as np

__all__ = ["VGH_DIM", "NSPLINES", "pos_nbytes", "out_nbytes", "replica_expected", "REPLICA_KERNEL", "SPIN_KERNEL", "KERNEL_SOURCE",
           "SPIN_TIMEOUT_NS", "HIP_KERNEL_SOURCE", "HIP_WALL_CLOCK_HZ_MACRO", "HIP_WALL_CLOCK_HZ_ASSUMED"]

VGH_DIM = 10          #: value, 3 gradient and 6 hessian components per spline (miniqmc vgh)
NSPLINES = 192        #: padded splines per walker for the NiO 32-atom cell (getAlignedSize(192))


def pos_nbytes(nw: int) -> int:
    """The replica's H2D per region: three coordinates of each of nw walkers."""
    return 3 * 8 * nw


def out_nbytes(nw: int, nsplines: int = NSPLINES) -> int:
    """The replica's D2H per region: value, gradient and hessian of every spline of nw walkers."""
    return VGH_DIM * 8 * nw * nsplines
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

#: KERNEL_SOURCE up to the spin kernel: pinpath_vgh, character for character (HIP compiles it as is)
_VGH_SOURCE = KERNEL_SOURCE[:KERNEL_SOURCE.index('extern "C" __global__ void pinpath_spin')]

HIP_WALL_CLOCK_HZ_MACRO = "PINPATH_WALL_CLOCK_HZ"   #: the HIP backend sets it (-D) where the runtime reports the rate
#: the rate assumed where it does not: what Instinct GPUs report (hipDeviceAttributeWallClockRate);
#: a GPU whose counter runs slower only waits longer than SPIN_TIMEOUT_NS before letting go
HIP_WALL_CLOCK_HZ_ASSUMED = 100_000_000

# The spin kernel for AMD GPUs (HIP rejects the PTX above): wall_clock64() is a constant-rate counter
# (s_memrealtime on gfx9), unlike clock64(), which follows the shader clock and its power states. The
# parameters stay those of the CUDA kernel: the timeout arrives in ns and becomes ticks once per launch.
HIP_KERNEL_SOURCE = _VGH_SOURCE + r"""#ifndef PINPATH_WALL_CLOCK_HZ
#define PINPATH_WALL_CLOCK_HZ 100000000ull
#endif

extern "C" __global__ void pinpath_spin(volatile int* flag, unsigned long long timeout_ns) {
    const unsigned long long hz = PINPATH_WALL_CLOCK_HZ;
    const unsigned long long limit = timeout_ns / 1000000000ull * hz + timeout_ns % 1000000000ull * hz / 1000000000ull;
    unsigned long long t0, t;
    t0 = (unsigned long long)wall_clock64();
    do {
        t = (unsigned long long)wall_clock64();
    } while (*flag == 0 && t - t0 < limit);
}
"""


def replica_expected(pos: np.ndarray, nw: int, nsplines: int = NSPLINES) -> np.ndarray:
    """What the replica kernel writes, as float64 [nw, VGH_DIM, nsplines]."""
    p = np.asarray(pos, dtype=np.float64).reshape(nw, 3)
    s = np.arange(1, nsplines + 1, dtype=np.float64)
    c = np.arange(VGH_DIM)
    return p[:, c % 3][:, :, None] * s[None, None, :] + c[None, :, None].astype(np.float64)
