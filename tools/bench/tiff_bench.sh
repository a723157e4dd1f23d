#!/usr/bin/env bash
# TIFF throughput against raw, side by side in one run: oocconv on the same image stored raw, as
# uncompressed TIFF (strips, tiles) and compressed (LZW, Deflate, ZSTD), written back in the same
# layout; oocgen writing each; vips tiffsave as the peer where installed. Median of --repeats runs,
# page cache warm, every output synced. Prints a table and writes tiff_bench.csv in --out.
#   tools/bench/tiff_bench.sh --bin build/release --width 16384 --height 8192 --device cpu
set -euo pipefail
bin=build/release width=16384 height=8192 type=u16 device=auto repeats=3 out=. dir=/tmp/ooc-tiff-bench
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin=$2; shift 2 ;; --width) width=$2; shift 2 ;; --height) height=$2; shift 2 ;;
    --type) type=$2; shift 2 ;; --device) device=$2; shift 2 ;; --repeats) repeats=$2; shift 2 ;;
    --out) out=$2; shift 2 ;; --dir) dir=$2; shift 2 ;;
    *) echo "tiff_bench: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$dir" "$out"
csv="$out/tiff_bench.csv"
echo "case,device,seconds_median,mb_per_s,ratio_to_raw" > "$csv"

# Median wall time of a command (output removed and synced between runs).
time_median() {
  local target=$1; shift
  local times=()
  for _ in $(seq "$repeats"); do
    rm -f "$target"; sync
    local t0 t1
    t0=$(date +%s.%N); "$@" >/dev/null; sync "$target" 2>/dev/null || sync; t1=$(date +%s.%N)
    times+=("$(awk "BEGIN {print $t1 - $t0}")")
  done
  printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

bytes_per_sample=$(case $type in u8) echo 1;; u16|i16) echo 2;; f64) echo 8;; *) echo 4;; esac)
mb=$(awk "BEGIN {print $width * $height * $bytes_per_sample / 1000000}")
"$bin/oocgen" "$dir/in.raw" --width "$width" --height "$height" --type "$type" \
  --pattern gradient -q
declare -A layouts=(
  [raw]="" [tiff-strips]="" [tiff-tiles512]="--tile 512" [tiff-lzw]="--compress lzw"
  [tiff-deflate]="--compress deflate" [tiff-zstd]="--compress zstd"
  [tiff-zstd-tiles512]="--compress zstd --tile 512")
order=(raw tiff-strips tiff-tiles512 tiff-lzw tiff-deflate tiff-zstd tiff-zstd-tiles512)
raw_s=""
printf '%-24s %-6s %10s %10s %8s\n' case device seconds MB/s vs-raw
for name in "${order[@]}"; do
  ext=tif; [ "$name" = raw ] && ext=raw
  opts=${layouts[$name]}
  in="$dir/in.$name.$ext"
  if [ "$name" = raw ]; then in="$dir/in.raw"; else
    # shellcheck disable=SC2086
    "$bin/oocconv" "$dir/in.raw" "$in" --width "$width" --type "$type" --taps 1 $opts -q --device cpu
  fi
  # shellcheck disable=SC2086
  s=$(time_median "$dir/out.$ext" "$bin/oocconv" "$in" "$dir/out.$ext" --width "$width" \
        --type "$type" --radius 8 --device "$device" $opts -q)
  [ "$name" = raw ] && raw_s=$s
  rate=$(awk "BEGIN {print $mb / $s}"); ratio=$(awk "BEGIN {print $raw_s / $s}")
  printf '%-24s %-6s %10.3f %10.0f %8.2f\n' "oocconv $name" "$device" "$s" "$rate" "$ratio"
  echo "oocconv $name,$device,$s,$rate,$ratio" >> "$csv"
  if [ "$name" != raw ]; then
    # shellcheck disable=SC2086
    g=$(time_median "$dir/gen.tif" "$bin/oocgen" "$dir/gen.tif" --width "$width" \
          --height "$height" --type "$type" --pattern gradient $opts -q)
    printf '%-24s %-6s %10.3f %10.0f %8s\n' "oocgen $name" "-" "$g" "$(awk "BEGIN {print $mb / $g}")" ""
    echo "oocgen $name,-,$g,$(awk "BEGIN {print $mb / $g}")," >> "$csv"
  fi
done
if command -v vips >/dev/null; then
  vtype=$(case $type in u8) echo uchar;; u16) echo ushort;; i16) echo short;; u32) echo uint;; i32) echo int;; f32) echo float;; f64) echo double;; esac)
  vips rawload "$dir/in.raw" "$dir/in.v" "$width" "$height" 1 --format "$vtype"
  for c in none lzw deflate zstd; do
    v=$(time_median "$dir/vips.tif" vips tiffsave "$dir/in.v" "$dir/vips.tif" --compression "$c")
    printf '%-24s %-6s %10.3f %10.0f %8s\n' "vips tiffsave $c" "-" "$v" "$(awk "BEGIN {print $mb / $v}")" ""
    echo "vips tiffsave $c,-,$v,$(awk "BEGIN {print $mb / $v}")," >> "$csv"
  done
fi
rm -rf "$dir"
