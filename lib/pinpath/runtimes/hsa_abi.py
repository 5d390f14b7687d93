"""The HSA runtime's C interface as pinpath binds it through ctypes: constants, structs,
prototypes, the ctypes type of each C type, status names, loading and binding
``libhsa-runtime64.so.1``, and the helpers that need no runtime.

Everything here is data or a pure function, so that tests compare it with the headers
of each ROCm release (``tests/runtimes/test_hsa.py``; ``native/hsa_layout.c``). Checked
against the Debian headers of ROCr 5.2.3, 6.1.2, 6.4.3 and 7.2.4: the layouts, constants
and prototypes below are the same in all of them; newer releases only add status codes
(``NEWER_STATUS_NAMES``) and ``hsa_amd_memory_async_copy_on_engine`` (optional here).
The backend that uses them is ``hsa_.HsaRuntime``.
"""

from __future__ import annotations

import ctypes
import os
import re
from types import SimpleNamespace

from ..errors import RuntimeUnavailable
from ..hsa_status import HSA_STATUS, NEWER_STATUS_NAMES, STATUS_NAMES, status_name  # noqa: F401  (re-exported)

__all__ = ["LIBRARY", "HSA_CONSTANTS", "K", "NEWER_STATUS_NAMES", "STATUS_NAMES", "POINTER_TYPE_NAMES",
           "status_name", "Agent", "Signal", "MemoryPool", "PointerInfoStruct", "AsyncCopyTime", "STRUCTS",
           "AgentCallback", "PoolCallback", "CTYPES", "PROTOTYPES", "OPTIONAL_SYMBOLS", "NAME_NBYTES", "U64_MAX",
           "soname_version", "load_failure_sentence", "init_failure_sentence", "missing_symbol_sentence",
           "valid_pointer_fields", "bind"]

LIBRARY = "libhsa-runtime64.so.1"

#: every enum constant the bindings use, with its value in hsa.h / hsa_ext_amd.h
#: (the test compiles those headers and compares each one)
HSA_CONSTANTS: dict[str, int] = {
    **HSA_STATUS,
    # hsa_system_info_t
    "HSA_SYSTEM_INFO_VERSION_MAJOR": 0,
    "HSA_SYSTEM_INFO_VERSION_MINOR": 1,
    "HSA_SYSTEM_INFO_TIMESTAMP": 2,
    "HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY": 3,
    # hsa_agent_info_t, hsa_amd_agent_info_t, hsa_device_type_t
    "HSA_AGENT_INFO_NAME": 0,
    "HSA_AGENT_INFO_NODE": 16,
    "HSA_AGENT_INFO_DEVICE": 17,
    "HSA_AMD_AGENT_INFO_PRODUCT_NAME": 0xA009,
    "HSA_DEVICE_TYPE_CPU": 0,
    "HSA_DEVICE_TYPE_GPU": 1,
    # hsa_amd_memory_pool_info_t, hsa_amd_segment_t, hsa_amd_memory_pool_global_flag_t
    "HSA_AMD_MEMORY_POOL_INFO_SEGMENT": 0,
    "HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS": 1,
    "HSA_AMD_MEMORY_POOL_INFO_SIZE": 2,
    "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED": 5,
    "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE": 6,
    "HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT": 7,
    "HSA_AMD_SEGMENT_GLOBAL": 0,
    "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT": 1,
    "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED": 2,
    "HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED": 4,
    # hsa_amd_pointer_type_t
    "HSA_EXT_POINTER_TYPE_UNKNOWN": 0,
    "HSA_EXT_POINTER_TYPE_HSA": 1,
    "HSA_EXT_POINTER_TYPE_LOCKED": 2,
    "HSA_EXT_POINTER_TYPE_GRAPHICS": 3,
    "HSA_EXT_POINTER_TYPE_IPC": 4,
    # hsa_signal_condition_t, hsa_wait_state_t
    "HSA_SIGNAL_CONDITION_LT": 2,
    "HSA_WAIT_STATE_BLOCKED": 0,
}
#: the same constants as attributes, for the code (one source of truth)
K = SimpleNamespace(**HSA_CONSTANTS)

POINTER_TYPE_NAMES = {v: k for k, v in HSA_CONSTANTS.items() if k.startswith("HSA_EXT_POINTER_TYPE_")}


