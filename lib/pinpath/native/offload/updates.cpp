// A probe of what one `target update` costs through the offload runtime, for pinpath advise's
// runtime term (issue 22): advise replays an application's copies with the native engine, which
// times the copies alone; the runtime adds its own work to each one (finding the mapping, a queue,
// the wait). This program measures updates without any application: one array is mapped once; then,
// for each size in a shuffled order, ten untimed rounds and --rounds timed rounds, each a `target
// update to` and a `target update from` of the array's first bytes, timed alone. The sizes take turns
// in blocks, not round by round: an application moves the same array again and again, and a 16 MiB
// copy between two 4 KiB ones would leave the small ones in a state no such application gives them.
// advise subtracts the engine's time for a copy of the same size and direction.
// --construct region: the copy as a map clause of a target region instead (an application's
// `target ... map(always, to: x)`): per round and direction, a region whose only map is the array's
// first bytes with `always` (the copy moves) and the same region without it (the array is present:
// nothing moves), in turns; the row's ns is the first less the second, the copy's share of a region
// (it can be below the copy's own time: the region waits once for its copies and its kernel).
// Between copies the host uses the array as an application does, outside the timing: it writes the
// bytes that go to the device before a copy to it and reads what came back after a copy from it, so a
// copy meets the array's lines in the host's caches as an application's copy does (the region and
// the stencil write what they send and read what they receive). It never writes a D2H's destination
// just before the copy: no application overwrites what it is about to receive (the stencil's host
// only reads its halo rows). Without --layout a round's D2H brings back the bytes its H2D has just
// sent, so their lines were written one copy before. Under --construct region both regions of a
// pair are written before and read after (region_share).
//
// --layout FILE: the traced application's own buffers and copies instead of slices of one array
// (pinpath advise writes it from the trace). Lines:
//   array NBYTES OWNER [per_step]               OWNER application (heap: page-aligned, registered under
//                                               app_pinned), stack or runtime (both on this program's
//                                               stack, never registered: what a local variable and the
//                                               runtime's launch environment are); per_step: the rounds
//                                               map and unmap it themselves (its copies at map and unmap)
//   copy ARRAY OFFSET NBYTES DIR EVERY [AT]     one copy of bytes [OFFSET, OFFSET+NBYTES) of array ARRAY
//                                               (0-based, in file order), made every EVERY-th round; AT
//                                               update (default: a target update, or a region's map with
//                                               --construct region), map (`target enter data map(to:)`:
//                                               a new map entry and its copy), unmap (`target exit data
//                                               map(from:)`: the copy and the entry's removal); DIR h2d,
//                                               d2h, or none for a map without a copy (map(alloc:)) or an
//                                               unmap without one (map(release:))
// Every array but a per_step one is mapped on its own (`target enter data`) before the rounds; a round
// makes the copies in file order, each timed alone, so each copy meets the runtime's table, the driver
// and the host's caches as the application's sequence leaves them; rows carry the copy's index (column
// copy) and its AT (column at).
//
// Usage: updates [--nbytes N[,N...] (8)] [--rounds R (200)] [--seed K (1)] [--variant plain|app_pinned]
//                [--construct update|region] [--layout FILE] [--allow-host] [--markers]
// app_pinned: the array is registered first (as region and stencil do).
// Afterwards, outside the timing, two round trips of the largest size check that both directions
// moved the bytes (not on the host, where there is no second copy to check).
// stdout: '#'-lines of facts (key=value), then CSV: variant,direction,nbytes,round,ns (--layout: and copy,at).
// Exit status: 0 ok, 2 usage, 3 not on the device, 4 wrong bytes, 5 registration failed.

#include "common.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <sstream>
#include <random>
#include <string>
#include <vector>

using namespace pinpath;

