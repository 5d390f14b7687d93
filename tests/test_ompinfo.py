"""How LLVM's CUDA plugin left the primary context's wait mode, read from its LIBOMPTARGET_INFO
bit-16 lines (the words of offload/plugins-nextgen/cuda/src/rtl.cpp, CUDADeviceTy::initImpl)."""

import pytest

from pinpath import ompinfo

SET = "CUDA device 0 info: The primary context is inactive, set its flags to CU_CTX_SCHED_BLOCKING_SYNC"
KEPT = "CUDA device 0 info: The primary context is active, no change to its flags"
WARN = "CUDA device 0 info: Warning: The current flags are not CU_CTX_SCHED_BLOCKING_SYNC"
COPY = ("omptarget device 0 info: Copying data from host to device, HstPtr=0x7f00, TgtPtr=0x7e00, Size=384, "
        "Name=pos[0:pos_len]")
LAUNCH = "PluginInterface device 0 info: Launching kernel __omp_offloading_10303_main_l12 with 4 blocks and 32 threads in SPMD mode"


@pytest.mark.parametrize("lines, said", [
    ([SET, LAUNCH, COPY], "blocking sync, set by the plugin"),
    ([KEPT, WARN, COPY], "not blocking sync: the context was active before the plugin started, its flags kept"),
    ([KEPT, COPY], "blocking sync, the context already active"),
    ([LAUNCH, COPY], ""),            # the host plugin, or bit 16 off: nothing said
])
def test_the_context_wait_mode_is_what_the_plugin_said(lines, said):
    text = "\n".join(["pinpath-region: invocation step=0 invocation=0", *lines])
    assert ompinfo.context_wait(text) == said
    kinds = [k for k, _ in ompinfo.events(text)]
    assert kinds.count("copy") == 1 and "unreadable" not in kinds    # the other readers see what they saw