# -- structs (field names are the C member names, so the layout test can look them up) ------
class Agent(ctypes.Structure):
    """hsa_agent_t: an opaque handle passed by value."""
    _fields_ = [("handle", ctypes.c_uint64)]


class Signal(ctypes.Structure):
    """hsa_signal_t: an opaque handle passed by value; handle 0 is reserved."""
    _fields_ = [("handle", ctypes.c_uint64)]


class MemoryPool(ctypes.Structure):
    """hsa_amd_memory_pool_t: an opaque handle passed by value."""
    _fields_ = [("handle", ctypes.c_uint64)]


class PointerInfoStruct(ctypes.Structure):
    """hsa_amd_pointer_info_t as of ROCm 4.5 (56 bytes); older runtimes fill only 48."""
    _fields_ = [
        ("size", ctypes.c_uint32),
        ("type", ctypes.c_int),
        ("agentBaseAddress", ctypes.c_void_p),
        ("hostBaseAddress", ctypes.c_void_p),
        ("sizeInBytes", ctypes.c_size_t),
        ("userData", ctypes.c_void_p),
        ("agentOwner", Agent),
        ("global_flags", ctypes.c_uint32),
    ]


class AsyncCopyTime(ctypes.Structure):
    """hsa_amd_profiling_async_copy_time_t: start and end in system timestamp ticks."""
    _fields_ = [("start", ctypes.c_uint64), ("end", ctypes.c_uint64)]


#: C type name -> its ctypes binding
STRUCTS: dict[str, type[ctypes.Structure]] = {
    "hsa_agent_t": Agent,
    "hsa_signal_t": Signal,
    "hsa_amd_memory_pool_t": MemoryPool,
    "hsa_amd_pointer_info_t": PointerInfoStruct,
    "hsa_amd_profiling_async_copy_time_t": AsyncCopyTime,
}

_AGENT_CB = "hsa_status_t (*)(hsa_agent_t, void *)"
_POOL_CB = "hsa_status_t (*)(hsa_amd_memory_pool_t, void *)"
AgentCallback = ctypes.CFUNCTYPE(ctypes.c_int, Agent, ctypes.c_void_p)
PoolCallback = ctypes.CFUNCTYPE(ctypes.c_int, MemoryPool, ctypes.c_void_p)

#: every C parameter or return type in PROTOTYPES -> the ctypes type used for it.
#: Enums are C ints here: their values all fit, and ctypes has no enum type.
CTYPES: dict[str, object] = {
    "void": None,
    "hsa_status_t": ctypes.c_int,
    "hsa_agent_info_t": ctypes.c_int,
    "hsa_system_info_t": ctypes.c_int,
    "hsa_amd_memory_pool_info_t": ctypes.c_int,
    "hsa_signal_condition_t": ctypes.c_int,
    "hsa_wait_state_t": ctypes.c_int,
    "hsa_signal_value_t": ctypes.c_int64,   # HSA_LARGE_MODEL, which hsa.h sets for __LP64__
    "hsa_amd_sdma_engine_id_t": ctypes.c_int,   # ROCr 6.x on; only the optional copy_on_engine uses it
    "int": ctypes.c_int,
    "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t,
    "bool": ctypes.c_bool,
    "void *": ctypes.c_void_p,
    "const void *": ctypes.c_void_p,
    "void **": ctypes.POINTER(ctypes.c_void_p),
    "void *(*)(size_t)": ctypes.c_void_p,   # only ever NULL: no accessible-agent list wanted
    "uint32_t *": ctypes.POINTER(ctypes.c_uint32),
    "const uint32_t *": ctypes.POINTER(ctypes.c_uint32),
    "hsa_agent_t": Agent,
    "hsa_agent_t *": ctypes.POINTER(Agent),
    "const hsa_agent_t *": ctypes.POINTER(Agent),
    "hsa_agent_t **": ctypes.POINTER(ctypes.POINTER(Agent)),
    "hsa_signal_t": Signal,
    "hsa_signal_t *": ctypes.POINTER(Signal),
    "const hsa_signal_t *": ctypes.POINTER(Signal),
    "hsa_amd_memory_pool_t": MemoryPool,
    "hsa_amd_pointer_info_t *": ctypes.POINTER(PointerInfoStruct),
    "hsa_amd_profiling_async_copy_time_t *": ctypes.POINTER(AsyncCopyTime),
    _AGENT_CB: AgentCallback,
    _POOL_CB: PoolCallback,
}

