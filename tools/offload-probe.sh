#!/usr/bin/env bash
# On a GPU node, from the repository root: unpack build/offload/bundle.tar.xz (tools/offload-bundle
# made it), run the real miniqmc region for nw=16 and nw=128 under plain and app_pinned with
# OMP_TARGET_OFFLOAD=MANDATORY, and print one line per point: time per invocation (median, p10,
# p90 over the timed run, first invocation left out), invocations verified, and the copies per
# invocation LIBOMPTARGET_INFO=32 reports in one traced step. Needs bash, tar/xz, awk, sort.
#
#   tools/offload-probe.sh            STEPS=5 NWS="16 128" VARIANTS="plain app_pinned lock_mapped" to change
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${OFFLOAD_DIR:-build/offload} rtdir=build/offload-runtime
steps=${STEPS:-5} nws=${NWS:-16 128} variants=${VARIANTS:-plain app_pinned}
man=$dir/manifest.json
[ -f "$man" ] || { echo "offload-probe: no $man; build with tools/offload-bundle" >&2; exit 2; }
field() { sed -n "s/^ *\"$1\": \"\([^\"]*\)\".*/\1/p" "$man" | head -1; }
bin=$dir/$(field binary) vendor=$(field vendor)
[ -x "$bin" ] || { echo "offload-probe: $bin missing" >&2; exit 2; }

if [ -f $dir/bundle.tar.xz ]; then   # unpack once per bundle
  sum=$(sha256sum $dir/bundle.tar.xz | cut -d' ' -f1)
  if [ "$(cat $rtdir/.bundle-sha256 2>/dev/null)" != "$sum" ]; then
    rm -rf $rtdir && mkdir -p $rtdir && tar -xJf $dir/bundle.tar.xz -C $rtdir && echo "$sum" > $rtdir/.bundle-sha256
  fi
  if [ "$vendor" = nvidia ]; then   # LLVM's CUDA plugin opens libcuda.so; drivers ship libcuda.so.1
    cuda=$( (ldconfig -p 2>/dev/null || /sbin/ldconfig -p) | awk '/libcuda\.so\.1 .*x86-64/ {print $NF; exit}')
    for d in /usr/lib/x86_64-linux-gnu /usr/lib64 /usr/local/nvidia/lib64; do
      [ -n "$cuda" ] || { [ -e $d/libcuda.so.1 ] && cuda=$d/libcuda.so.1; } || true
    done
    [ -n "$cuda" ] || { echo "offload-probe: no libcuda.so.1 on this machine" >&2; exit 2; }
    ln -sfn "$cuda" $rtdir/lib/libcuda.so
  fi
fi
# the manifest's absolute entries (ROCm's lib for libhsa-runtime64, a system runtime), then the bundle's lib
for p in $(sed -n '/"ld_library_path"/,/]/p' "$man" | grep -o '"/[^"]*"' | tr -d '"'); do
  export LD_LIBRARY_PATH=$p${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
done
[ ! -f $dir/bundle.tar.xz ] || export LD_LIBRARY_PATH=$PWD/$rtdir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
unset $(env | awk -F= '/^(LIBOMPTARGET_|OMPX_)/ {print $1}') 2>/dev/null || true
export OMP_TARGET_OFFLOAD=MANDATORY
if ldd "$bin" | grep -q "not found"; then ldd "$bin" | grep "not found" >&2; exit 2; fi
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1
echo "binary: $bin  runtime: $(ldd "$bin" | awk '/libomptarget/ {print $3}')"

err=$(mktemp) csv=$(mktemp)
trap 'rm -f "$err" "$csv"' EXIT
printf '%-11s %4s %10s %9s %9s %9s %8s %8s  %s\n' variant nw median_us p10_us p90_us verified h2d/inv d2h/inv \
  "copy sizes (bytes) / facts"
for v in $variants; do
  case $v in
    lock_mapped) mode=plain; envs=(LIBOMPTARGET_LOCK_MAPPED_HOST_BUFFERS=1) ;;
    async_threshold0) mode=plain; envs=(LIBOMPTARGET_AMDGPU_MAX_ASYNC_COPY_BYTES=0) ;;
    *) mode=$v; envs=() ;;
  esac
  for nw in $nws; do
    if ! env "${envs[@]}" "$bin" --variant $mode --nw $nw --steps $steps >"$csv" 2>"$err"; then
      echo "offload-probe: $v nw=$nw failed:" >&2; tail -5 "$err" >&2; exit 1
    fi
    facts=$(awk '/^# offload/ {for (i = 2; i <= NF; i++) if ($i ~ /^(offload_devices|on_device|register|register_ns)=/) printf "%s ", $i}' "$csv")
    stats=$(awk -F, '!/^#/ {n++; if (n > 2) print $5}' "$csv" | sort -n |
            awk '{a[NR] = $1} END {printf "%10.1f %9.1f %9.1f", a[int((NR + 1) / 2)] / 1e3, a[int(NR * 0.1) + 1] / 1e3, a[int(NR * 0.9)] / 1e3}')
    ok=$(grep -c ',true$' "$csv" || true) total=$(grep -vc -e '^#' -e '^variant' "$csv" || true)
    copies=$(env "${envs[@]}" LIBOMPTARGET_INFO=32 "$bin" --variant $mode --nw $nw --steps 1 --markers 2>&1 >/dev/null |
      awk '/^pinpath-region: invocation/ {inv++; on = 1; next} /^pinpath-region: teardown/ {on = 0}
           on && /Copying data from/ {if (/from host/) h++; else d++; match($0, /Size=[0-9]+/); s[substr($0, RSTART + 5, RLENGTH - 5)]++}
           END {for (k in s) sz = sz k " "; if (inv) printf "%8.2f %8.2f  %s", h / inv, d / inv, sz}')
    printf '%-11s %4s %s %9s %s  %s\n' "$v" "$nw" "$stats" "$ok/$total" "$copies" "$facts"
  done
done