namespace {

struct Options : CommonOptions {
  std::string nbytes = "8";
  std::vector<long> sizes;
  int rounds = 200;
  uint64_t seed = 1;
  std::string construct = "update";
  std::string layout;
};

struct Array { long nbytes; bool stack, per_step; unsigned char *p = nullptr; };
enum class At { update, map, unmap };
struct Copy { long array, offset, nbytes; bool h2d, none; long every; At at; };
const char *at_name(At at) { return at == At::map ? "map" : at == At::unmap ? "unmap" : "update"; }

constexpr long kStackAreaNbytes = 1L << 20;   // the stack and runtime buffers of a layout, together

// the layout file's arrays and copies; a malformed line ends the program with status 2
void read_layout(const std::string &path, std::vector<Array> &arrays, std::vector<Copy> &copies) {
  std::ifstream in(path);
  if (!in) die(2, "--layout " + path + " cannot be read");
  std::string line;
  for (int number = 1; std::getline(in, line); ++number) {
    std::istringstream words(line);
    std::string kind, owner, dir, extra;
    words >> kind;
    bool ok = false;
    if (kind.empty() || kind[0] == '#') continue;
    if (kind == "array") {
      Array a{};
      ok = static_cast<bool>(words >> a.nbytes >> owner) && a.nbytes >= 1 && a.nbytes <= (1L << 32) &&
           (owner == "application" || owner == "stack" || owner == "runtime");
      if (words >> extra) ok = ok && extra == "per_step";
      a.stack = owner != "application";
      a.per_step = extra == "per_step";
      arrays.push_back(a);
    } else if (kind == "copy") {
      Copy c{};
      ok = static_cast<bool>(words >> c.array >> c.offset >> c.nbytes >> dir >> c.every) && c.array >= 0 &&
           c.array < static_cast<long>(arrays.size()) && c.offset >= 0 && c.nbytes >= 1 && c.every >= 1 &&
           c.offset + c.nbytes <= arrays[static_cast<size_t>(c.array)].nbytes &&
           (dir == "h2d" || dir == "d2h" || dir == "none");
      c.h2d = dir == "h2d";
      c.none = dir == "none";
      c.at = At::update;
      if (words >> extra) {
        c.at = extra == "map" ? At::map : extra == "unmap" ? At::unmap : At::update;
        ok = ok && (extra == "update" || extra == "map" || extra == "unmap");
      }
      // a map copies to the device, an unmap from it; a copy at either is its array's, mapped per step
      ok = ok && (c.none ? c.at != At::update : c.at == At::update || c.h2d == (c.at == At::map)) &&
           (c.at == At::update || arrays[static_cast<size_t>(c.array)].per_step);
      copies.push_back(c);
    }
    if (!ok) die(2, "--layout " + path + ": line " + std::to_string(number) + " cannot be read: " + line);
  }
  if (copies.empty()) die(2, "--layout " + path + " has no copy");
}

Options parse(int argc, char **argv) {
  Options o;
  for_each_option(argc, argv, o, [&](const std::string &a, auto &value) {
    return option(a, "--nbytes", value, o.nbytes) || option(a, "--rounds", value, o.rounds) ||
           option(a, "--seed", value, o.seed) || option(a, "--construct", value, o.construct) ||
           option(a, "--layout", value, o.layout);
  });
  if (o.construct != "update" && o.construct != "region") die(2, "--construct is update or region");
  for (size_t at = 0; at <= o.nbytes.size();) {   // a comma-separated list of sizes
    const size_t comma = std::min(o.nbytes.find(',', at), o.nbytes.size());
    const std::string word = o.nbytes.substr(at, comma - at);
    char *end = nullptr;
    const long n = std::strtol(word.c_str(), &end, 10);
    if (word.empty() || *end || n < 1 || n > (1L << 30)) die(2, "--nbytes takes sizes 1..1073741824, got " + word);
    o.sizes.push_back(n);
    at = comma + 1;
  }
  if (o.rounds < 1) die(2, "--rounds must be >= 1");
  return o;
}

void pattern(unsigned char *a, long n, unsigned seed) {
  for (long i = 0; i < n; ++i) a[i] = static_cast<unsigned char>(1 + (i * 131 + seed) % 251);   // never 0
}

// one round trip outside the timing: host -> device with pattern seed, host poisoned, device -> host
bool round_trip(unsigned char *a, long n, unsigned seed) {
  pattern(a, n, seed);
#pragma omp target update to(a[0:n])
  std::memset(a, 0xA5, static_cast<size_t>(n));
#pragma omp target update from(a[0:n])
  std::vector<unsigned char> want(static_cast<size_t>(n));
  pattern(want.data(), n, seed);
  return std::memcmp(want.data(), a, static_cast<size_t>(n)) == 0;
}

// the same through a new map entry and its removal (a per_step array, not mapped between rounds)
bool round_trip_mapped(unsigned char *a, long n, unsigned seed) {
  pattern(a, n, seed);
#pragma omp target enter data map(to : a[0:n])
  std::memset(a, 0xA5, static_cast<size_t>(n));
#pragma omp target exit data map(from : a[0:n])
  std::vector<unsigned char> want(static_cast<size_t>(n));
  pattern(want.data(), n, seed);
  return std::memcmp(want.data(), a, static_cast<size_t>(n)) == 0;
}

// one map or unmap (copy.at) of p[0:m], timed: with its copy, or without (copy.none)
int64_t map_or_unmap(const Copy &c, unsigned char *p, long m) {
  const int64_t t0 = now_ns();
  if (c.at == At::map && !c.none) {
#pragma omp target enter data map(to : p[0:m])
  } else if (c.at == At::map) {
#pragma omp target enter data map(alloc : p[0:m])
  } else if (!c.none) {
#pragma omp target exit data map(from : p[0:m])
  } else {
#pragma omp target exit data map(release : p[0:m])
  }
  return now_ns() - t0;
}

// the host's use of the array between copies (untimed): it writes what goes to the device (never
// zeros) before the copy, and reads what came back after it
void host_writes(unsigned char *a, long m, int round) {
  std::memset(a, 1 + (round & 127), static_cast<size_t>(m));
}
volatile long host_sink;
void host_reads(const unsigned char *a, long m) {
  long s = 0;
  for (long i = 0; i < m; i += 64) s += a[i];   // every cache line
  host_sink = s;
}

// NAME(a, m, copy): the time of one target region whose only map is a[0:m] in direction DIR, with
// `always` (copy: the bytes move) or without (the array is present: nothing moves). The body
// touches a[0], so the region is the array's.
#define PINPATH_REGION_TIMER(NAME, DIR)                         \
  int64_t NAME(unsigned char *a, long m, bool copy) {           \
    const int64_t t0 = now_ns();                                \
    if (copy) {                                                 \
      PINPATH_PRAGMA(omp target map(always, DIR : a[0:m]))      \
      { a[0] = a[0]; }                                          \
    } else {                                                    \
      PINPATH_PRAGMA(omp target map(DIR : a[0:m]))              \
      { a[0] = a[0]; }                                          \
    }                                                           \
    return now_ns() - t0;                                       \
  }
PINPATH_REGION_TIMER(region_to, to)
PINPATH_REGION_TIMER(region_from, from)

// the copy's share of a region: the region with the copy less the same region without, the order
// of the two alternating with the round; the host uses the array before and after each
int64_t region_share(int64_t (*timer)(unsigned char *, long, bool), unsigned char *a, long m, int round) {
  int64_t ns[2];
  for (int k = 0; k < 2; ++k) {
    const bool copy = (k == 0) == (round % 2 == 0);
    host_writes(a, m, round);
    ns[copy ? 0 : 1] = timer(a, m, copy);
    host_reads(a, m);
  }
  return ns[0] - ns[1];
}

// --layout: the application's arrays, each mapped alone, and its copies in order. Rows into rows.
template <class Row>
bool run_layout(const Options &o, bool initial, std::vector<Row> &rows) {
  std::vector<Array> arrays;
  std::vector<Copy> copies;
  read_layout(o.layout, arrays, copies);
  alignas(kPageNbytes) unsigned char stack_area[kStackAreaNbytes];   // a local variable is on the stack
  long stack_used = 0;
  Pinner pin;
  if (o.variant == "app_pinned") pin.open();
  for (Array &a : arrays) {
    if (a.stack) {
      stack_used = (stack_used + 63) / 64 * 64;
      if (stack_used + a.nbytes > kStackAreaNbytes) die(2, "--layout: the stack buffers exceed 1 MiB together");
      a.p = stack_area + stack_used;
      stack_used += a.nbytes;
    } else {
      a.p = static_cast<unsigned char *>(page_aligned(static_cast<size_t>(a.nbytes)));
    }
    pattern(a.p, a.nbytes, 7);
    if (!a.stack && o.variant == "app_pinned") {   // what the user can register, the application does
      const int rc = pin.lock(a.p, static_cast<size_t>(a.nbytes));
      if (rc != 0) die(5, "app_pinned: " + pin.how + " failed with " + std::to_string(rc));
    }
    if (a.per_step) continue;   // the rounds map and unmap it
    unsigned char *p = a.p;
    const long n = a.nbytes;
#pragma omp target enter data map(to : p[0:n])
  }
  std::printf("# offload_devices=%d on_device=%d vendor=%d variant=%s construct=%s layout=%s arrays=%zu copies=%zu "
              "rounds=%d register=%s\n",
              omp_get_num_devices(), initial ? 0 : 1, PINPATH_VENDOR, o.variant.c_str(), o.construct.c_str(),
              o.layout.c_str(), arrays.size(), copies.size(), o.rounds,
              o.variant == "app_pinned" ? pin.how.c_str() : "none");
  for (int r = -10; r < o.rounds; ++r) {   // rounds below 0 warm up
    if (o.markers) std::fprintf(stderr, "pinpath-region: invocation step=0 invocation=%d\n", r < 0 ? 0 : r);
    for (size_t i = 0; i < copies.size(); ++i) {
      const Copy &c = copies[i];
      if ((r + 10) % c.every != 0) continue;
      unsigned char *p = arrays[static_cast<size_t>(c.array)].p + c.offset;
      const long m = c.nbytes;
      int64_t ns;
      if (c.at != At::update) {   // the host writes what a map sends and reads what an unmap brought
        if (!c.none && c.h2d) host_writes(p, m, r);
        ns = map_or_unmap(c, p, m);
        if (!c.none && !c.h2d) host_reads(p, m);
      } else if (o.construct == "region") {
        ns = region_share(c.h2d ? region_to : region_from, p, m, r);
      } else if (c.h2d) {
        host_writes(p, m, r);
        const int64_t t0 = now_ns();
#pragma omp target update to(p[0:m])
        ns = now_ns() - t0;
      } else {
        const int64_t t0 = now_ns();
#pragma omp target update from(p[0:m])
        ns = now_ns() - t0;
        host_reads(p, m);
      }
      if (r >= 0) rows.push_back({c.h2d, c.none, m, r, ns, static_cast<long>(i), c.at});
    }
  }
  // on the host (--allow-host) the "device" copy is the array itself: nothing to check
  bool ok = true;
  for (Array &a : arrays) {
    if (!initial && !a.stack) ok = ok && (a.per_step ? round_trip_mapped : round_trip)(a.p, a.nbytes, 11);
    unsigned char *p = a.p;
    const long n = a.nbytes;
    if (!a.per_step) {
#pragma omp target exit data map(delete : p[0:n])
    }
    if (!a.stack) {
      if (o.variant == "app_pinned") pin.unlock(a.p, static_cast<size_t>(a.nbytes));
      std::free(a.p);
    }
  }
  return ok;
}

}  // namespace