#: symbol -> (C return type, C parameter types); the test checks each against the header
PROTOTYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "hsa_init": ("hsa_status_t", ()),
    "hsa_shut_down": ("hsa_status_t", ()),
    "hsa_system_get_info": ("hsa_status_t", ("hsa_system_info_t", "void *")),
    "hsa_iterate_agents": ("hsa_status_t", (_AGENT_CB, "void *")),
    "hsa_agent_get_info": ("hsa_status_t", ("hsa_agent_t", "hsa_agent_info_t", "void *")),
    "hsa_amd_agent_iterate_memory_pools": ("hsa_status_t", ("hsa_agent_t", _POOL_CB, "void *")),
    "hsa_amd_memory_pool_get_info": ("hsa_status_t", ("hsa_amd_memory_pool_t",
                                                      "hsa_amd_memory_pool_info_t", "void *")),
    "hsa_amd_memory_pool_allocate": ("hsa_status_t", ("hsa_amd_memory_pool_t", "size_t",
                                                      "uint32_t", "void **")),
    "hsa_amd_memory_pool_free": ("hsa_status_t", ("void *",)),
    "hsa_amd_agents_allow_access": ("hsa_status_t", ("uint32_t", "const hsa_agent_t *",
                                                     "const uint32_t *", "const void *")),
    "hsa_amd_memory_lock": ("hsa_status_t", ("void *", "size_t", "hsa_agent_t *", "int", "void **")),
    "hsa_amd_memory_lock_to_pool": ("hsa_status_t", ("void *", "size_t", "hsa_agent_t *", "int",
                                                     "hsa_amd_memory_pool_t", "uint32_t", "void **")),
    "hsa_amd_memory_unlock": ("hsa_status_t", ("void *",)),
    "hsa_amd_pointer_info": ("hsa_status_t", ("const void *", "hsa_amd_pointer_info_t *",
                                              "void *(*)(size_t)", "uint32_t *", "hsa_agent_t **")),
    "hsa_amd_memory_async_copy": ("hsa_status_t", ("void *", "hsa_agent_t", "const void *",
                                                   "hsa_agent_t", "size_t", "uint32_t",
                                                   "const hsa_signal_t *", "hsa_signal_t")),
    "hsa_amd_signal_create": ("hsa_status_t", ("hsa_signal_value_t", "uint32_t",
                                               "const hsa_agent_t *", "uint64_t", "hsa_signal_t *")),
    "hsa_signal_destroy": ("hsa_status_t", ("hsa_signal_t",)),
    "hsa_signal_store_screlease": ("void", ("hsa_signal_t", "hsa_signal_value_t")),
    "hsa_signal_wait_scacquire": ("hsa_signal_value_t", ("hsa_signal_t", "hsa_signal_condition_t",
                                                         "hsa_signal_value_t", "uint64_t",
                                                         "hsa_wait_state_t")),
    "hsa_amd_profiling_async_copy_enable": ("hsa_status_t", ("bool",)),
    "hsa_amd_profiling_get_async_copy_time": ("hsa_status_t", ("hsa_signal_t",
                                                               "hsa_amd_profiling_async_copy_time_t *")),
    # ROCr 6.x on (absent from 5.2): the copy on a chosen SDMA engine
    "hsa_amd_memory_async_copy_on_engine": ("hsa_status_t", ("void *", "hsa_agent_t", "const void *",
                                                             "hsa_agent_t", "size_t", "uint32_t",
                                                             "const hsa_signal_t *", "hsa_signal_t",
                                                             "hsa_amd_sdma_engine_id_t", "bool")),
}
#: symbols the backend can start without (bound as None where the library lacks them);
#: the methods that need them say so when called
OPTIONAL_SYMBOLS = frozenset({"hsa_amd_memory_lock_to_pool", "hsa_amd_profiling_async_copy_enable",
                              "hsa_amd_profiling_get_async_copy_time", "hsa_amd_memory_async_copy_on_engine"})

