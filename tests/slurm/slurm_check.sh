#!/bin/bash
# slurm_check.sh: end-to-end test of tools/slurm/ on a real, private, single-node Slurm.
#
# Brings up munged + slurmctld + slurmd (Debian packages munge slurmctld slurmd
# slurm-client) as background processes with every state, spool and log file in a temporary
# directory, then:
#   1. submits array.sbatch + finish.sbatch through submit.sh (sbatch --wait) on a small
#      synthetic image and cmp's the result with a single-process oocconv run;
#   1b. an array that is not 0..N-1 is refused without OOC_PARTS and right with it;
#   2. interrupts a running array task the way `--signal=B:TERM@...` does
#      (scancel --batch --signal=TERM), checks that it requeued itself and resumed, and
#      cmp's the finished result;
#   2b. cancels a running task with a plain scancel: it must stay cancelled (no requeue),
#      oocconv must have stopped cleanly (75); a resubmission resumes and is cmp'd;
#   3. runs mpi.sbatch (2 ranks through srun --mpi=pmix) and cmp's its result;
#   3b. the same TERM/requeue/resume path as 2 through mpi.sbatch and srun.
# Usage: tests/slurm/slurm_check.sh    (as root; exit 0 pass, 1 fail, 77 skipped)
#   OOC_BIN_DIR      where oocgen and oocconv are (default /work/main/build/release); they
#                    are copied first, so a rebuild during the test does not disturb it
#   OOC_SLURM_KEEP=1 keep the temporary directory (logs, conf) for a look afterwards
#   OOC_SLURM_DEBUG  SlurmctldDebug/SlurmdDebug level (default info; e.g. debug2)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
slurm_dir=$(cd "$here/../../tools/slurm" && pwd)
bin_src=${OOC_BIN_DIR:-/work/main/build/release}
t_start=$(date +%s.%N)

log() { printf '[%6.1fs] %s\n' "$(echo "$(date +%s.%N) - $t_start" | bc)" "$*"; }
skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*" >&2; exit 1; }

# --- prerequisites -------------------------------------------------------------------------
for cmd in munged munge slurmctld slurmd sbatch squeue sinfo scontrol scancel srun bc; do
    command -v "$cmd" > /dev/null ||
        skip "'$cmd' not found: apt-get install munge slurmctld slurmd slurm-client bc"
done
# slurmd must run as root to start jobs (and SlurmUser=root keeps the setup to one user).
(( EUID == 0 )) || skip "needs root to run slurmd"
for b in oocgen oocconv; do
    [[ -x $bin_src/$b ]] || skip "$bin_src/$b not found: build first or set OOC_BIN_DIR"
done
"$bin_src/oocconv" --help 2>/dev/null | grep -q -- '--part' ||
    skip "$bin_src/oocconv has no --part/--finish/--resume (an older build?)"

# Leave any enclosing Slurm job's variables behind: sbatch would take them as options.
while read -r v; do unset "$v"; done < <(compgen -v | grep -E '^(SLURM|SBATCH|SRUN|SALLOC)_' || true)