int main(int argc, char **argv) {
  pinpath::program = "updates";
  const Options o = parse(argc, argv);
  struct Row { bool h2d, none; long nbytes; int round; int64_t ns; long copy; At at; };
  std::vector<Row> rows;
  if (!o.layout.empty()) {
    const bool initial = !on_device(o.allow_host);
    const bool ok = run_layout(o, initial, rows);
    std::printf("# checked=%d wrong=%d\n", initial ? 0 : 1, ok ? 0 : 1);
    std::printf("variant,direction,nbytes,round,ns,copy,at\n");
    for (const Row &r : rows)
      std::printf("%s,%s,%ld,%d,%lld,%ld,%s\n", o.variant.c_str(), r.none ? "none" : r.h2d ? "h2d" : "d2h", r.nbytes,
                  r.round, static_cast<long long>(r.ns), r.copy, at_name(r.at));
    std::fflush(stdout);
    if (!ok) die(4, "a round trip through the device did not bring the bytes back");
    return 0;
  }
  const long n = *std::max_element(o.sizes.begin(), o.sizes.end());
  auto *a = static_cast<unsigned char *>(page_aligned(static_cast<size_t>(n)));
  pattern(a, n, 7);
  const bool initial = !on_device(o.allow_host);

  Pinner pin;
  int register_rc = 0;
  if (o.variant == "app_pinned") {
    pin.open();
    register_rc = pin.lock(a, static_cast<size_t>(n));
    if (register_rc != 0) die(5, "app_pinned: " + pin.how + " failed with " + std::to_string(register_rc));
  }
#pragma omp target enter data map(to : a[0:n])
  std::printf("# offload_devices=%d on_device=%d vendor=%d variant=%s construct=%s nbytes=%s rounds=%d register=%s "
              "register_rc=%d\n",
              omp_get_num_devices(), initial ? 0 : 1, PINPATH_VENDOR, o.variant.c_str(), o.construct.c_str(),
              o.nbytes.c_str(), o.rounds, o.variant == "app_pinned" ? pin.how.c_str() : "none", register_rc);

  rows.reserve(2 * o.sizes.size() * static_cast<size_t>(o.rounds));
  std::vector<long> order = o.sizes;
  std::mt19937_64 rng(o.seed);
  std::shuffle(order.begin(), order.end(), rng);
  for (const long m : order) {
    for (int r = -10; r < o.rounds; ++r) {   // rounds below 0 warm up
      if (o.markers) std::fprintf(stderr, "pinpath-region: invocation step=0 invocation=%d\n", r < 0 ? 0 : r);
      int64_t h2d, d2h;
      if (o.construct == "region") {
        h2d = region_share(region_to, a, m, r);
        d2h = region_share(region_from, a, m, r);
      } else {
        host_writes(a, m, r);
        int64_t t0 = now_ns();
#pragma omp target update to(a[0:m])
        h2d = now_ns() - t0;
        t0 = now_ns();
#pragma omp target update from(a[0:m])
        d2h = now_ns() - t0;
        host_reads(a, m);
      }
      if (r >= 0) {
        rows.push_back({true, false, m, r, h2d, -1, At::update});
        rows.push_back({false, false, m, r, d2h, -1, At::update});
      }
    }
  }
  // on the host (--allow-host) the "device" copy is the array itself: nothing to check
  const bool ok = initial || (round_trip(a, n, 11) && round_trip(a, n, 23));
#pragma omp target exit data map(delete : a[0:n])
  if (o.variant == "app_pinned") pin.unlock(a, static_cast<size_t>(n));

  std::printf("# checked=%d wrong=%d\n", initial ? 0 : 1, ok ? 0 : 1);
  std::printf("variant,direction,nbytes,round,ns\n");
  for (const Row &r : rows)
    std::printf("%s,%s,%ld,%d,%lld\n", o.variant.c_str(), r.h2d ? "h2d" : "d2h", r.nbytes, r.round,
                static_cast<long long>(r.ns));
  std::fflush(stdout);
  std::free(a);
  if (!ok) die(4, "a round trip through the device did not bring the bytes back");
  return 0;
}