U64_MAX = 2**64 - 1
NAME_NBYTES = 64   # HSA_AGENT_INFO_NAME and PRODUCT_NAME are char[64], NUL padded


# -- pure helpers (no runtime needed; unit-tested) ----------------------------------------------
def soname_version(path: str | None) -> str:
    """``/usr/lib/.../libhsa-runtime64.so.1.5.0`` -> ``'1.5.0'`` (the file behind the soname)."""
    if not path:
        return "unknown"
    m = re.search(r"\.so\.([0-9][0-9.]*)$", os.path.realpath(path))
    return m.group(1) if m else "unknown"


def load_failure_sentence(library: str, reason: str) -> str:
    """The one sentence for a library that the dynamic loader refused."""
    if "No such file" in reason or "cannot open shared object" in reason:
        return f"hsa runtime unavailable: {library} not found on the library path"
    return f"hsa runtime unavailable: {library} cannot be loaded ({' '.join(reason.split())})"


def init_failure_sentence(rc: int, kfd_path: str = "/dev/kfd") -> str:
    """The one sentence for a failed hsa_init, naming the likeliest cause that can be seen."""
    head = f"hsa runtime unavailable: hsa_init returned {status_name(rc)} ({rc:#x})"
    if not os.path.exists(kfd_path):
        return f"{head}: no AMD GPU (kfd) answers, {kfd_path} does not exist"
    if not os.access(kfd_path, os.R_OK | os.W_OK):
        return f"{head}: {kfd_path} exists but this user may not open it (render/video group?)"
    return f"{head} although {kfd_path} is present"


def valid_pointer_fields(info: PointerInfoStruct) -> dict[str, object]:
    """The members the runtime filled: those that end within the ``size`` it wrote back.

    A runtime from before ROCm 4.5 writes 48 and leaves ``global_flags`` untouched; one
    with a larger struct than ours copies only our 56 bytes.
    """
    written_nbytes = min(info.size, ctypes.sizeof(PointerInfoStruct))
    out: dict[str, object] = {}
    for name, ctype in PointerInfoStruct._fields_:
        field = getattr(PointerInfoStruct, name)
        if field.offset + ctypes.sizeof(ctype) <= written_nbytes:
            value = getattr(info, name)
            out[name] = value.handle if isinstance(value, Agent) else value
    return out


def _dlinfo_path(lib: ctypes.CDLL) -> str | None:
    """The file the loader opened for ``lib`` (link_map.l_name via dlinfo)."""
    class _LinkMap(ctypes.Structure):
        _fields_ = [("l_addr", ctypes.c_void_p), ("l_name", ctypes.c_char_p)]
    libc = ctypes.CDLL(None)
    dlinfo = getattr(libc, "dlinfo", None)
    if dlinfo is None:
        return None
    dlinfo.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
    dlinfo.restype = ctypes.c_int
    lm = ctypes.POINTER(_LinkMap)()
    if dlinfo(lib._handle, 2, ctypes.byref(lm)) != 0 or not lm:   # 2 = RTLD_DI_LINKMAP
        return None
    name = lm.contents.l_name
    return name.decode(errors="replace") if name else None


class _Fns:
    """The bound symbols, as attributes; a missing optional one is None."""


def bind(lib: ctypes.CDLL, library: str) -> tuple[_Fns, str | None]:
    """Set restype/argtypes of every symbol in PROTOTYPES.

    Raises
    ------
    RuntimeUnavailable
        a required symbol is missing (one sentence naming the library, its version, the call).
    """
    fns = _Fns()
    path = _dlinfo_path(lib)
    for sym, (ret, params) in PROTOTYPES.items():
        try:
            fn = getattr(lib, sym)
        except AttributeError:
            if sym in OPTIONAL_SYMBOLS:
                setattr(fns, sym, None)
                continue
            raise RuntimeUnavailable(missing_symbol_sentence(library, path, sym)) from None
        fn.restype = CTYPES[ret]
        fn.argtypes = [CTYPES[p] for p in params]
        setattr(fns, sym, fn)
    return fns, path


def missing_symbol_sentence(library: str, path: str | None, sym: str) -> str:
    return (f"hsa runtime unavailable: {library} version {soname_version(path)} "
            f"({path or 'path unknown'}) has no {sym}, which pinpath calls")

