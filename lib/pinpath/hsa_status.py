"""hsa_status_t by name and value (hsa.h, hsa_ext_amd.h): the one table, with no runtime behind it,
so that anything may name an HSA status (the runtime bindings and the C libraries' loader alike)
without importing a runtime. ``runtimes.hsa_abi`` merges it into its constants, and the header
tests compare every value with each ROCm release's headers."""

from __future__ import annotations

__all__ = ["HSA_STATUS", "NEWER_STATUS_NAMES", "STATUS_NAMES", "status_name"]

#: hsa_status_t name -> value
HSA_STATUS: dict[str, int] = {
    # hsa_status_t (hsa.h)
    "HSA_STATUS_SUCCESS": 0x0,
    "HSA_STATUS_INFO_BREAK": 0x1,
    "HSA_STATUS_ERROR": 0x1000,
    "HSA_STATUS_ERROR_INVALID_ARGUMENT": 0x1001,
    "HSA_STATUS_ERROR_INVALID_QUEUE_CREATION": 0x1002,
    "HSA_STATUS_ERROR_INVALID_ALLOCATION": 0x1003,
    "HSA_STATUS_ERROR_INVALID_AGENT": 0x1004,
    "HSA_STATUS_ERROR_INVALID_REGION": 0x1005,
    "HSA_STATUS_ERROR_INVALID_SIGNAL": 0x1006,
    "HSA_STATUS_ERROR_INVALID_QUEUE": 0x1007,
    "HSA_STATUS_ERROR_OUT_OF_RESOURCES": 0x1008,
    "HSA_STATUS_ERROR_INVALID_PACKET_FORMAT": 0x1009,
    "HSA_STATUS_ERROR_RESOURCE_FREE": 0x100A,
    "HSA_STATUS_ERROR_NOT_INITIALIZED": 0x100B,
    "HSA_STATUS_ERROR_REFCOUNT_OVERFLOW": 0x100C,
    "HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS": 0x100D,
    "HSA_STATUS_ERROR_INVALID_INDEX": 0x100E,
    "HSA_STATUS_ERROR_INVALID_ISA": 0x100F,
    "HSA_STATUS_ERROR_INVALID_CODE_OBJECT": 0x1010,
    "HSA_STATUS_ERROR_INVALID_EXECUTABLE": 0x1011,
    "HSA_STATUS_ERROR_FROZEN_EXECUTABLE": 0x1012,
    "HSA_STATUS_ERROR_INVALID_SYMBOL_NAME": 0x1013,
    "HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED": 0x1014,
    "HSA_STATUS_ERROR_VARIABLE_UNDEFINED": 0x1015,
    "HSA_STATUS_ERROR_EXCEPTION": 0x1016,
    "HSA_STATUS_ERROR_INVALID_ISA_NAME": 0x1017,
    "HSA_STATUS_ERROR_INVALID_CODE_SYMBOL": 0x1018,
    "HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL": 0x1019,
    "HSA_STATUS_ERROR_INVALID_FILE": 0x1020,
    "HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER": 0x1021,
    "HSA_STATUS_ERROR_INVALID_CACHE": 0x1022,
    "HSA_STATUS_ERROR_INVALID_WAVEFRONT": 0x1023,
    "HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP": 0x1024,
    "HSA_STATUS_ERROR_INVALID_RUNTIME_STATE": 0x1025,
    "HSA_STATUS_ERROR_FATAL": 0x1026,
    # AMD additions to hsa_status_t (hsa_ext_amd.h)
    "HSA_STATUS_ERROR_INVALID_MEMORY_POOL": 40,
    "HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION": 41,
    "HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION": 42,
    "HSA_STATUS_ERROR_MEMORY_FAULT": 43,
    "HSA_STATUS_CU_MASK_REDUCED": 44,
}

#: statuses absent from the ROCm 5.2 headers, names only (pinpath never compares with them;
#: a runtime that predates one never returns it): value -> (name, first ROCr release declaring it)
NEWER_STATUS_NAMES: dict[int, tuple[str, tuple[int, int]]] = {
    45: ("HSA_STATUS_ERROR_OUT_OF_REGISTERS", (6, 1)),
    46: ("HSA_STATUS_ERROR_RESOURCE_BUSY", (6, 4)),
    47: ("HSA_STATUS_ERROR_NOT_SUPPORTED", (7, 2)),
}

#: hsa_status_t value -> its name
STATUS_NAMES: dict[int, str] = {
    **{v: k for k, v in HSA_STATUS.items()},
    **{v: name for v, (name, _) in NEWER_STATUS_NAMES.items()},
}


def status_name(rc: int) -> str:
    """``0x1008`` -> ``'HSA_STATUS_ERROR_OUT_OF_RESOURCES'``; unknown values keep their number."""
    return STATUS_NAMES.get(rc, f"HSA_STATUS_UNKNOWN_{rc:#x}")
