# shellcheck shell=bash
# A throwaway single-node Slurm cluster (munged + slurmctld + slurmd) that lives
# entirely inside one directory, for tests that submit real Slurm jobs.
# Source this file from a bash script, then:
#
#   trap slurm_cluster_stop EXIT          # the library sets no trap itself
#   slurm_cluster_start "$dir" || exit    # 77: Slurm cannot run here (skip)
#   id=$(sbatch --parsable --wrap true)
#   slurm_wait_jobs 60 "$id"
#   [ "$(slurm_job_state "$id")" = COMPLETED ]
#
# Needs root (SlurmUser=root; slurmd starts jobs as the submitting user) and
# Debian's slurmctld, slurmd, slurm-client and munge packages (scripts/setup).
# No systemd, no /etc/slurm or /etc/munge: every file, socket, port and log is
# the cluster's own, so it can run beside a real Slurm or munge installation.
#
# Return codes of slurm_cluster_start: 0 running; 77 Slurm cannot run here
# (packages missing, not root, or a daemon did not come up), with one line on
# stderr saying why; 1 misuse (bad directory, cluster already started).
#
# Slurm 22.05 facts the tests must allow for (measured on Debian 12):
#   - time limits are whole minutes (--time=0:05 means 1 minute), and slurmctld
#     checks them every 30 s counted from its own start, so a --time=1 job is
#     sent SIGTERM 60-90 s after it starts, then SIGKILL after KillWait (5 s);
#   - --signal=...@N arrives N to N+30 s before the end time, for the same reason;
#   - srun answers SIGTERM by SIGKILLing its step ("forcing job termination").

SLURM_CLUSTER_SKIP=77
_slurm_reason="" # why the last start attempt failed

# Ports must not collide with anything listening, nor with the kernel's
# ephemeral range (32768-60999), which srun and slurmstepd use for their sockets.
_slurm_port_low=20000
_slurm_port_high=32000

_slurm_say() { echo "$*" >&2; }

