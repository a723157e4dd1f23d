#!/bin/bash
# slurm_check.sh: end-to-end test of tools/slurm/ on a real, private, single-node Slurm.
#
# First (0.) runs mpi.sbatch and array.sbatch with stand-ins for scontrol, scancel, mpirun
# and oocconv, to check when they requeue themselves: only when the journals show rows added
# by the run and rows left, below OOC_MAX_REQUEUES (not on the exit status alone).
# Then brings up munged + slurmctld + slurmd (Debian packages munge slurmctld slurmd
# slurm-client) as background processes with every state, spool and log file in a temporary
# directory, and:
#   1. submits array.sbatch + finish.sbatch through submit.sh (sbatch --wait) on a small
#      synthetic image and cmp's the result with a single-process oocconv run;
#   1b. an array that is not 0..N-1 is refused without OOC_PARTS and right with it;
#   2. interrupts a running array task the way `--signal=B:TERM@...` does
#      (scancel --batch --signal=TERM), checks that it requeued itself and resumed, and
#      cmp's the finished result;
#   2b. cancels a running task with a plain scancel: it must stay cancelled (no requeue),
#      oocconv must have stopped cleanly (75); a resubmission resumes and is cmp'd;
#   3. runs mpi.sbatch (2 ranks through srun --mpi=pmix) and cmp's its result;
#   3b. the same TERM/requeue/resume path as 2 through mpi.sbatch and srun;
#   3c. the same with OOC_LAUNCHER=mpirun: the TERM goes to mpirun, which exits 1 although
#       the ranks stopped cleanly; the journals make the job requeue itself all the same.
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

# --- 0. requeue decisions, with stand-ins for Slurm and oocconv -----------------------------
# Whether a script requeues itself is read from the journals: here a stand-in oocconv writes
# the journal and exits as told, a stand-in scontrol answers the job's state and records
# requeues, and mpirun runs its command. No daemon is involved: these take a second.
fake=$tmp/fake
mkdir -p "$fake/bin" "$fake/work"
cat > "$fake/bin/scontrol" <<'EOS'
#!/bin/bash
# `scontrol -o show job ID` answers JobState=$FAKE_STATE; `scontrol requeue ID` is recorded.
case $1 in
    -o) echo "JobId=$3 JobState=${FAKE_STATE:-RUNNING} Restarts=0" ;;
    requeue) echo "requeue $2" >> "$FAKE_DIR/requeues" ;;
    *) exit 1 ;;
esac
EOS
printf '#!/bin/bash\necho "scancel $*" >> "$FAKE_DIR/scancels"\n' > "$fake/bin/scancel"
printf '#!/bin/bash\nexec "$@"\n' > "$fake/bin/mpirun"
cat > "$fake/bin/oocconv" <<'EOS'
#!/bin/bash
# oocconv's stand-in: the journal $FAKE_JOURNAL covers rows 0:100 (made with done $FAKE_DONE,
# default 0, unless there);
# with FAKE_WAIT=1 it waits for SIGTERM first (as a rank under mpirun, which then exits 1);
# then it adds $FAKE_ADD rows to "done" and exits $FAKE_RC; with FAKE_COMPLETE=1 it has made
# the output ($2) and removed the journal instead, as a run that completed before the signal.
j=$FAKE_JOURNAL
[[ -f $j ]] || printf 'ooc-journal 2\ninput x\noptions y\npart 0 2\nrows 0 100 200\ndone %s\ncheck 0\n' \
                      "${FAKE_DONE:-0}" > "$j"
got=0
trap 'got=1' TERM
echo $$ > "$FAKE_DIR/started"
if [[ ${FAKE_WAIT:-0} == 1 ]]; then
    while (( !got )); do sleep 0.05; done
fi
if [[ ${FAKE_COMPLETE:-0} == 1 ]]; then
    echo done > "$2" && rm -f "$j"
    exit "${FAKE_RC:-0}"
