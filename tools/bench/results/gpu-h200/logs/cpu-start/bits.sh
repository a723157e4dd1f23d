#!/usr/bin/env bash
# CPU against CUDA outputs, byte for byte: --device cpu, cuda --cpu-start off, cuda --cpu-start 3.
B=$1; W=$2; n=0; bad=0
for t in u8 u16 f32; do
  $B/oocgen $W/b_$t.raw --width 3001 --height 1000 --channels 3 --type $t --no-progress
  for r in 1 3 16; do for b in reflect constant wrap; do
    a="--width 3001 --channels 3 --type $t --radius $r --border $b --band-rows 64 --no-progress"
    $B/oocconv $W/b_$t.raw $W/o_cpu.raw $a --device cpu
    $B/oocconv $W/b_$t.raw $W/o_gpu.raw $a --device cuda --cpu-start off
    $B/oocconv $W/b_$t.raw $W/o_mix.raw $a --device cuda --cpu-start 3
    n=$((n+1))
    if cmp -s $W/o_cpu.raw $W/o_gpu.raw && cmp -s $W/o_gpu.raw $W/o_mix.raw; then :; else
      bad=$((bad+1)); echo "DIFFER $t r$r $b: cpu-gpu $(cmp $W/o_cpu.raw $W/o_gpu.raw | head -1) gpu-mix $(cmp $W/o_gpu.raw $W/o_mix.raw | head -1)"
    fi
  done; done
done
echo "bits: $n cases, $bad differ"
