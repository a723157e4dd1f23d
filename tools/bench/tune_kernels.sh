#!/usr/bin/env bash
# A tuning sweep of the specialized separable kernels' shape (OOC_TUNE_* in
# kernels/cuda/separable.cu): one ooc_gpu_stages per setting, built here, run on the GPU machine.
#
#   tune_kernels.sh build BUILD OUT NAME=THREADS,TILE,ROWS,RUN,MINBLOCKS,BATCH[,MINBLOCKS_U8,BATCH_U8][+DEFS] ...
#       compiles separable.cu with each setting (BUILD: a configured CUDA build, already built;
#       RUN and BATCH apply to f32/u16, u8 has its own MINBLOCKS_U8 and BATCH_U8 and keeps a run of 16)
#       and links OUT/NAME/ooc_gpu_stages against a copy of libooc.a holding that object (DEFS:
#       more -D switches, '+'-separated, e.g. +-DOOC_TUNE_BULK=1+-DOOC_TUNE_BULK_DEPTH=2). Only
#       radii 1, 3 and 16 get specialized kernels there (OOC_TUNE_FEW_RADII), to keep them small.
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
  compile=$(grep -- '-c .*kernels/cuda/separable.cu' <<<"$cmds" | sed -E 's/ -MD -MT [^ ]+ -MF [^ ]+//')
  link=$(grep -- '-o tools/bench/ooc_gpu_stages ' <<<"$cmds" | sed -E 's/^: && //; s/ && :$//')
  for v in "$@"; do
    name=${v%%=*}
    spec=${v#*=}
    extra=""
    [[ $spec == *+* ]] && extra=${spec#*+} && spec=${spec%%+*}
    IFS=, read -r threads tile rows run blocks batch blocks8 batch8 <<<"$spec"
    defs="-DOOC_TUNE_THREADS=$threads -DOOC_TUNE_TILE_SAMPLES=$tile -DOOC_TUNE_FUSED_ROWS=$rows"
    defs+=" -DOOC_TUNE_FUSED_RUN=$run -DOOC_TUNE_MIN_BLOCKS=$blocks -DOOC_TUNE_LOAD_BATCH=$batch"
    [ -n "$blocks8" ] && defs+=" -DOOC_TUNE_MIN_BLOCKS_U8=$blocks8"
    [ -n "$batch8" ] && defs+=" -DOOC_TUNE_LOAD_BATCH_U8=$batch8"
    defs+=" -DOOC_TUNE_FEW_RADII ${extra//+/ }"
    mkdir -p "$out/obj/$name" "$out/$name"
    obj="$out/obj/$name/separable.cu.o"  # the archive member's name
    (cd "$build" && eval "${compile/ -o CMakeFiles\/ooc.dir\/kernels\/cuda\/separable.cu.o/ $defs -o $obj}")
    cp "$build/libooc.a" "$out/obj/$name/libooc.a"
    ar r "$out/obj/$name/libooc.a" "$obj"
    l=${link/ -o tools\/bench\/ooc_gpu_stages / -o $out/$name/ooc_gpu_stages }
    (cd "$build" && eval "${l/ libooc.a / $out/obj/$name/libooc.a }")
    strip "$out/$name/ooc_gpu_stages"
    echo "$name: $defs"
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