# Listening TCP ports, in decimal, one per line (from /proc: no iproute2 needed).
_slurm_listening_ports() {
  local f
  for f in /proc/net/tcp /proc/net/tcp6; do
    [ -r "$f" ] || continue
    # Field 2 is ADDR:PORT in hex, field 4 the state; 0A is LISTEN.
    awk 'NR > 1 && $4 == "0A" { split($2, a, ":"); print a[2] }' "$f"
  done | while read -r hex; do echo $((16#$hex)); done
}

# Prints a port P such that P and P+1 are both free.
_slurm_free_port_pair() {
  local used p
  used=" $(_slurm_listening_ports | tr '\n' ' ') "
  for _ in $(seq 50); do
    p=$((_slurm_port_low + RANDOM % (_slurm_port_high - _slurm_port_low)))
    case "$used" in *" $p "* | *" $((p + 1)) "*) continue ;; esac
    echo "$p"
    return 0
  done
  return 1
}

# True while PID exists and is not a zombie (kill -0 succeeds on zombies).
_slurm_alive() {
  local state
  [ -r "/proc/$1/stat" ] || return 1
  state=$(sed 's/^.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1) || return 1
  [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# Last line of a log that looks like an error, for one-line failure reasons.
# Skips the errors every fresh start logs: no saved state yet, and the PMIx
# MPI plugins that Debian ships without libpmix.
_slurm_last_error() {
  local line
  line=$(grep -hiE 'error|fatal|cannot|failed' "$@" 2>/dev/null |
    grep -viE 'state (save )?file|may be lost|pmix|MPI: Cannot create context' | tail -n 1) || true
  echo "${line:-no error logged in $*}"
}

# Stops what slurm_cluster_start started so far and returns its "skip" code.
_slurm_start_failed() {
  _slurm_say "slurm_cluster_start: cannot run Slurm here: $*"
  slurm_cluster_stop >/dev/null 2>&1 || true
  return "$SLURM_CLUSTER_SKIP"
}

# Starts a background daemon with stdio on files, so that it never holds the
# caller's stdout/stderr open (ctest would wait for it), and records its PID.
# The marker variable lets slurm_cluster_stop find the slurmstepd processes
# that slurmd forks, which outlive it and are not its children any more.
_slurm_spawn() {
  local name=$1
  shift
  env SLURM_CLUSTER_MARK="$SLURM_CLUSTER_DIR" "$@" \
    </dev/null >>"$SLURM_CLUSTER_DIR/log/$name.stdout" 2>&1 &
  SLURM_CLUSTER_PIDS+=("$!")
  echo "$name $!" >>"$SLURM_CLUSTER_DIR/run/pids"
}

# slurm_cluster_start DIR: writes a munge key and slurm.conf into DIR, starts
# munged, slurmctld and slurmd, waits until the node is idle, and exports
# SLURM_CONF (all that sbatch/squeue/scontrol/srun need) and SLURM_CLUSTER_DIR.
# Environment knobs: SLURM_CLUSTER_CPUS (CPUs of the node; more than the
# machine has is allowed and oversubscribes, default: the machine's own),
# SLURM_CLUSTER_TIMEOUT (seconds to reach idle, default 30).
slurm_cluster_start() {
  if [ $# -ne 1 ] || [ -z "$1" ]; then
    _slurm_say "usage: slurm_cluster_start DIR"
    return 1
  fi
  if [ -n "${SLURM_CLUSTER_DIR:-}" ]; then
    _slurm_say "slurm_cluster_start: a cluster is already running in $SLURM_CLUSTER_DIR"
    return 1
  fi
  local dir cmd
  if ! mkdir -p "$1" || ! dir=$(cd "$1" && pwd -P); then
    _slurm_say "slurm_cluster_start: cannot create directory $1"
    return 1
  fi
  # A Unix socket path holds at most 107 bytes; the longest one is slurmd's
  # per-step socket in the spool directory.
  if [ ${#dir} -gt 70 ]; then
    _slurm_say "slurm_cluster_start: directory path too long for Unix sockets (${#dir} > 70 bytes): $dir"
    return 1
  fi

  for cmd in munged slurmctld slurmd sbatch squeue sinfo scontrol scancel srun; do
    command -v "$cmd" >/dev/null 2>&1 || {
      _slurm_say "slurm_cluster_start: cannot run Slurm here: $cmd not found (install slurmctld slurmd slurm-client munge)"
      return "$SLURM_CLUSTER_SKIP"
    }
  done
  if [ "$(id -u)" -ne 0 ]; then
    _slurm_say "slurm_cluster_start: cannot run Slurm here: needs root (slurmd runs jobs as their submitter)"
    return "$SLURM_CLUSTER_SKIP"
  fi

  SLURM_CLUSTER_DIR=$dir
  SLURM_CLUSTER_PIDS=()
  # munge refuses a key readable by others, or one in a directory others can
  # write to; the socket directory must be searchable by job users.
  mkdir -p "$dir/munge" "$dir/run" "$dir/state" "$dir/spool" "$dir/log"
  chmod 0700 "$dir/munge" "$dir/state" "$dir/spool"
  chmod 0755 "$dir/run" "$dir/log"
  : >"$dir/run/pids"

  # --- munge --------------------------------------------------------------
  local key=$dir/munge/munge.key sock=$dir/run/munge.sock
  if command -v mungekey >/dev/null 2>&1; then
    mungekey --create --force --keyfile="$key" 2>"$dir/log/mungekey.log" ||
      { _slurm_start_failed "mungekey failed: $(_slurm_last_error "$dir/log/mungekey.log")"; return; }
  else
    dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
  fi
  chmod 0400 "$key"
  # -F: foreground, so $! is munged itself. -f: DIR's parents may be 0700
  # (mktemp -d), which munged otherwise rejects as an unusable socket path.
  _slurm_spawn munged munged -F -f --key-file="$key" --socket="$sock" \
    --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" \
    --seed-file="$dir/munge/munged.seed"
  local i
  for i in $(seq 50); do
    [ -S "$sock" ] && break
    _slurm_alive "${SLURM_CLUSTER_PIDS[0]}" ||
      { _slurm_start_failed "munged exited at start: $(_slurm_last_error "$dir/log/munged.log" "$dir/log/munged.stdout")"; return; }
    sleep 0.1
  done
  [ -S "$sock" ] || { _slurm_start_failed "munged created no socket within 5 s"; return; }

  # --- slurm.conf ---------------------------------------------------------
  local port node_line node_name mem cpus conf=$dir/slurm.conf overrides=""
  # slurmd -C prints this machine's node line (name from gethostname(), which
  # is also how slurmd finds its own entry), e.g.
  # NodeName=vm CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=24105
  node_line=$(slurmd -C 2>/dev/null | head -n 1) || true
  node_name=$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' <<<"$node_line")
  mem=$(sed -n 's/.*RealMemory=\([0-9]*\).*/\1/p' <<<"$node_line")
  local mem_hw=$mem
  if [ -z "$node_name" ] || [ -z "$mem" ]; then
    _slurm_start_failed "slurmd -C printed no node line"
    return
  fi
  # Under what the machine has, or slurmctld drains the node ("Low RealMemory").
  mem=$((mem > 1024 ? mem - 512 : mem))
  cpus=${SLURM_CLUSTER_CPUS:-}
  if [ -n "$cpus" ]; then
    # More CPUs than the machine has: slurmd must trust slurm.conf over its
    # own count, and the topology is left to Slurm (CPUs only).
    node_line="NodeName=$node_name CPUs=$cpus"
    overrides="SlurmdParameters=config_overrides"
  else
    node_line=${node_line/ RealMemory=$mem_hw/}
  fi

  # --- slurmctld and slurmd -----------------------------------------------
  # Client commands and jobs find the cluster through SLURM_CONF alone. Drop
  # SLURM_*/SBATCH_*/SRUN_*/SQUEUE_*/SINFO_* variables inherited from a real
  # Slurm job (e.g. tests run inside an allocation): they would steer sbatch
  # and srun towards that job.
  local v
  for v in $(compgen -e); do
    case "$v" in SLURM_CLUSTER_* | SLURM_CONF) ;; SLURM_* | SBATCH_* | SRUN_* | SQUEUE_* | SINFO_* | SALLOC_*) unset "$v" ;; esac
  done
  export SLURM_CONF=$conf SLURM_CLUSTER_DIR

  # A port found free can be taken before slurmctld or slurmd binds it (by a
  # cluster of a test running in parallel): then try other ports.
  for _ in 1 2 3; do
    port=$(_slurm_free_port_pair) || {
      _slurm_start_failed "no free TCP port pair in $_slurm_port_low-$_slurm_port_high"
      return
    }
    cat >"$conf" <<EOF
# Written by tests/slurm/cluster.sh for a throwaway cluster in $dir.
ClusterName=tftest
# localhost: slurmctld accepts it whatever the hostname, and clients reach it
# on loopback; the node too is addressed on loopback only.
SlurmctldHost=localhost
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups (no systemd in CI containers): plain process-tree tracking.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
# Debian's packages bring no mail program; the default path only logs errors.
MailProg=/bin/true
# Cores are the consumable, so array tasks share the node; memory is not
# (with CR_Core_Memory a job without --mem would take the whole node).
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# Time-limit kills: SIGTERM, then SIGKILL 5 s later (default 30 s).
KillWait=5
# No accounting database: finished jobs stay in scontrol's view this long.
MinJobAge=300
$overrides
$node_line NodeAddr=127.0.0.1 RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    if _slurm_run_daemons "$dir" "$conf"; then return 0; fi
    [[ "$_slurm_reason" == *"Address already in use"* ]] || break
    _slurm_drop_slurm_daemons
  done
  _slurm_start_failed "$_slurm_reason"
}

# Starts slurmctld and slurmd on DIR's slurm.conf and waits until the node is
# idle. On failure, returns 1 with the reason in _slurm_reason.
_slurm_run_daemons() {
  local dir=$1 conf=$2
  # -D: foreground, so $! is the daemon and an early exit is seen at once.
  # -c: start with an empty state even if DIR is reused.
  _slurm_spawn slurmctld slurmctld -D -c -f "$conf"
  _slurm_spawn slurmd slurmd -D -f "$conf"

  local timeout=${SLURM_CLUSTER_TIMEOUT:-30} state="" start=$SECONDS name pid
  while :; do
    for pid in "${SLURM_CLUSTER_PIDS[@]}"; do
      _slurm_alive "$pid" && continue
      name=$(awk -v p="$pid" '$2 == p { print $1 }' "$dir/run/pids")
      _slurm_reason="$name exited at start: $(_slurm_last_error "$dir/log/$name.log" "$dir/log/$name.stdout")"
      return 1
    done
    state=$(sinfo -h -o %T 2>/dev/null) || true
    [ "$state" = idle ] && return 0
    if [ $((SECONDS - start)) -ge "$timeout" ]; then
      _slurm_reason="node not idle after ${timeout}s (state: ${state:-no answer}): $(_slurm_last_error "$dir/log/slurmctld.log" "$dir/log/slurmd.log")"
      return 1
    fi
    sleep 0.2
  done
}

# Stops the slurmctld and slurmd of a failed start, keeping munged.
_slurm_drop_slurm_daemons() {
  local p
  for p in "${SLURM_CLUSTER_PIDS[@]:1}"; do
    _slurm_alive "$p" && kill -TERM "$p" 2>/dev/null
    _slurm_wait_gone 10 "$p" || kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null || true
  done
  SLURM_CLUSTER_PIDS=("${SLURM_CLUSTER_PIDS[0]}")
  sed -i '/^munged /!d' "$SLURM_CLUSTER_DIR/run/pids"
  # So that the next attempt's failure reason comes from its own logs.
  for p in "$SLURM_CLUSTER_DIR"/log/slurm*; do mv -f "$p" "$p.failed"; done
}

# PIDs of processes that belong to the cluster in DIR but were not recorded:
# slurmstepd (marked through slurmd's environment) and job processes (their
# environment has this SLURM_CONF and a SLURM_JOB_ID).
_slurm_stray_pids() {
  local dir=$1 p
  for p in /proc/[0-9]*; do
    p=${p#/proc/}
    [ "$p" = "$$" ] && continue
    [ "$p" = "${BASHPID:-}" ] && continue
    if grep -qzxF "SLURM_CLUSTER_MARK=$dir" "/proc/$p/environ" 2>/dev/null ||
      { grep -qzxF "SLURM_CONF=$dir/slurm.conf" "/proc/$p/environ" 2>/dev/null &&
        grep -qz '^SLURM_JOB_ID=' "/proc/$p/environ" 2>/dev/null; }; then
      _slurm_alive "$p" && echo "$p"
    fi
  done
  return 0
}

# Waits up to $1 seconds for all of the given PIDs to be gone; true if they are.
_slurm_wait_gone() {
  local deadline=$((SECONDS + $1)) p left
  shift
  while :; do
    left=0
    for p in "$@"; do _slurm_alive "$p" && left=1; done
    [ "$left" -eq 0 ] && return 0
    [ "$SECONDS" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}

# slurm_cluster_stop: cancels all jobs, stops slurmd, slurmctld and munged by
# their recorded PIDs (SIGTERM, then SIGKILL after 10 s), kills leftover
# slurmstepd and job processes, and fails (one line on stderr) if anything of
# the cluster is still alive. Safe to call twice or before a start.
slurm_cluster_stop() {
  local dir=${SLURM_CLUSTER_DIR:-}
  [ -n "$dir" ] || return 0
  local pids=("${SLURM_CLUSTER_PIDS[@]}") ids p i stray

  # Cancelled jobs get SIGTERM, then SIGKILL after KillWait: let slurmstepd
  # finish them while slurmd is still there to report it.
  if [ ${#pids[@]} -ge 3 ] && _slurm_alive "${pids[1]}"; then
    ids=$(timeout 10 squeue -h -o %A 2>/dev/null | tr '\n' ' ') || ids=""
    if [ -n "${ids// /}" ]; then
      # shellcheck disable=SC2086  # a list of job ids
      timeout 10 scancel --quiet $ids 2>/dev/null || true
      local deadline=$((SECONDS + 10))
      while [ "$SECONDS" -lt "$deadline" ] &&
        [ -n "$(timeout 10 squeue -h -t R,CG,S,CF -o %A 2>/dev/null)" ]; do
        sleep 0.2
      done
    fi
  fi

  # Reverse start order: slurmd, slurmctld (and its slurmscriptd child), munged.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    _slurm_alive "$p" && kill -TERM "$p" 2>/dev/null
    _slurm_wait_gone 10 "$p" || kill -KILL "$p" 2>/dev/null
    wait "$p" 2>/dev/null || true # reap: ours when started from this shell
  done

  mapfile -t stray < <(_slurm_stray_pids "$dir")
  if [ ${#stray[@]} -gt 0 ]; then
    kill -KILL "${stray[@]}" 2>/dev/null || true
    _slurm_wait_gone 5 "${stray[@]}" || true
  fi

  local left=()
  for p in "${pids[@]}"; do _slurm_alive "$p" && left+=("$p"); done
  mapfile -t stray < <(_slurm_stray_pids "$dir")
  left+=("${stray[@]}")
  unset SLURM_CLUSTER_DIR SLURM_CONF
  SLURM_CLUSTER_PIDS=()
  if [ ${#left[@]} -gt 0 ]; then
    _slurm_say "slurm_cluster_stop: processes still alive after SIGKILL: ${left[*]}"
    return 1
  fi
  return 0
}

# States after which a job never runs again.
_slurm_final_states=" BOOT_FAIL CANCELLED COMPLETED DEADLINE FAILED NODE_FAIL OUT_OF_MEMORY PREEMPTED TIMEOUT "

# slurm_job_state JOBID: the job's state from scontrol (e.g. PENDING, RUNNING,
# COMPLETED, FAILED, TIMEOUT, CANCELLED). For an array's job id, one
# "JOBID_TASK STATE" line per task; for one task, pass JOBID_TASK.
# Finished jobs are remembered for MinJobAge (300 s) after they end.
slurm_job_state() {
  [ $# -eq 1 ] || { _slurm_say "usage: slurm_job_state JOBID"; return 1; }
  local out
  out=$(scontrol -o show job "$1" 2>&1) || { _slurm_say "slurm_job_state: $out"; return 1; }
  if [[ "$1" != *_* ]] && grep -q ' ArrayTaskId=' <<<"$out"; then
    # Pending tasks still folded into one record show as ArrayTaskId=2-3 etc.
    sed -n 's/.* ArrayJobId=\([0-9]*\) ArrayTaskId=\([^ ]*\) .* JobState=\([A-Z_]*\) .*/\1_\2 \3/p' <<<"$out" | sort -t_ -k2n
  else
    sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p' <<<"$out"
  fi
}

# slurm_wait_jobs TIMEOUT JOBID...: waits until every given job (an array id
# counts all its tasks) is in a final state. Returns 1, with one line naming
# the unfinished jobs, after TIMEOUT seconds.
slurm_wait_jobs() {
  [ $# -ge 2 ] || { _slurm_say "usage: slurm_wait_jobs TIMEOUT JOBID..."; return 1; }
  local deadline=$((SECONDS + $1)) id s states pending
  shift
  while :; do
    pending=()
    for id in "$@"; do
      states=$(scontrol -o show job "$id" 2>/dev/null | sed -n 's/.* JobState=\([A-Z_]*\) .*/\1/p') || states=""
      [ -n "$states" ] || { pending+=("$id(unknown)"); continue; }
      for s in $states; do
        [[ "$_slurm_final_states" == *" $s "* ]] || { pending+=("$id($s)"); break; }
      done
    done
    [ ${#pending[@]} -eq 0 ] && return 0
    if [ "$SECONDS" -ge "$deadline" ]; then
      _slurm_say "slurm_wait_jobs: not finished after timeout: ${pending[*]}"
      return 1
    fi
    sleep 0.5
  done
}

# slurm_cluster_show_logs DIR [FILE...]: the last lines of each daemon's log in the
# cluster directory DIR (its stderr when it wrote no log file), and of the given files
# (e.g. job outputs), on stderr; for failure reports, also after slurm_cluster_stop.
slurm_cluster_show_logs() {
  local dir=$1 name f
  shift
  for name in munged slurmctld slurmd; do
    f=$dir/log/$name.log
    [ -s "$f" ] || f=$dir/log/$name.stdout
    set -- "$f" "$@"
  done
  for f in "$@"; do
    [ -s "$f" ] || continue
    echo "--- last lines of $f" >&2
    tail -n 20 "$f" >&2
  done
}