tmp=$(mktemp -d /tmp/ooc-slurm.XXXXXX)
pids=()
cleanup() {
    local rc=$?
    set +e
    if [[ -n ${SLURM_CONF:-} && -f ${SLURM_CONF:-} ]] && (( ${#pids[@]} )); then
        # End the jobs first, so that no slurmstepd outlives its slurmd.
        scancel --user=root 2>/dev/null
        for _ in $(seq 50); do
            [[ -z $(squeue -h 2>/dev/null) ]] && break
            sleep 0.2
        done
    fi
    if (( rc != 0 && rc != 77 )) && [[ -d $tmp/log ]]; then
        echo "--- last lines of the daemon logs ($tmp/log) ---"
        tail -n 25 "$tmp"/log/*.log 2>/dev/null
    fi
    # The daemons we started, newest first, by pid.
    for ((k = ${#pids[@]} - 1; k >= 0; k--)); do kill "${pids[k]}" 2>/dev/null; done
    for p in "${pids[@]}"; do
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$p" 2>/dev/null
        wait "$p" 2>/dev/null
    done
    if [[ ${OOC_SLURM_KEEP:-0} == 1 ]]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A copy of the binaries: the other build may replace them while this runs.
mkdir -p "$tmp"/{bin,etc,state,spool,log,run,munge,data,work}
cp "$bin_src/oocgen" "$bin_src/oocconv" "$tmp/bin/"
export OOC_BIN_DIR=$tmp/bin

# --- munge ----------------------------------------------------------------------------------
# A private key, socket and daemon: nothing under /etc or /run is touched.
dd if=/dev/urandom of="$tmp/munge/munge.key" bs=1024 count=1 status=none
chmod 700 "$tmp/munge"
chmod 400 "$tmp/munge/munge.key"
sock=$tmp/munge/munge.sock
munged -F --force --socket="$sock" --key-file="$tmp/munge/munge.key" \
       --pid-file="$tmp/run/munged.pid" --log-file="$tmp/log/munged.log" \
       --seed-file="$tmp/munge/munged.seed" > "$tmp/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 50); do
    munge -n -S "$sock" 2>/dev/null | unmunge -S "$sock" > /dev/null 2>&1 && break
    sleep 0.1
done
munge -n -S "$sock" | unmunge -S "$sock" > /dev/null || fail "munged did not come up ($tmp/log/munged.log)"
log "munged up"

# --- slurm.conf -----------------------------------------------------------------------------
free_port() { # a port nothing listens on: a second copy of this test may run beside us
    local p
    while :; do
        p=$((20000 + RANDOM % 30000))
        (exec 3<> "/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
    done
}
host=$(hostname -s)
ctld_port=$(free_port)
slurmd_port=$(free_port)
while [[ $slurmd_port == "$ctld_port" ]]; do slurmd_port=$(free_port); done
export SLURM_CONF=$tmp/etc/slurm.conf
cat > "$SLURM_CONF" <<EOF
# Private single-node cluster for tests/slurm/slurm_check.sh; everything under $tmp.
ClusterName=ooctest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
# cred_expire also delays a requeued job's restart (default 120 s): keep the test short.
AuthInfo=socket=$sock,cred_expire=5
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool
SlurmctldPidFile=$tmp/run/slurmctld.pid
SlurmdPidFile=$tmp/run/slurmd.pid
SlurmctldLogFile=$tmp/log/slurmctld.log
SlurmdLogFile=$tmp/log/slurmd.log
SlurmctldDebug=${OOC_SLURM_DEBUG:-info}
SlurmdDebug=${OOC_SLURM_DEBUG:-info}
# No cgroups here (containers, no systemd): track processes through /proc, bind nothing.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
# No slurmdbd, hence no sacct: job records go to a text file instead (printed below).
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$tmp/log/jobcomp.log
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/builtin
# Start jobs at once (batch_sched_delay defaults to 3 s) and look at eligible ones every
# second (a requeued job becomes eligible by time, which no event announces; default 60 s).
SchedulerParameters=batch_sched_delay=0,sched_interval=1
MpiDefault=none
SwitchType=switch/none
ReturnToService=2
JobRequeue=1
KillWait=5
MinJobAge=600
MailProg=/bin/true
DependencyParameters=kill_invalid_depend
# Two GPUs that exist only as a count, so that --gres=gpu:1 / --gpus-per-task=1 in the
# scripts can be scheduled; without a real GPU oocconv runs its CPU kernels.
GresTypes=gpu
SlurmdParameters=config_overrides
NodeName=$host NodeAddr=127.0.0.1 CPUs=2 RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
# Slurm drops GPUs without a File. Character devices twinned with /dev/null where mknod is
# allowed, else plain files (slurmd logs an error but counts them): no cgroup guards devices.
for g in 0 1; do
    mknod "$tmp/run/fakegpu$g" c 1 3 2>/dev/null || touch "$tmp/run/fakegpu$g"
done
echo "NodeName=$host Name=gpu File=$tmp/run/fakegpu[0-1]" > "$tmp/etc/gres.conf"

slurmctld -D -i -f "$SLURM_CONF" > "$tmp/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" > "$tmp/log/slurmd.out" 2>&1 &
pids+=($!)
state=
for _ in $(seq 150); do
    state=$(sinfo -h -N -o '%T' 2>/dev/null || true)
    [[ $state == idle ]] && break
    [[ $state == inval* || $state == drain* ]] && fail "node state '$state': $(sinfo -h -N -o '%E')"
    sleep 0.2
done
[[ $state == idle ]] || fail "node not idle after 30 s (state '$state')"
log "slurmctld + slurmd up (ports $ctld_port/$slurmd_port):"
sinfo -N -o '%N %T %c %G'

# --- helpers --------------------------------------------------------------------------------
cd "$tmp/work"  # the jobs' working directory: their oocconv-*.out logs land here
show_jobs() { # id...: what Slurm recorded about them (sacct needs slurmdbd, so scontrol)
    local id
    for id in "$@"; do
        scontrol -o show job "$id" 2>/dev/null |
            grep -oE '^JobId=[^ ]+|ArrayTaskId=[^ ]+|JobState=[^ ]+|Reason=[^ ]+|Restarts=[^ ]+|ExitCode=[^ ]+|RunTime=[^ ]+' |
            paste -sd' ' | sed 's/ JobId=/\n  JobId=/g; s/^/  /'
    done
}
show_logs() { local f; for f in "$@"; do echo "--- $f"; sed 's/^/  | /' "$f"; done; }
wait_job() { # ID SECONDS: poll until the job has ended (sbatch --wait polls every 2, 8, 32 s)
    local t st
    for ((t = 0; t < $2 * 5; t++)); do
        st=$(job_field "$1" JobState)
        case $st in PENDING|RUNNING|REQUEUED|COMPLETING|CONFIGURING|SUSPENDED|RESIZING|'') ;; *) echo "$st"; return ;; esac
        sleep 0.2
    done
    echo "TIMEOUT($st)"
}
job_field() { scontrol -o show job "$1" | grep -oE "(^| )$2=[^ ]*" | head -n1 | cut -d= -f2; }

gen() { # OUT W H SEED
    "$OOC_BIN_DIR/oocgen" "$1" --width "$2" --height "$3" --type f32 --seed "$4" -q
}
reference() { # IN REF options...: the single-process run the Slurm results must equal
    local in=$1 ref=$2
    shift 2
    "$OOC_BIN_DIR/oocconv" "$in" "$ref" "$@" -q
}
# Options every job gets: fit the 2-CPU test node (the scripts ask for 4 CPUs per task).
jobopts=(--cpus-per-task=1 --time=5)

# --- 1. array + finish through submit.sh ----------------------------------------------------
W=2048 H=1536
# --device cpu: Slurm hands out the test's pretend GPUs by index, which may hide a real one
# from some jobs and not others; CPU on all sides keeps the comparison about the scripts.
opts=(--width "$W" --type f32 --radius 16 --device cpu)
gen "$tmp/data/small.raw" $W $H 7
reference "$tmp/data/small.raw" "$tmp/data/small.ref.raw" "${opts[@]}"
log "1. image ${W}x${H} f32 made, single-process reference done; submit.sh -n 4 -w:"
t1=$(date +%s)
rc=0
"$slurm_dir/submit.sh" -n 4 -s "${jobopts[*]}" -w "$tmp/data/small.raw" "$tmp/work/small.out.raw" \
    "${opts[@]}" | tee "$tmp/submit1.txt" || rc=$?
array1=$(sed -n 's/^array job: *\([0-9]*\).*/\1/p' "$tmp/submit1.txt")
show_jobs "$array1"
show_logs "$tmp/work/oocconv-${array1}"_*.out "$tmp/work"/oocconv-finish-*.out
(( rc == 0 )) || fail "1. finish job ended with status $rc"
cmp "$tmp/work/small.out.raw" "$tmp/data/small.ref.raw" || fail "1. array result differs from the single-process run"
[[ ! -e $tmp/work/small.out.raw.partial ]] || fail "1. small.out.raw.partial left behind"
log "1. PASS: array of 4 + finish = single-process result ($(( $(date +%s) - t1 )) s in Slurm)"

# --- 1b. some parts alone: refused without OOC_PARTS, right with it --------------------------
log "1b. sbatch --array=1,3 array.sbatch (refused), then OOC_PARTS=4 with --array=1,3 and 0,2:"
t1b=$(date +%s)
run_sub=("$slurm_dir/array.sbatch" "$tmp/data/small.raw" "$tmp/work/small.sub.raw" "${opts[@]}")
bad=$(sbatch --parsable "${jobopts[@]}" --array=1,3 "${run_sub[@]}")
st=$(wait_job "${bad}_1" 30)
show_logs "$tmp/work/oocconv-${bad}_1.out"
[[ $st == FAILED && $(job_field "${bad}_1" ExitCode) == 2:0 ]] ||
    fail "1b. an array 1,3 without OOC_PARTS ended $st, not FAILED with 2"
[[ ! -e $tmp/work/small.sub.raw.partial ]] || fail "1b. the refused tasks wrote something"
a13=$(OOC_PARTS=4 sbatch --parsable "${jobopts[@]}" --array=1,3 "${run_sub[@]}")
a02=$(OOC_PARTS=4 sbatch --parsable "${jobopts[@]}" --array=0,2 "${run_sub[@]}")
fin=$(sbatch --parsable "${jobopts[@]}" --dependency="afterok:$a13,afterok:$a02" --kill-on-invalid-dep=yes \
             "$slurm_dir/finish.sbatch" "$tmp/work/small.sub.raw")
st=$(wait_job "$fin" 60)
show_jobs "$bad" "$a13" "$a02" "$fin"
[[ $st == COMPLETED ]] || fail "1b. finish job $fin ended $st"
cmp "$tmp/work/small.sub.raw" "$tmp/data/small.ref.raw" || fail "1b. parts run in two arrays differ from the single-process run"
log "1b. PASS: array 1,3 refused (exit 2) without OOC_PARTS; with OOC_PARTS=4, arrays 1,3 + 0,2 + finish = single-process result ($(( $(date +%s) - t1b )) s)"

# --- 2. interrupted task requeues itself and resumes ----------------------------------------
# Big enough that a part is still running when the signal comes: ~2 s a part at 1 thread
# here, from a wide filter rather than a big file.
W2=${OOC_SLURM_BIG_W:-4096} H2=${OOC_SLURM_BIG_H:-12288}
opts2=(--width "$W2" --type f32 --radius 128 --device cpu)
gen "$tmp/data/big.raw" "$W2" "$H2" 11
reference "$tmp/data/big.raw" "$tmp/data/big.ref.raw" "${opts2[@]}"
log "2. image ${W2}x${H2} f32 made, reference done; sbatch --array=0-1 array.sbatch:"
t2=$(date +%s)
# --threads 1 keeps the part slow enough to be caught mid-run; small bands, so that the few
# in flight when the signal comes (they are finished first) are not the whole part.
array2=$(sbatch --parsable "${jobopts[@]}" --array=0-1 "$slurm_dir/array.sbatch" \
                "$tmp/data/big.raw" "$tmp/work/big.out.raw" "${opts2[@]}" --threads 1 --band-rows 64)
echo "  submitted array job $array2"
# Wait until part 0 runs and has written something, then signal its batch shell only, as
# --signal=B:TERM@120 does before the time limit.
task0=${array2}_0
for _ in $(seq 300); do
    [[ $(job_field "$task0" JobState) == RUNNING && -e $tmp/work/big.out.raw.partial ]] && break
    sleep 0.1
done
[[ $(job_field "$task0" JobState) == RUNNING ]] || fail "2. task $task0 never ran: $(job_field "$task0" JobState)"
scancel --batch --signal=TERM "$task0"
log "2. sent TERM to the batch shell of $task0; finish job waits on the array:"
# Polled rather than sbatch --wait: that one sleeps 2, 8, then 32 s between its looks,
# which would triple this step's time.
finish2=$(sbatch --parsable "${jobopts[@]}" --dependency="afterok:$array2" --kill-on-invalid-dep=yes \
                 "$slurm_dir/finish.sbatch" "$tmp/work/big.out.raw")
echo "  submitted finish job $finish2 (afterok:$array2)"
st=$(wait_job "$finish2" 60)
show_jobs "$array2" "$finish2"
show_logs "$tmp/work/oocconv-${array2}"_*.out "$tmp/work/oocconv-finish-$finish2.out"
[[ $st == COMPLETED ]] || fail "2. finish job $finish2 ended $st"
restarts=$(job_field "$task0" Restarts)
grep -q 'requeued' "$tmp/work/oocconv-${task0}.out" ||
    fail "2. $task0 did not requeue itself (finished before the signal? set OOC_SLURM_BIG_W/H larger)"
(( restarts >= 1 )) || fail "2. $task0 shows Restarts=$restarts"
grep -q 'restart 1' "$tmp/work/oocconv-${task0}.out" || fail "2. no second run of $task0 in its log"
cmp "$tmp/work/big.out.raw" "$tmp/data/big.ref.raw" || fail "2. resumed result differs from the single-process run"
log "2. PASS: $task0 stopped with 75, requeued itself (Restarts=$restarts), reran with --resume; result equal ($(( $(date +%s) - t2 )) s in Slurm)"

# --- 2b. a plain scancel stays cancelled; a new submission resumes ----------------------------
# scancel signals every process of the job: oocconv stops cleanly (75) on Slurm's own TERM,
# the script must not add a second one (that means "stop at once") nor requeue. An array of
# one task also checks that finish.sbatch accepts a run that put OUT in place itself.
log "2b. sbatch --array=0 array.sbatch, then a plain scancel:"
run_cancel=("$slurm_dir/array.sbatch" "$tmp/data/big.raw" "$tmp/work/big.cancel.raw" "${opts2[@]}"
            --threads 1 --band-rows 64)
t2b=$(date +%s)
array3=$(sbatch --parsable "${jobopts[@]}" --array=0 "${run_cancel[@]}")
for _ in $(seq 300); do
    [[ $(job_field "${array3}_0" JobState) == RUNNING && -e $tmp/work/big.cancel.raw.partial ]] && break
    sleep 0.1
done
scancel "${array3}_0"
st=$(wait_job "${array3}_0" 30)
show_jobs "${array3}_0"
show_logs "$tmp/work/oocconv-${array3}_0.out"
[[ $st == CANCELLED ]] || fail "2b. cancelled task ended $st"
[[ $(job_field "${array3}_0" Restarts) == 0 ]] || fail "2b. the cancelled task was requeued"
grep -q 'exited with 75' "$tmp/work/oocconv-${array3}_0.out" ||
    fail "2b. oocconv did not stop cleanly (75) on scancel's TERM"
grep -q "not requeued" "$tmp/work/oocconv-${array3}_0.out" || fail "2b. no word of the task not being requeued"
[[ -e $tmp/work/big.cancel.raw.partial ]] || fail "2b. the partial output was not kept"
# "Submit it again to resume": the same task, the same arguments.
array4=$(sbatch --parsable "${jobopts[@]}" --array=0 "${run_cancel[@]}")
finish4=$(sbatch --parsable "${jobopts[@]}" --dependency="afterok:$array4" --kill-on-invalid-dep=yes \
                 "$slurm_dir/finish.sbatch" "$tmp/work/big.cancel.raw")
echo "  resubmitted as array job $array4, finish job $finish4"
st=$(wait_job "$finish4" 60)
show_jobs "$array4" "$finish4"
show_logs "$tmp/work/oocconv-${array4}_0.out"
[[ $st == COMPLETED ]] || fail "2b. finish job $finish4 of the resubmission ended $st"
cmp "$tmp/work/big.cancel.raw" "$tmp/data/big.ref.raw" || fail "2b. resubmitted result differs from the single-process run"
log "2b. PASS: scancel left the task CANCELLED (oocconv exit 75, no requeue); resubmitted with --resume; result equal ($(( $(date +%s) - t2b )) s)"

# --- 3. mpi.sbatch: 2 ranks through srun, rank 0 finishes -----------------------------------
# MpiDefault=none here: mpi.sbatch picks srun --mpi=pmix itself, which needs libpmix2
# (oocconv learns its rank from PMIx).
if ! srun --mpi=pmix -n 1 --cpus-per-task=1 --time=1 true > "$tmp/log/pmix-probe.out" 2>&1; then
    log "3. SKIP: 'srun --mpi=pmix' does not work here ($(tail -n1 "$tmp/log/pmix-probe.out")): apt-get install libpmix2"
    mpi_skipped=1
else
    log "3. sbatch --wait --ntasks-per-node=2 mpi.sbatch:"
    t3=$(date +%s)
    rc=0
    out=$(sbatch --wait "${jobopts[@]}" --ntasks-per-node=2 "$slurm_dir/mpi.sbatch" \
                 "$tmp/data/small.raw" "$tmp/work/small.mpi.raw" "${opts[@]}") || rc=$?
    echo "  $out"
    mpi_id=$(sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' <<< "$out")
    show_jobs "$mpi_id"
    show_logs "$tmp/work/oocconv-mpi-$mpi_id.out"
    (( rc == 0 )) || fail "3. mpi job ended with status $rc"
    cmp "$tmp/work/small.mpi.raw" "$tmp/data/small.ref.raw" || fail "3. mpi result differs from the single-process run"
    log "3. PASS: 2 ranks under srun = single-process result ($(( $(date +%s) - t3 )) s in Slurm)"

    # 3b. The B: path through srun: TERM to the batch shell -> srun -> every rank; the ranks
    # stop with 75, srun exits 75, the job requeues itself and the rerun resumes.
    log "3b. sbatch --ntasks-per-node=2 mpi.sbatch on the larger image, TERM to its batch shell:"
    t3b=$(date +%s)
    mpi2=$(sbatch --parsable "${jobopts[@]}" --ntasks-per-node=2 "$slurm_dir/mpi.sbatch" \
                  "$tmp/data/big.raw" "$tmp/work/big.mpi.raw" "${opts2[@]}" --threads 1 --band-rows 64)
    for _ in $(seq 300); do
        [[ $(job_field "$mpi2" JobState) == RUNNING && -e $tmp/work/big.mpi.raw.partial ]] && break
        sleep 0.1
    done
    scancel --batch --signal=TERM "$mpi2"
    st=$(wait_job "$mpi2" 60)
    show_jobs "$mpi2"
    show_logs "$tmp/work/oocconv-mpi-$mpi2.out"
    [[ $st == COMPLETED ]] || fail "3b. mpi job $mpi2 ended $st"
    grep -q 'srun exited with 75' "$tmp/work/oocconv-mpi-$mpi2.out" ||
        fail "3b. the ranks did not stop with 75 (finished before the signal?)"
    (( $(job_field "$mpi2" Restarts) >= 1 )) || fail "3b. mpi job $mpi2 was not requeued"
    cmp "$tmp/work/big.mpi.raw" "$tmp/data/big.ref.raw" || fail "3b. resumed mpi result differs from the single-process run"
    log "3b. PASS: ranks stopped with 75, job requeued itself, reran with --resume; result equal ($(( $(date +%s) - t3b )) s in Slurm)"
fi

if [[ -s $tmp/log/jobcomp.log ]]; then
    echo "--- job completion records (jobcomp/filetxt, what sacct would show):"
    while read -r line; do
        grep -oE '^JobId=[^ ]+| Name=[^ ]+| JobState=[^ ]+| StartTime=[^ ]+| EndTime=[^ ]+| ArrayJobId=[^ ]+| ArrayTaskId=[^ ]+| ExitCode=[^ ]+' <<< "$line" |
            paste -sd'\0' | sed 's/^/  /'
    done < "$tmp/log/jobcomp.log"
fi
if (( ${mpi_skipped:-0} )); then
    log "PASS (steps 1-2; step 3 skipped: no PMIx for srun)"
else
    log "PASS"
fi
