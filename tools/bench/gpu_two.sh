#!/usr/bin/env bash
# On a two-GPU machine: multi-device tests, then oocconv on one GPU against two with a 16 GiB f32
# input in the page cache (3 runs each, interleaved). Logs in $OUT.
set -u
export LD_LIBRARY_PATH=$PWD/stage/lib OOC_BIN_DIR=$PWD/stage/bin NCCL_NVLS_ENABLE=0
B=stage/bin; D=/root/oocb; mkdir -p $D
nvidia-smi --query-gpu=index,name --format=csv,noheader
$B/test_gpu --gtest_filter='Gpu.*:*f32_c3_reflect*' 2>&1 | grep -E "PASSED|FAILED|SKIPPED" | head
$B/oocconv synth:noise $D/f32.raw --width 65536 --height 65536 --taps 1 --device cpu -q
cat $D/f32.raw > /dev/null
for i in 1 2 3; do
  for devs in 0 0,1; do
    $B/oocconv $D/f32.raw null: --width 65536 --radius 16 --device cuda --devices $devs --stats json > $OUT/two_${devs}_$i.json
    python3 -c "import json;j=json.load(open('$OUT/two_${devs}_$i.json'));print('devices $devs run $i:',round(j['throughput']['input_mb_per_s']/1e3,2),'GB/s wall',round(j['throughput']['streaming_input_mb_per_s']/1e3,2),'streaming; slots',j['plan']['slots'],'rows',j['plan']['band_rows'],j['backend'])"
  done
done
$B/oocconv $D/f32.raw null: --width 65536 --radius 16 --device cuda --devices 0,1 --mem-limit 4G --stats json > $OUT/two_big.json
python3 -c "import json;j=json.load(open('$OUT/two_big.json'));print('devices 0,1 mem 4G:',round(j['throughput']['streaming_input_mb_per_s']/1e3,2),'streaming; slots',j['plan']['slots'])"
