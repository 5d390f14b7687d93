/* Prints the layout of every HSA struct and the value of every HSA constant that
 * pinpath's ctypes bindings (runtimes/hsa_abi.py) use, from the real headers, one per line:
 *   sizeof <type> <bytes>
 *   offsetof <type> <member> <bytes>
 *   const <name> <value>
 * tests/runtimes/test_hsa.py compiles it at test time and compares each line with the
 * bindings. No HSA call is made, so it runs without a GPU and without linking the runtime.
 * Everything listed here exists, with these values, from ROCm 5.2 to 7.2; statuses added
 * later (45-47) and optional prototypes are probed by the test itself, release by release.
 * Build: cc -std=c11 -I<include dir holding hsa/> hsa_layout.c -o hsa_layout
 */
#include <stddef.h>
#include <stdio.h>

#include <hsa/hsa.h>
#include <hsa/hsa_ext_amd.h>

#define SIZE(t) printf("sizeof %s %zu\n", #t, sizeof(t))
#define OFF(t, m) printf("offsetof %s %s %zu\n", #t, #m, offsetof(t, m))
#define CONST(c) printf("const %s %lld\n", #c, (long long)(c))

int main(void) {
    SIZE(hsa_agent_t);
    OFF(hsa_agent_t, handle);
    SIZE(hsa_signal_t);
    OFF(hsa_signal_t, handle);
    SIZE(hsa_amd_memory_pool_t);
    OFF(hsa_amd_memory_pool_t, handle);

    SIZE(hsa_amd_pointer_info_t);
    OFF(hsa_amd_pointer_info_t, size);
    OFF(hsa_amd_pointer_info_t, type);
    OFF(hsa_amd_pointer_info_t, agentBaseAddress);
    OFF(hsa_amd_pointer_info_t, hostBaseAddress);
    OFF(hsa_amd_pointer_info_t, sizeInBytes);
    OFF(hsa_amd_pointer_info_t, userData);
    OFF(hsa_amd_pointer_info_t, agentOwner);
    OFF(hsa_amd_pointer_info_t, global_flags);

    SIZE(hsa_amd_profiling_async_copy_time_t);
    OFF(hsa_amd_profiling_async_copy_time_t, start);
    OFF(hsa_amd_profiling_async_copy_time_t, end);

    /* hsa_status_t (hsa.h) */
    CONST(HSA_STATUS_SUCCESS);
    CONST(HSA_STATUS_INFO_BREAK);
    CONST(HSA_STATUS_ERROR);
    CONST(HSA_STATUS_ERROR_INVALID_ARGUMENT);
    CONST(HSA_STATUS_ERROR_INVALID_QUEUE_CREATION);
    CONST(HSA_STATUS_ERROR_INVALID_ALLOCATION);
    CONST(HSA_STATUS_ERROR_INVALID_AGENT);
    CONST(HSA_STATUS_ERROR_INVALID_REGION);
    CONST(HSA_STATUS_ERROR_INVALID_SIGNAL);
    CONST(HSA_STATUS_ERROR_INVALID_QUEUE);
    CONST(HSA_STATUS_ERROR_OUT_OF_RESOURCES);
    CONST(HSA_STATUS_ERROR_INVALID_PACKET_FORMAT);
    CONST(HSA_STATUS_ERROR_RESOURCE_FREE);
    CONST(HSA_STATUS_ERROR_NOT_INITIALIZED);
    CONST(HSA_STATUS_ERROR_REFCOUNT_OVERFLOW);
    CONST(HSA_STATUS_ERROR_INCOMPATIBLE_ARGUMENTS);
    CONST(HSA_STATUS_ERROR_INVALID_INDEX);
    CONST(HSA_STATUS_ERROR_INVALID_ISA);
    CONST(HSA_STATUS_ERROR_INVALID_CODE_OBJECT);
    CONST(HSA_STATUS_ERROR_INVALID_EXECUTABLE);
    CONST(HSA_STATUS_ERROR_FROZEN_EXECUTABLE);
    CONST(HSA_STATUS_ERROR_INVALID_SYMBOL_NAME);
    CONST(HSA_STATUS_ERROR_VARIABLE_ALREADY_DEFINED);
    CONST(HSA_STATUS_ERROR_VARIABLE_UNDEFINED);
    CONST(HSA_STATUS_ERROR_EXCEPTION);
    CONST(HSA_STATUS_ERROR_INVALID_ISA_NAME);
    CONST(HSA_STATUS_ERROR_INVALID_CODE_SYMBOL);
    CONST(HSA_STATUS_ERROR_INVALID_EXECUTABLE_SYMBOL);
    CONST(HSA_STATUS_ERROR_INVALID_FILE);
    CONST(HSA_STATUS_ERROR_INVALID_CODE_OBJECT_READER);
    CONST(HSA_STATUS_ERROR_INVALID_CACHE);
    CONST(HSA_STATUS_ERROR_INVALID_WAVEFRONT);
    CONST(HSA_STATUS_ERROR_INVALID_SIGNAL_GROUP);
    CONST(HSA_STATUS_ERROR_INVALID_RUNTIME_STATE);
    CONST(HSA_STATUS_ERROR_FATAL);
    /* AMD additions (hsa_ext_amd.h) */
    CONST(HSA_STATUS_ERROR_INVALID_MEMORY_POOL);
    CONST(HSA_STATUS_ERROR_MEMORY_APERTURE_VIOLATION);
    CONST(HSA_STATUS_ERROR_ILLEGAL_INSTRUCTION);
    CONST(HSA_STATUS_ERROR_MEMORY_FAULT);
    CONST(HSA_STATUS_CU_MASK_REDUCED);

    CONST(HSA_SYSTEM_INFO_VERSION_MAJOR);
    CONST(HSA_SYSTEM_INFO_VERSION_MINOR);
    CONST(HSA_SYSTEM_INFO_TIMESTAMP);
    CONST(HSA_SYSTEM_INFO_TIMESTAMP_FREQUENCY);

    CONST(HSA_AGENT_INFO_NAME);
    CONST(HSA_AGENT_INFO_NODE);
    CONST(HSA_AGENT_INFO_DEVICE);
    CONST(HSA_AMD_AGENT_INFO_PRODUCT_NAME);
    CONST(HSA_DEVICE_TYPE_CPU);
    CONST(HSA_DEVICE_TYPE_GPU);

    CONST(HSA_AMD_MEMORY_POOL_INFO_SEGMENT);
    CONST(HSA_AMD_MEMORY_POOL_INFO_GLOBAL_FLAGS);
    CONST(HSA_AMD_MEMORY_POOL_INFO_SIZE);
    CONST(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALLOWED);
    CONST(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_GRANULE);
    CONST(HSA_AMD_MEMORY_POOL_INFO_RUNTIME_ALLOC_ALIGNMENT);
    CONST(HSA_AMD_SEGMENT_GLOBAL);
    CONST(HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_KERNARG_INIT);
    CONST(HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_FINE_GRAINED);
    CONST(HSA_AMD_MEMORY_POOL_GLOBAL_FLAG_COARSE_GRAINED);

    CONST(HSA_EXT_POINTER_TYPE_UNKNOWN);
    CONST(HSA_EXT_POINTER_TYPE_HSA);
    CONST(HSA_EXT_POINTER_TYPE_LOCKED);
    CONST(HSA_EXT_POINTER_TYPE_GRAPHICS);
    CONST(HSA_EXT_POINTER_TYPE_IPC);

    CONST(HSA_SIGNAL_CONDITION_LT);
    CONST(HSA_WAIT_STATE_BLOCKED);
    return 0;
}