fi
d=$(awk '$1 == "done" { print $2 }' "$j")
sed -i "s/^done .*/done $((d + ${FAKE_ADD:-0}))/" "$j"
exit "${FAKE_RC:-0}"
EOS
chmod +x "$fake/bin"/*
fake_case() { # NAME SCRIPT WANT_RC WANT_REQUEUE(0|1) WANT_TEXT [VAR=VALUE...]
    # (PRE_DONE=N among the variables: the journal is there with done N before the script runs)
    local name=$1 script=$2 want_rc=$3 want_requeue=$4 want_text=$5 rc=0 pid requeued=0 a
    shift 5
    rm -f "$fake/work"/* "$fake/requeues" "$fake/started"
    for a in "$@"; do
        if [[ $a == PRE_DONE=* ]]; then
            FAKE_JOURNAL=$(printf '%s\n' "$@" | sed -n 's/^FAKE_JOURNAL=//p') FAKE_DONE=${a#*=} \
                FAKE_DIR=$fake "$fake/bin/oocconv"
        fi
    done
    local out=$fake/work/o.raw
    env PATH="$fake/bin:$PATH" OOC_BIN_DIR="$fake/bin" FAKE_DIR="$fake" SLURM_JOB_ID=4242 \
        "$@" bash "$slurm_dir/$script" "$fake/in.raw" "$out" --width 8 > "$fake/log" 2>&1 &
    pid=$!
    if [[ " $* " == *" FAKE_WAIT=1 "* ]]; then
        for _ in $(seq 100); do [[ -s $fake/started ]] && break; sleep 0.05; done
        kill -TERM "$pid"
    fi
    # A script that never passes the signal on would wait forever: 10 s, then both are killed.
    for _ in $(seq 200); do kill -0 "$pid" 2> /dev/null || break; sleep 0.05; done
    if kill -0 "$pid" 2> /dev/null; then
        kill -KILL "$pid" $(cat "$fake/started" 2> /dev/null) 2> /dev/null || true
        wait "$pid" || true
        show_logs "$fake/log"
        fail "0. $name: $script had not ended 10 s after the signal (the stand-in never got it?)"
    fi
    wait "$pid" || rc=$?
    [[ -s $fake/requeues ]] && requeued=1
    if (( rc != want_rc || requeued != want_requeue )) || ! grep -q -- "$want_text" "$fake/log"; then
        show_logs "$fake/log"
        fail "0. $name: exit $rc (want $want_rc), requeued $requeued (want $want_requeue)," \
             "'$want_text' $(grep -q -- "$want_text" "$fake/log" && echo found || echo 'not in the log')"
    fi
    echo "  $name: exit $rc, requeued $requeued: ok"
}
show_logs() { local f; for f in "$@"; do echo "--- $f"; sed 's/^/  | /' "$f"; done; }
# How many journals of OUT's parts exist: a process writes its journal once its signal handlers
# are in place, so a TERM after that stops it cleanly (before, it would simply end it). The
# shared temporary alone is no sign: another part may have made it.
journals() { compgen -G "$1.partial*.journal" | wc -l; }
log "0. requeue decisions of mpi.sbatch and array.sbatch with stand-ins:"
mpi_j=$fake/work/o.raw.partial.part-0-of-2.journal
fake_case "mpirun exits 1 after the ranks stopped on the passed-on TERM" mpi.sbatch 0 1 \
    "passing it to mpirun" OOC_LAUNCHER=mpirun FAKE_JOURNAL="$mpi_j" FAKE_WAIT=1 FAKE_ADD=10 FAKE_RC=1
fake_case "mpirun exits 1 on the TERM, but the ranks had completed the output" mpi.sbatch 0 0 \
    "was completed before the TERM" OOC_LAUNCHER=mpirun FAKE_JOURNAL="$mpi_j" FAKE_WAIT=1 \
    FAKE_COMPLETE=1 FAKE_RC=1
fake_case "the same at the requeue cap" mpi.sbatch 75 0 "OOC_MAX_REQUEUES=3" \
    OOC_LAUNCHER=mpirun FAKE_JOURNAL="$mpi_j" FAKE_WAIT=1 FAKE_ADD=10 FAKE_RC=1 \
    SLURM_RESTART_COUNT=3 OOC_MAX_REQUEUES=3
fake_case "exit 75 without a row added (would loop)" mpi.sbatch 75 0 "added no rows" \
    OOC_LAUNCHER=mpirun FAKE_JOURNAL="$mpi_j" PRE_DONE=40 FAKE_ADD=0 FAKE_RC=75
fake_case "a failure, no signal: not a stop" mpi.sbatch 1 0 "failed with 1" \
    OOC_LAUNCHER=mpirun FAKE_JOURNAL="$mpi_j" FAKE_ADD=10 FAKE_RC=1
fake_case "a cancelled job stays cancelled" mpi.sbatch 75 0 "not requeued (job CANCELLED)" \
    OOC_LAUNCHER=mpirun FAKE_JOURNAL="$mpi_j" FAKE_ADD=10 FAKE_RC=75 FAKE_STATE=CANCELLED
arr=(SLURM_ARRAY_JOB_ID=4242 SLURM_ARRAY_TASK_ID=1 SLURM_ARRAY_TASK_COUNT=2 SLURM_ARRAY_TASK_MIN=0
     SLURM_ARRAY_TASK_MAX=1 FAKE_JOURNAL="$fake/work/o.raw.partial.part-1-of-2.journal")
fake_case "array task stopped (75) with rows added" array.sbatch 0 1 "requeued (restart 1 of at most 20" \
    "${arr[@]}" FAKE_ADD=10 FAKE_RC=75
fake_case "array task at the requeue cap" array.sbatch 75 0 "has restarted 20 times" \
    "${arr[@]}" FAKE_ADD=10 FAKE_RC=75 SLURM_RESTART_COUNT=20
fake_case "array task whose journal has no rows left" array.sbatch 75 0 "every row is done" \
    "${arr[@]}" FAKE_DONE=100 FAKE_RC=75
fake_case "another part's journal does not count" array.sbatch 75 0 "no journal" \
    "${arr[@]/part-1-of-2/part-0-of-2}" FAKE_ADD=10 FAKE_RC=75
log "0. PASS: requeued only after rows were added and rows are left, below OOC_MAX_REQUEUES"

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
# here, from a wide filter rather than a big file (--method direct: auto takes the FFT there).
W2=${OOC_SLURM_BIG_W:-4096} H2=${OOC_SLURM_BIG_H:-12288}
opts2=(--width "$W2" --type f32 --radius 128 --method direct --device cpu)
gen "$tmp/data/big.raw" "$W2" "$H2" 11
reference "$tmp/data/big.raw" "$tmp/data/big.ref.raw" "${opts2[@]}"
log "2. image ${W2}x${H2} f32 made, reference done; sbatch --array=0-1 array.sbatch:"
t2=$(date +%s)
# --threads 1 and 16-row bands (each recomputes its 256 halo rows) keep a part at about 3 s, slow
# enough to be caught mid-run under load (at 64 rows, 1 s, a signal came after the end); small
# bands also keep the few in flight when the signal comes (finished first) from being the part.
array2=$(sbatch --parsable "${jobopts[@]}" --array=0-1 "$slurm_dir/array.sbatch" \
                "$tmp/data/big.raw" "$tmp/work/big.out.raw" "${opts2[@]}" --threads 1 --band-rows 16)
echo "  submitted array job $array2"
# Wait until part 0 runs and has written something, then signal its batch shell only, as
# --signal=B:TERM@120 does before the time limit.
task0=${array2}_0
for _ in $(seq 300); do
    [[ $(job_field "$task0" JobState) == RUNNING && -e $tmp/work/big.out.raw.partial.part-0-of-2.journal ]] && break
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
grep -q 'requeued (restart' "$tmp/work/oocconv-${task0}.out" ||
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
            --threads 1 --band-rows 16)
t2b=$(date +%s)
array3=$(sbatch --parsable "${jobopts[@]}" --array=0 "${run_cancel[@]}")
for _ in $(seq 300); do
    [[ $(job_field "${array3}_0" JobState) == RUNNING && $(journals "$tmp/work/big.cancel.raw") -ge 1 ]] && break
    sleep 0.1
done
scancel "${array3}_0"
st=$(wait_job "${array3}_0" 30)
show_jobs "${array3}_0"
show_logs "$tmp/work/oocconv-${array3}_0.out"
[[ $st == CANCELLED ]] || fail "2b. cancelled task ended $st"
[[ $(job_field "${array3}_0" Restarts) == 0 ]] || fail "2b. the cancelled task was requeued"
# The script's report that oocconv stopped cleanly (75): its exit status, or, where bash lost it
# (the TERM Slurm sends the shell too interrupted its wait as oocconv ended), its journal.
grep -q 'exited with 75' "$tmp/work/oocconv-${array3}_0.out" ||
    grep -q 'taken as a clean stop (75)' "$tmp/work/oocconv-${array3}_0.out" ||
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
                  "$tmp/data/big.raw" "$tmp/work/big.mpi.raw" "${opts2[@]}" --threads 1 --band-rows 16)
    for _ in $(seq 300); do
        [[ $(job_field "$mpi2" JobState) == RUNNING && $(journals "$tmp/work/big.mpi.raw") -ge 2 ]] && break
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

# --- 3c. mpi.sbatch with mpirun: mpirun exits 1 on TERM, the journals say "resume" -----------
if ! command -v mpirun > /dev/null; then
    log "3c. SKIP: no mpirun (apt-get install openmpi-bin)"
    mpirun_skipped=1
else
    log "3c. OOC_LAUNCHER=mpirun mpi.sbatch on the larger image, TERM to its batch shell:"
    t3c=$(date +%s)
    # Open MPI refuses root without these; vader: shared memory, no network needed.
    mpi3=$(OOC_LAUNCHER=mpirun OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
           OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl=self,vader \
           sbatch --parsable "${jobopts[@]}" --ntasks-per-node=2 "$slurm_dir/mpi.sbatch" \
                  "$tmp/data/big.raw" "$tmp/work/big.mpirun.raw" "${opts2[@]}" --threads 1 --band-rows 16)
    for _ in $(seq 300); do
        [[ $(job_field "$mpi3" JobState) == RUNNING && $(journals "$tmp/work/big.mpirun.raw") -ge 2 ]] && break
        sleep 0.1
    done
    scancel --batch --signal=TERM "$mpi3"
    st=$(wait_job "$mpi3" 90)
    show_jobs "$mpi3"
    show_logs "$tmp/work/oocconv-mpi-$mpi3.out"
    [[ $st == COMPLETED ]] || fail "3c. mpi job $mpi3 ended $st"
    grep -q 'passing it to mpirun' "$tmp/work/oocconv-mpi-$mpi3.out" ||
        fail "3c. the TERM was not passed to mpirun (finished before the signal?)"
    grep -q 'requeued (restart 1' "$tmp/work/oocconv-mpi-$mpi3.out" || fail "3c. mpi job $mpi3 did not requeue itself"
    (( $(job_field "$mpi3" Restarts) >= 1 )) || fail "3c. mpi job $mpi3 shows no restart"
    first_rc=$(sed -n 's/.*mpirun exited with \([0-9]*\).*/\1/p' "$tmp/work/oocconv-mpi-$mpi3.out" | head -n1)
    cmp "$tmp/work/big.mpirun.raw" "$tmp/data/big.ref.raw" || fail "3c. resumed mpirun result differs from the single-process run"
    log "3c. PASS: mpirun exited $first_rc after the TERM, the journals made the job requeue itself; result equal ($(( $(date +%s) - t3c )) s in Slurm)"
fi

if [[ -s $tmp/log/jobcomp.log ]]; then
    echo "--- job completion records (jobcomp/filetxt, what sacct would show):"
    while read -r line; do
        grep -oE '^JobId=[^ ]+| Name=[^ ]+| JobState=[^ ]+| StartTime=[^ ]+| EndTime=[^ ]+| ArrayJobId=[^ ]+| ArrayTaskId=[^ ]+| ExitCode=[^ ]+' <<< "$line" |
            paste -sd'\0' | sed 's/^/  /'
    done < "$tmp/log/jobcomp.log"
fi
if (( ${mpi_skipped:-0} || ${mpirun_skipped:-0} )); then
    log "PASS (skipped:${mpi_skipped:+ steps 3 and 3b, no PMIx for srun}${mpirun_skipped:+ step 3c, no mpirun})"
else
    log "PASS"
fi
