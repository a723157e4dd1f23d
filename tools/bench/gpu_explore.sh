#!/usr/bin/env bash
# On the GPU machine: memory bound of the CUDA path, NPP presence, and the page-cache throughput of
# oocconv on a 16 GiB f32 file over slot and band settings (3 runs each), CPU alongside, CuPy peer.
export LD_LIBRARY_PATH=$PWD/stage/lib OOC_BIN_DIR=$PWD/stage/bin; B=stage/bin; D=/root/oocb; mkdir -p $D
$B/test_cli --gtest_filter='*Memory*' 2>&1 | grep -E "OK|FAILED|info|rss|Failure" | head
echo "--- CUDA fixed RSS"; $B/oocconv synth:noise null: --width 64 --height 64 --radius 1 --device cuda --stats json | grep -E "peak_rss|setup"
for m in 64M 256M; do $B/oocconv synth:noise null: --width 65536 --height 40000 --radius 16 --mem-limit $m --device cuda --stats json > $OUT/m$m.json; echo "rc=$? mem $m"; grep -E "peak_rss|band_rows|\"slots" $OUT/m$m.json; done
echo "--- npp?"; ls /usr/local/cuda/lib64 2>/dev/null | grep -ci npp; find / -name 'libnppif*' 2>/dev/null | head -3
$B/oocconv synth:noise $D/f32.raw --width 65536 --height 65536 --taps 1 --device cpu -q; cat $D/f32.raw > /dev/null
for cfg in "" "--slots 6" "--mem-limit 2G" "--mem-limit 4G --slots 8" "--mem-limit 4G --slots 4" "--mem-limit 4G --band-rows 1024 --slots 3"; do
 for i in 1 2 3; do $B/oocconv $D/f32.raw null: --width 65536 --radius 16 --device cuda $cfg --stats json > $OUT/r.json || echo fail
 python3 -c "import json;j=json.load(open('$OUT/r.json'));print('cfg [$cfg]', round(j['throughput']['input_mb_per_s']/1e3,2),'GB/s total,',round(j['throughput']['streaming_input_mb_per_s']/1e3,2),'streaming; setup',round(j['seconds']['setup'],3),'total',round(j['seconds']['total'],3),'rows',j['plan']['band_rows'],'slots',j['plan']['slots'],'rss MiB',j['peak_rss_bytes']>>20)"; done; done
$B/oocconv $D/f32.raw null: --width 65536 --radius 16 --device cpu --stats json > $OUT/r.json; python3 -c "import json;j=json.load(open('$OUT/r.json'));print('cpu', round(j['throughput']['input_mb_per_s']/1e3,2),'GB/s')"
python3 tools/bench/cupy_band.py 65536 256 16
