#!/usr/bin/env bash
# On the GPU machine: the three test suites and a .npy file filtered on the GPU against the CPU.
export LD_LIBRARY_PATH=$PWD/stage/lib OOC_BIN_DIR=$PWD/stage/bin; B=stage/bin
$B/test_gpu --gtest_brief=1 2>&1 | tail -3
$B/test_unit --gtest_brief=1 2>&1 | tail -1
$B/test_cli --gtest_brief=1 2>&1 | tail -2
$B/oocgen /tmp/a.npy --width 4099 --height 3001 --type u16 --channels 3 -q
$B/oocconv /tmp/a.npy /tmp/g.npy --radius 16 --device cuda -q && $B/oocconv /tmp/a.npy /tmp/c.npy --radius 16 --device cpu -q && $B/ooccheck --compare /tmp/g.npy /tmp/c.npy --tolerance 0
