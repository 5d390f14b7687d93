import pickle

import pytest

from pinpath import errors

CASES = [
    errors.RuntimeUnavailable("hsa runtime unavailable: libhsa-runtime64.so.1 not found"),
    errors.RuntimeCallFailed("cuda", "cudaHostUnregister", 713, "cudaErrorHostMemoryNotRegistered", None, 0x1000),
    errors.LockFailed("cuda", "cudaHostRegister", 712, "cudaErrorHostMemoryAlreadyRegistered", 4096, 0x1000),
    errors.UnknownName("policy", "lock_allways", ["lock_always", "nextgen"]),
    errors.BadParameter("params/smoke.yaml: unknown parameter 'REPEAT'"),
]


@pytest.mark.parametrize("exc", CASES, ids=lambda e: type(e).__name__)
def test_pickles_and_reads_as_one_sentence(exc):
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is type(exc) and str(back) == str(exc)
    assert "\n" not in str(exc)
    assert isinstance(exc, errors.PinpathError)


def test_call_failed_names_culprit_first():
    e = CASES[2]
    assert str(e) == "cuda: cudaHostRegister(ptr=0x1000, nbytes=4096) returned cudaErrorHostMemoryAlreadyRegistered (712)"
    assert (e.runtime, e.call, e.rc, e.nbytes) == ("cuda", "cudaHostRegister", 712, 4096)


def test_unknown_lists_known():
    assert str(CASES[3]) == "unknown policy 'lock_allways'; known: lock_always, nextgen"
