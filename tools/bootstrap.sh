#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages ooc builds and tests with; skips what is already there.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config libtiff-dev libtbb-dev libboost-dev
          libgtest-dev libcli11-dev nlohmann-json3-dev python3 python3-numpy python3-scipy
          python3-tifffile python3-opencv libtiff-tools libvips-tools libopenmpi-dev
          openmpi-bin munge slurmctld slurmd slurm-client libpmix2 bc
          libblosc-dev libzstd-dev zlib1g-dev python3-zarr python3-numcodecs libkissfft-dev
          gdal-bin python3-gdal
          pybind11-dev python3-pytest python3-setuptools python3-pip python3-venv
          python3-dask python3-distributed python3-skimage)
# The tests read TIFFs written by libvips and tifffile, check big ones with tiffinfo, and compare
# equalization with OpenCV's.
[ "${OOC_BENCH_PEERS:-0}" = 1 ] && packages+=(gnuplot-nox libvips-dev)
# Optional: FFTW3 for the CPU's FFT convolution (cmake -DOOC_WITH_FFTW=ON; GPL, see README).
[ "${OOC_WITH_FFTW:-0}" = 1 ] && packages+=(libfftw3-dev)
# GDAL checks what Cloud-Optimized GeoTIFF outputs are (its COG validator, gdalinfo's overviews)
# and the coordinate system read from the geo tags ooc carries over (cli.tiff_pyramid,
# cli.tiff_metadata).
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bootstrap: all ${#packages[@]} packages present"
  exit 0
fi
echo "bootstrap: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
