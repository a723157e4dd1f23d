#!/usr/bin/env bash
# A tuning sweep of the specialized separable kernels' shape (TilePolicy in
# kernels/cuda/separable_policy.cuh): one ooc_gpu_stages per setting, built here, run on the GPU
# machine.
#
#   tune_kernels.sh build BUILD OUT NAME=THREADS,TILE,ROWS,RUN,MINBLOCKS,BATCH[,MINBLOCKS_U8,BATCH_U8[,RUN_U8[,QUAD_MINBLOCKS]]][+FLAGS] ...
#       instantiates the separable dispatch (kernels/cuda/separable_dispatch.cuh) on
#       TilePolicy<THREADS, TILE, ...> for each setting (BUILD: a configured CUDA build, already
#       built; RUN and BATCH apply to f32/u16, u8 has its own MINBLOCKS_U8, BATCH_U8 and RUN_U8;
#       numbers left out keep the library's values) and links OUT/NAME/ooc_gpu_stages against a
#       copy of libooc.a holding that object in place of separable.cu's (FLAGS: more compiler
#       switches, '+'-separated, e.g. +-Xptxas=-v). Only radii 1, 3 and 16 get specialized kernels
#       there, to keep them small.
#   tune_kernels.sh run OUT RADII TYPES [REPEATS]
#       runs every OUT/*/ooc_gpu_stages on the 65536 x 256 band for each radius and type and
#       prints "variant,type,radius,ours Gpixel/s,fraction of the memory bound,identical,NPP
#       Gpixel/s" (identical: the output byte for byte the generic kernels'; NPP: f32 only, same
#       process).
set -euo pipefail
mode=${1:?usage: tune_kernels.sh build|run ...}
shift
case $mode in
build)
  build=$(realpath "$1") out=$(realpath -m "$2")
  shift 2
  mkdir -p "$out/obj"
  cmds=$(ninja -C "$build" -t commands tools/bench/ooc_gpu_stages)
  compile=$(grep -- '-c [^ ]*kernels/cuda/separable\.cu ' <<<"$cmds" | sed -E 's/ -MD -MT [^ ]+ -MF [^ ]+//')
  link=$(grep -- '-o tools/bench/ooc_gpu_stages ' <<<"$cmds" | sed -E 's/^: && //; s/ && :$//')
  for v in "$@"; do
    name=${v%%=*}
    spec=${v#*=}
    extra=""
    [[ $spec == *+* ]] && extra=${spec#*+} && spec=${spec%%+*}
    IFS=, read -r -a numbers <<<"$spec"
    if ((${#numbers[@]} < 6 || ${#numbers[@]} > 10)); then
      echo "tune_kernels.sh: $name needs 6 to 10 numbers, not '$spec'" >&2
      exit 2
    fi
    policy="separable::TilePolicy<${spec//,/, }>"
    mkdir -p "$out/obj/$name" "$out/$name"
    src="$out/obj/$name/separable_tuned.cu"
    obj="$out/obj/$name/separable.cu.o"  # the archive member's name
    {
      echo "// separable.cu's entry points on a tuning under test (tools/bench/tune_kernels.sh)."
      echo '#include "kernels/cuda/separable_dispatch.cuh"'
      echo "namespace ooc::cuda {"
      echo "using Tuned = separable::Dispatch<"
      echo "    separable::SeparablePolicy<$policy, separable::RadiusList<1, 3, 16>>>;"
      echo "SeparablePath separable_path(const SeparableLaunch& a) { return Tuned::path(a); }"
      echo "void separable_band_async(const SeparableLaunch& a, cudaStream_t s) {"
      echo "  Tuned::band_async(a, s);"
      echo "}"
      echo "}  // namespace ooc::cuda"
    } >"$src"
    c=$(sed -E "s# -c [^ ]*kernels/cuda/separable\.cu -o [^ ]+# ${extra//+/ } -c $src -o $obj#" <<<"$compile")
    (cd "$build" && eval "$c")
    cp "$build/libooc.a" "$out/obj/$name/libooc.a"
    ar r "$out/obj/$name/libooc.a" "$obj"
    l=${link/ -o tools\/bench\/ooc_gpu_stages / -o $out/$name/ooc_gpu_stages }
    (cd "$build" && eval "${l/ libooc.a / $out/obj/$name/libooc.a }")
    strip "$out/$name/ooc_gpu_stages"
    echo "$name: $policy ${extra//+/ }"
  done
  rm -rf "$out/obj"
  ;;
run)
  out=$1 radii=$2 types=$3 repeats=${4:-20}
  echo "variant,type,radius,gpixel_per_s,mem_bound_fraction,identical,npp_gpixel_per_s"
  for exe in "$out"/*/ooc_gpu_stages; do
    name=$(basename "$(dirname "$exe")")
    for t in ${types//,/ }; do
      for r in ${radii//,/ }; do
        csv=$(mktemp)
        "$exe" --stages kernels --radius "$r" --type "$t" --repeats "$repeats" --csv "$csv" >/dev/null
        # The kernels row: the path the pipeline takes (not kernels-generic, not NPP).
        python3 -c 'import csv, sys
rows = {row["stage"]: row for row in csv.DictReader(open(sys.argv[1]))}
k = rows["kernels"]
same = "byte-identical to the generic" in k["note"]
npp = rows["npp"]["gpixel_per_s"] if "npp" in rows else ""
print(",".join(sys.argv[2:] + [k["gpixel_per_s"], k["mem_bound_fraction"], "yes" if same else "NO", npp]))' "$csv" "$name" "$t" "$r"
        rm -f "$csv"
      done
    done
  done
  ;;
*)
  echo "usage: tune_kernels.sh build|run ..." >&2
  exit 2
  ;;
esac
