// What pinpath's offload applications (region.cpp, stencil.cpp) share: a clock, a one-sentence exit,
// the application's own pinning (app_pinned) and page-aligned arrays. Header-only, included once per binary.
#pragma once

#include <omp.h>

#include <dlfcn.h>
#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <type_traits>

// PINPATH_VENDOR: 1 NVIDIA (nvptx64), 2 AMD (amdgcn), 0 no GPU (host build, tests)
#ifndef PINPATH_VENDOR
#define PINPATH_VENDOR 0
#endif

// an OpenMP pragma from a macro's arguments (so that one macro can write a region under several clauses)
#define PINPATH_STR(x) #x
#define PINPATH_PRAGMA(x) _Pragma(PINPATH_STR(x))

namespace pinpath {

constexpr size_t kPageNbytes = 4096;
inline const char *program = "offload";   // the prefix of every message; main sets it

using Clock = std::chrono::steady_clock;

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

[[noreturn]] inline void die(int code, const std::string &msg) {
  std::fprintf(stderr, "%s: %s\n", program, msg.c_str());
  std::exit(code);
}

// what every offload application takes: --variant plain|app_pinned, --markers, --allow-host
struct CommonOptions {
  std::string variant = "plain";
  bool markers = false, allow_host = false;
};

// every option of argv: the common ones into c, the others through f(option, value) (value() takes the
// next word); f says whether it knew the option. An unknown option, a missing value or an unknown
// variant ends the program with status 2.
template <class F> void for_each_option(int argc, char **argv, CommonOptions &c, F &&f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) die(2, "option " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--variant") c.variant = value();
    else if (a == "--markers") c.markers = true;
    else if (a == "--allow-host") c.allow_host = true;
    else if (!f(a, value)) die(2, "unknown option " + a);
  }
  if (c.variant != "plain" && c.variant != "app_pinned") die(2, "--variant is plain or app_pinned");
}

// option a's value into field when a is name: an integer (the whole word, or the program ends with
// status 2) or, for a std::string field, the word itself. Says whether a was name.
template <class V, class T> bool option(const std::string &a, const char *name, V &value, T &field) {
  if (a != name) return false;
  const std::string word = value();
  if constexpr (std::is_same_v<T, std::string>) {
    field = word;
  } else {
    char *end = nullptr;
    errno = 0;
    const long long n = std::strtoll(word.c_str(), &end, 10);
    if (word.empty() || *end || errno) die(2, a + " needs an integer, got " + word);
    field = static_cast<T>(n);
  }
  return true;
}

// one probe region before anything is timed: does a target region run on the device? Ends the program
// (status 3) where it runs on the host, unless allow_host (tests of a build without offload).
inline bool on_device(bool allow_host) {
  int initial = 1;
#pragma omp target map(from : initial)
  { initial = omp_is_initial_device(); }
  if (initial && !allow_host)
    die(3, "the target region ran on the host (offload devices: " + std::to_string(omp_get_num_devices()) +
               "); set OMP_TARGET_OFFLOAD=MANDATORY to see why the runtime fell back");
  return !initial;
}

// -- the application's own pinning (app_pinned), resolved at run time: no link-time GPU dependency --
// NVIDIA: cuMemHostRegister from libcuda.so.1, the driver library every NVIDIA node has (the CUDA
// plugin loads it too), in the device's primary context, which is the one cudaHostRegister and
// libomptarget use; flags 0 = cudaHostRegisterDefault. libcudart is a toolkit library that a node
// need not have on its search path. AMD: hipHostRegister from libamdhip64, as QMCPACK does.
// No GPU: mlock, the host platform's page locking.
struct Pinner {
  std::string how = "mlock";
  void *lib = nullptr;
  int (*reg)(void *, size_t, unsigned) = nullptr;
  int (*unreg)(void *) = nullptr;
  int (*push)(void *) = nullptr;   // NVIDIA: make the primary context current around each call
  int (*pop)(void **) = nullptr;
  void *ctx = nullptr;

  template <class F> F sym(const char *name) {
    void *p = dlsym(lib, name);
    if (!p) die(5, std::string("app_pinned: ") + name + " not found (" + how + ")");
    return reinterpret_cast<F>(p);
  }

  void open() {
#if PINPATH_VENDOR == 1
    how = "cuMemHostRegister";
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) die(5, "app_pinned: libcuda.so.1 cannot be loaded");
    int device = 0;
    int rc = sym<int (*)(unsigned)>("cuInit")(0);
    if (rc == 0) rc = sym<int (*)(int *, int)>("cuDeviceGet")(&device, omp_get_default_device());
    if (rc == 0) rc = sym<int (*)(void **, int)>("cuDevicePrimaryCtxRetain")(&ctx, device);
    if (rc != 0) die(5, "app_pinned: no CUDA primary context (CUresult " + std::to_string(rc) + ")");
    reg = sym<int (*)(void *, size_t, unsigned)>("cuMemHostRegister_v2");
    unreg = sym<int (*)(void *)>("cuMemHostUnregister");
    push = sym<int (*)(void *)>("cuCtxPushCurrent_v2");
    pop = sym<int (*)(void **)>("cuCtxPopCurrent_v2");
#elif PINPATH_VENDOR == 2
    how = "hipHostRegister";
    lib = dlopen("libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("/opt/rocm/lib/libamdhip64.so", RTLD_NOW | RTLD_LOCAL);
    if (!lib) die(5, "app_pinned: libamdhip64.so cannot be loaded");
    reg = sym<int (*)(void *, size_t, unsigned)>("hipHostRegister");   // hipHostRegisterDefault = 0
    unreg = sym<int (*)(void *)>("hipHostUnregister");
#endif
  }

  int lock(void *p, size_t n) {
    if (!reg) return mlock(p, n) == 0 ? 0 : errno;
    if (push && push(ctx) != 0) return -1;
    const int rc = reg(p, n, 0u);
    void *old = nullptr;
    if (pop) pop(&old);
    return rc;
  }

  int unlock(void *p, size_t n) {
    if (!unreg) return munlock(p, n) == 0 ? 0 : errno;
    if (push && push(ctx) != 0) return -1;
    const int rc = unreg(p);
    void *old = nullptr;
    if (pop) pop(&old);
    return rc;
  }
};

inline void *page_aligned(size_t nbytes) {
  // page-aligned so two registrations of app_pinned never share a page
  size_t rounded = (nbytes + kPageNbytes - 1) / kPageNbytes * kPageNbytes;
  void *p = std::aligned_alloc(kPageNbytes, rounded);
  if (!p) die(1, "out of memory");
  return p;
}

}  // namespace pinpath
