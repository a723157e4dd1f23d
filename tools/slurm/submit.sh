#!/bin/bash
# submit.sh: submit an oocconv run as a Slurm array (one task per part, array.sbatch) plus
# the finishing job (finish.sbatch) that starts once every part has succeeded, and print
# both job ids.
#
#   tools/slurm/submit.sh [-n PARTS] [-s 'SBATCH OPTIONS']... [-w] IN OUT [oocconv options...]
#
#   -n PARTS   number of parts = array tasks (default 4)
#   -s OPTS    extra sbatch options for both jobs, e.g. -s '--partition=gpu --account=proj'
#              (word-split; may be repeated)
#   -w         wait until the finish job has ended; exit with its status
#   OOC_BIN_DIR  directory holding oocconv on the compute nodes (default: found on PATH);
#                passed on to the jobs through the environment, as is the rest of it
#
# Example:
#   OOC_BIN_DIR=$HOME/ooc/build/release tools/slurm/submit.sh -n 8 \
#       /scratch/in.raw /scratch/out.raw --width 65536 --type f32 --radius 16
set -euo pipefail

usage() {
    sed -n '6,13p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

parts=4 wait=0
sbatch_opts=()
while getopts 'n:s:wh' opt; do
    case $opt in
        n) parts=$OPTARG ;;
        s) read -r -a more <<< "$OPTARG"; sbatch_opts+=("${more[@]}") ;;
        w) wait=1 ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
(( $# >= 2 )) || usage
[[ $parts =~ ^[1-9][0-9]*$ ]] || { echo "submit.sh: -n wants a positive number, not '$parts'" >&2; exit 2; }
in=$1 out=$2

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
oocconv=${OOC_BIN_DIR:+$OOC_BIN_DIR/}oocconv
# Only a warning: the compute nodes may see a different PATH (modules) than this login shell.
if ! command -v "$oocconv" > /dev/null; then
    echo "submit.sh: warning: '$oocconv' not found here; set OOC_BIN_DIR if the jobs cannot find it" >&2
fi
# Relative paths are resolved in the jobs' working directory, which is this one; say so.
[[ $in == /* && $out == /* ]] || echo "submit.sh: note: relative paths are taken from $PWD" >&2

# --parsable prints "jobid" or "jobid;cluster".
# OOC_PARTS: every task knows N even when some are later rerun alone (--array=3,5).
array_id=$(OOC_PARTS=$parts sbatch --parsable "${sbatch_opts[@]}" --array="0-$((parts - 1))" \
                  "$here/array.sbatch" "$@")
array_id=${array_id%%;*}
echo "array job:  $array_id  ($parts parts; logs oocconv-${array_id}_<part>.out)"

# afterok on an array job = after every task ended with status 0; a requeued task counts
# only when its rerun ends. --kill-on-invalid-dep: when a part fails, cancel the finish job
# instead of leaving it pending forever (DependencyNeverSatisfied).
finish=(sbatch --parsable "${sbatch_opts[@]}" --dependency="afterok:$array_id"
        --kill-on-invalid-dep=yes "$here/finish.sbatch" "$out")
if (( wait )); then
    # sbatch --wait prints the id, then blocks until the job ends and exits with its status.
    # (printf without a newline: sbatch completes the line with the id.)
    printf 'finish job: '
    rc=0
    "${finish[0]}" --wait "${finish[@]:1}" || rc=$?
    echo "finish job ended with status $rc"
    exit "$rc"
fi
finish_id=$("${finish[@]}")
finish_id=${finish_id%%;*}
echo "finish job: $finish_id  (runs after every part succeeded; log oocconv-finish-$finish_id.out)"
echo "watch with: squeue -j $array_id,$finish_id"
