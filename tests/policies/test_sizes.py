"""Hypothesis over sizes, offsets and alignments: every byte lands where it should."""

from hypothesis import HealthCheck, given, settings, strategies as st

from pinpath.experiments.sweep import DeviceBuffers, transfer
from pinpath.memkinds import host_buffer
from pinpath.policies import make_policy
from pinpath.runtimes import open_runtime
from pinpath.vocab import POLICY_STEPS

POLICY = st.sampled_from([str(p) for p in POLICY_STEPS])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(policy=POLICY, nbytes=st.integers(1, 3 << 20), offset=st.integers(0, 9000),
       page_offset=st.integers(1, 4095), direction=st.sampled_from(["h2d", "d2h"]))
def test_any_size_offset_alignment(policy, nbytes, offset, page_offset, direction):
    rt = open_runtime("host")
    try:
        with host_buffer("unaligned", nbytes + offset, offset=page_offset) as buf, \
                make_policy(policy, rt, threshold_nbytes=1 << 20) as pol, DeviceBuffers(rt) as dev:
            dptr = dev.get(nbytes)
            pol.map(buf)
            r = transfer(pol, buf, dev, dptr, direction, verify=True, nbytes=nbytes, offset=offset)
            assert r.verified and r.nbytes == nbytes
            pol.unmap(buf)
        assert not rt.recorder.outstanding()
    finally:
        rt.close()
