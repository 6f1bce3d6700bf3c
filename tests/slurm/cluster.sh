#!/usr/bin/env bash
# A throwaway single-node SLURM cluster (munged, mariadbd, slurmdbd, slurmctld,
# slurmd) for integration tests that run Snakemake through
# snakemake-executor-plugin-slurm, which needs real job accounting (sacct).
#
#   cluster.sh install            install the Debian packages; exit 3 if impossible
#   cluster.sh start STATE_DIR    start everything; once a job has run and sacct
#                                 lists it, print "export SLURM_CONF=..." on stdout
#   cluster.sh stop STATE_DIR     stop everything (idempotent)
#   cluster.sh status STATE_DIR   exit 0 iff every daemon is alive
#
# All configs, keys, the database, logs and pid files live in STATE_DIR; no
# config in /etc or /run is read or written. Only unix sockets and slurmd's spool (which
# holds per-step sockets) move to a short mktemp dir when STATE_DIR is too long
# for sun_path; that dir is recorded in STATE_DIR/rundir and removed by stop.
# STATE_DIR/bin holds wrappers for the SLURM clients with SLURM_CONF built in:
# put it first on PATH where SLURM_CONF can get lost (see write_wrappers).
# Everything except the export line goes to stderr, so `eval "$(cluster.sh start D)"`.
set -euo pipefail

PACKAGES=(slurm-wlm slurmdbd mariadb-server munge)
DPKG_NAMES=(slurmctld slurmd slurmdbd slurm-client mariadb-server munge)
BINARIES=(munged mariadbd mariadb-install-db mariadb mariadb-admin slurmdbd
          slurmctld slurmd slurmstepd sbatch srun squeue sacct sacctmgr scontrol
          sinfo scancel)
CLIENTS=(sacct sacctmgr salloc sattach sbatch sbcast scancel scontrol sdiag
         sinfo sprio squeue sreport srun sshare sstat)
DAEMONS=(munged mariadbd slurmdbd slurmctld slurmd)   # start order; stop reverses it
CLUSTER_NAME=annobench
ACCOUNT=annobench
PARTITION=debug
START_TIMEOUT=${CLUSTER_START_TIMEOUT:-60}   # seconds for the whole of `start`
STOP_TIMEOUT=${CLUSTER_STOP_TIMEOUT:-20}     # seconds per daemon before SIGKILL

# The daemons and admin tools live in sbin, which a non-login PATH may lack.
export PATH="$PATH:/usr/sbin:/sbin"
# Inherited client settings (SBATCH_*, SQUEUE_FORMAT, a SLURM_CONF of another
# cluster, a SLURM_JOB_ID when run inside a job) would change what we submit
# and parse, so start from none of them.
while read -r var; do unset "$var"; done < <(compgen -e | grep -E '^(SLURM|SBATCH|SRUN|SALLOC|SQUEUE|SACCT|SINFO|SCONTROL)_' || true)

log() { printf 'cluster.sh: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

packages_present() {
    local b p status
    for b in "${BINARIES[@]}"; do command -v "$b" >/dev/null || return 1; done
    # Binaries can exist while dpkg is still unpacking; trust dpkg when it is there.
    if command -v dpkg-query >/dev/null; then
        for p in "${DPKG_NAMES[@]}"; do
            status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null) || return 1
            [[ $status =~ ^install\ ok\ (installed|triggers-pending|triggers-awaited)$ ]] || return 1
        done
    fi
}

cmd_install() {
    if packages_present; then log "packages already installed"; return 0; fi
    if [[ $(id -u) -ne 0 ]]; then
        echo "cluster.sh: not root, cannot install ${PACKAGES[*]}" >&2; exit 3
    fi
    if ! command -v apt-get >/dev/null; then
        echo "cluster.sh: no apt-get, cannot install ${PACKAGES[*]}" >&2; exit 3
    fi
    # Without a policy-rc.d the postinst scripts would start system-wide munge,
    # mariadb and slurm services on the default ports and /run sockets.
    if [[ ! -e /usr/sbin/policy-rc.d ]]; then
        printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
        trap 'rm -f /usr/sbin/policy-rc.d' EXIT
    fi
    local out; out=$(mktemp)
    local apt=(env DEBIAN_FRONTEND=noninteractive apt-get -y -q
               -o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confold)
    log "installing ${PACKAGES[*]} (log: $out)"
    if ! "${apt[@]}" install "${PACKAGES[@]}" >"$out" 2>&1; then
        log "install failed; running apt-get update and trying again"
        if ! { "${apt[@]}" update && "${apt[@]}" install "${PACKAGES[@]}"; } >>"$out" 2>&1; then
            local why; why=$(grep -E '^(E|Err):' "$out" | tail -n 1)
            [[ -n $why ]] || why=$(tail -n 1 "$out")
            echo "cluster.sh: apt-get cannot install ${PACKAGES[*]}: $why" >&2; exit 3
        fi
    fi
    if ! packages_present; then
        echo "cluster.sh: apt-get installed ${PACKAGES[*]} but binaries are missing" >&2; exit 3
    fi
    rm -f "$out"
    log "installed ${PACKAGES[*]}"
}

# --- per-STATE_DIR helpers ---------------------------------------------------

set_state() {
    [[ -n ${1:-} ]] || die "usage: $0 $CMD STATE_DIR"
    STATE=$1
    PIDS=$STATE/pids
    LOGS=$STATE/log
    RUN=$STATE/run
    [[ -f $STATE/rundir ]] && RUN=$(<"$STATE/rundir")
    export SLURM_CONF=$STATE/slurm.conf
}

# Alive = exists and is no zombie (a container's pid 1 may never reap them).
pid_alive() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) }
    [[ ${stat%% *} != Z ]]
}

# The pid recorded for DAEMON, if that process is still alive and still it
# (pids get reused, so check the command name too).
daemon_pid() {
    local name=$1 pid comm
    pid=$(cat "$PIDS/$name.pid" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    pid_alive "$pid" || return 1
    comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
    [[ $comm == "$name"* ]] || return 1
    echo "$pid"
}

# Launch a daemon in the foreground of its own session (so the caller's Ctrl-C
# or process-group kill does not reach it), stdio on a log file so that
# `$(cluster.sh start)` does not wait for it, and record its pid.
launch() {
    local name=$1; shift
    setsid "$@" </dev/null >>"$LOGS/$name.out" 2>&1 &
    echo $! >"$PIDS/$name.pid"
}

# Free TCP port below the ephemeral range, not bound by anything now and not
# handed out before in this run.
TAKEN_PORTS=" "
free_port() {
    local used port i
    local addr rest
    used=" "
    while read -r _ addr rest; do
        [[ $addr == *:* ]] && used+="$((16#${addr##*:})) "
    done < <(tail -q -n +2 /proc/net/tcp /proc/net/tcp6 2>/dev/null)
    for ((i = 0; i < 1000; i++)); do
        port=$((20000 + RANDOM % 12000))
        [[ $used == *" $port "* || $TAKEN_PORTS == *" $port "* ]] && continue
        # A listener hidden from /proc (another netns view) still answers.
        if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then continue; fi
        TAKEN_PORTS+="$port "
        echo "$port"; return 0
    done
    die "no free TCP port found"
}

# wait_for DESCRIPTION DAEMON CMD...: retry CMD until it succeeds; fail early if
# DAEMON died, or when the start deadline passes.
wait_for() {
    local what=$1 daemon=$2; shift 2
    while ! "$@" >/dev/null 2>&1; do
        if [[ -n $daemon ]] && ! daemon_pid "$daemon" >/dev/null; then
            die "$daemon exited while waiting for $what"
        fi
        ((SECONDS < DEADLINE)) || die "timed out after ${START_TIMEOUT}s waiting for $what"
        sleep 0.5
    done
}

show_logs() {
    local d f files=()
    # A daemon's .out repeats its .log once logging is up; before that (bad
    # config, missing plugin) only .out has the reason.
    for d in "${DAEMONS[@]}"; do
        if [[ -s $LOGS/$d.log ]]; then files+=("$LOGS/$d.log"); else files+=("$LOGS/$d.out"); fi
    done
    [[ -s $LOGS/mariadbd.log ]] || files+=("$LOGS/mariadb-install.log")
    files+=("$LOGS"/smoke-*.out)
    for f in "${files[@]}"; do
        [[ -s $f ]] || continue
        printf '\n==== %s (last 25 lines) ====\n' "$f" >&2
        tail -n 25 "$f" >&2
    done
}

sql() { mariadb --no-defaults --protocol=socket --socket="$RUN/mysql.sock" -uroot -e "$1"; }

write_slurm_conf() {
    local host=$1 cpus mem
    # nproc obeys OMP_NUM_THREADS, which test processes pin to 1: count the
    # CPUs this process may run on instead.
    cpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
    # Slurm drains a node whose RealMemory exceeds what slurmd finds, and jobs
    # can only get memory that is really there: stay a bit below MemAvailable.
    mem=$(awk '/^MemAvailable:/ {printf "%d", $2 / 1024 * 0.9}' /proc/meminfo)
    ((mem >= 256)) || mem=256
    cat >"$STATE/slurm.conf" <<EOF
# Generated by tests/slurm/cluster.sh: single-node test cluster, state in $STATE
ClusterName=$CLUSTER_NAME
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$RUN/munge.sock
StateSaveLocation=$STATE/slurmctld
SlurmdSpoolDir=$RUN/slurmd
SlurmctldPidFile=$STATE/slurmctld/slurmctld.pid
SlurmdPidFile=$RUN/slurmd/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroup delegation to count on: track processes through /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=10
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
# With slurmdbd this is not a password but the munge socket that clients use to
# reach slurmdbd; unset, sacct/sacctmgr go to /run/munge despite AuthInfo.
AccountingStoragePass=$RUN/munge.sock
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Jobs that ask for no memory would otherwise get the whole node, one at a time.
DefMemPerCPU=512
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
# Short timeouts so a test cluster comes up, and gives up, quickly.
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
MessageTimeout=10
TCPTimeout=5
InactiveLimit=0
KillWait=5
Waittime=0
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

write_slurmdbd_conf() {
    # Written before anything is put in it: slurmdbd insists on mode 600 (the
    # database password is in it).
    (umask 077; : >"$STATE/slurmdbd.conf")
    cat >"$STATE/slurmdbd.conf" <<EOF
# Generated by tests/slurm/cluster.sh
AuthType=auth/munge
AuthInfo=socket=$RUN/munge.sock
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
PidFile=$STATE/slurmdbd.pid
LogFile=$LOGS/slurmdbd.log
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$MYSQL_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
    chmod 600 "$STATE/slurmdbd.conf"
}

# SLURM clients that find this cluster even where SLURM_CONF was dropped from the
# environment (snakemake's slurm-jobstep strips every SLURM_* variable before
# its nested `srun`, so without these it would look in /etc/slurm).
write_wrappers() {
    local c path
    mkdir -p "$STATE/bin"
    for c in "${CLIENTS[@]}"; do
        path=$(command -v "$c") || continue
        printf '#!/bin/sh\nSLURM_CONF=%q exec %q "$@"\n' "$STATE/slurm.conf" "$path" >"$STATE/bin/$c"
        chmod 755 "$STATE/bin/$c"
    done
}

smoke_job_done() {
    local state
    state=$(sacct -j "$1" -X -n -P -o State 2>/dev/null) || return 1
    [[ $state == COMPLETED* ]]
}

node_idle() {
    local s
    s=$(timeout 10 sinfo -h -N -n "$1" -o %t 2>/dev/null) || return 1
    [[ $s == idle ]]
}

cmd_start() {
    set_state "${1:-}"
    [[ $(id -u) -eq 0 ]] || die "start needs root (slurmd runs as root to launch jobs)"
    packages_present || die "SLURM/munge/mariadb packages are missing: run '$0 install'"
    mkdir -p "$STATE"
    STATE=$(cd "$STATE" && pwd -P)
    set_state "$STATE"
    [[ ! -e $STATE/slurm.conf ]] || die "$STATE already holds a cluster: stop it and use a fresh STATE_DIR"
    DEADLINE=$((SECONDS + START_TIMEOUT))
    chmod 700 "$STATE"   # munge key and database password live here
    mkdir -p "$PIDS" "$LOGS" "$STATE/munge" "$STATE/slurmctld" "$STATE/mysql" "$STATE/tmp"

    local host; host=$(hostname -s 2>/dev/null || uname -n); host=${host%%.*}
    # sun_path holds 107 bytes, and slurmd names step sockets
    # "<spool>/<node>_<jobid>.<stepid>[.<comp>]" in its spool dir.
    if (( ${#RUN} + ${#host} + 48 > 107 )); then
        RUN=$(mktemp -d "${TMPDIR:-/tmp}/slurm.XXXXXX")
        echo "$RUN" >"$STATE/rundir"
        log "STATE_DIR is long: sockets and slurmd spool go to $RUN"
    fi
    mkdir -p "$RUN/slurmd"; chmod 711 "$RUN"   # munged wants its socket dir searchable

    # From here on a failure stops whatever came up and shows why.
    # (CLUSTER_KEEP_ON_FAILURE=1 leaves it running for a look.)
    trap 'rc=$?; if ((rc)); then show_logs
        if [[ ${CLUSTER_KEEP_ON_FAILURE:-0} == 1 ]]; then log "start failed; left running"
        else log "start failed; stopping what was started"; cmd_stop "$STATE" || true; fi
    fi; exit $rc' EXIT

    CTLD_PORT=$(free_port); SLURMD_PORT=$(free_port); DBD_PORT=$(free_port); MYSQL_PORT=$(free_port)
    DB_PASS=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
    write_slurm_conf "$host"
    write_slurmdbd_conf
    write_wrappers
    log "ports: slurmctld $CTLD_PORT, slurmd $SLURMD_PORT, slurmdbd $DBD_PORT, mariadb $MYSQL_PORT"

    # munge: a fresh key of our own; --force because as root munged refuses
    # some ownership/permission setups it would accept for a service user.
    (umask 077; head -c 1024 /dev/urandom >"$STATE/munge/munge.key")
    launch munged munged --foreground --force --socket="$RUN/munge.sock" \
        --key-file="$STATE/munge/munge.key" --pid-file="$STATE/munge/munged.pid" \
        --log-file="$LOGS/munged.log" --seed-file="$STATE/munge/munged.seed"
    wait_for "munged" munged sh -c 'munge -n --socket="$1" | unmunge --socket="$1"' _ "$RUN/munge.sock"

    # mariadb on a private datadir; --no-defaults keeps /etc/mysql out of it.
    mariadb-install-db --no-defaults --datadir="$STATE/mysql" --user=root \
        --auth-root-authentication-method=socket --skip-test-db \
        >"$LOGS/mariadb-install.log" 2>&1 || die "mariadb-install-db failed"
    launch mariadbd mariadbd --no-defaults --datadir="$STATE/mysql" --user=root \
        --socket="$RUN/mysql.sock" --port="$MYSQL_PORT" --bind-address=127.0.0.1 \
        --pid-file="$STATE/mysql/mariadbd.pid" --log-error="$LOGS/mariadbd.log" \
        --tmpdir="$STATE/tmp" --skip-name-resolve --skip-log-bin \
        --innodb-use-native-aio=0 --innodb-buffer-pool-size=128M \
        --innodb-lock-wait-timeout=900
    # (no native AIO: sandboxes often lack io_uring/libaio; the other two are
    # what slurmdbd warns about when they are lower)
    wait_for "mariadbd" mariadbd mariadb-admin --no-defaults --socket="$RUN/mysql.sock" -uroot ping
    # slurmdbd.conf has no socket setting (only libmariadb's MYSQL_UNIX_PORT
    # would steer it to one), so slurmdbd talks TCP on loopback.
    sql "CREATE DATABASE slurm_acct_db;
         CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
         GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';" \
        || die "could not create the accounting database"

    launch slurmdbd slurmdbd -D
    wait_for "slurmdbd" slurmdbd timeout 10 sacctmgr -n show cluster
    # sacctmgr -i: no confirmation prompt. Adding the cluster also creates the
    # account "root" with user root; the tests get an account of their own.
    sacctmgr -i add cluster "$CLUSTER_NAME" >&2
    sacctmgr -i add account "$ACCOUNT" Cluster="$CLUSTER_NAME" \
        Description="annobench tests" Organization=annobench >&2
    sacctmgr -i add user root Account="$ACCOUNT" Cluster="$CLUSTER_NAME" >&2
    sacctmgr -i modify user root set DefaultAccount="$ACCOUNT" >&2

    launch slurmctld slurmctld -D
    wait_for "slurmctld" slurmctld timeout 10 scontrol ping
    launch slurmd slurmd -D -N "$host"
    wait_for "node $host to be idle" slurmd node_idle "$host"

    # The cluster is usable once a job has run and accounting has recorded it.
    local id
    local left=$((DEADLINE - SECONDS)); ((left >= 10)) || left=10
    id=$(timeout "$left" sbatch --parsable --wait -J cluster-smoke \
        -D "$STATE/tmp" -o "$LOGS/smoke-%j.out" --wrap true) \
        || die "smoke job ${id:-?} did not complete"
    wait_for "sacct to list smoke job $id as COMPLETED" slurmdbd smoke_job_done "$id"

    trap - EXIT
    log "cluster up in ${SECONDS}s (smoke job $id COMPLETED)"
    printf 'export SLURM_CONF=%q\n' "$STATE/slurm.conf"
}

stop_daemon() {
    local name=$1 pid i
    if pid=$(daemon_pid "$name"); then
        kill -TERM "$pid" 2>/dev/null || true
        for ((i = 0; i < STOP_TIMEOUT * 4; i++)); do
            pid_alive "$pid" || break
            sleep 0.25
        done
        if pid_alive "$pid"; then
            log "$name ($pid) ignored SIGTERM for ${STOP_TIMEOUT}s; sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
            for ((i = 0; i < 20; i++)); do pid_alive "$pid" || break; sleep 0.25; done
        fi
    fi
    rm -f "$PIDS/$name.pid"
}

# "PID PPID" for every process, from /proc (procps may be missing).
pid_ppid_pairs() {
    local f stat rest
    for f in /proc/[0-9]*/stat; do
        stat=$(cat "$f" 2>/dev/null) || continue
        rest=${stat##*) }          # fields after "(comm)": state ppid ...
        rest=${rest#* }
        echo "${stat%% *} ${rest%% *}"
    done
}

# slurmstepd outlives slurmd; ours inherit slurmd's SLURM_CONF, which tells
# them apart from another cluster's. Their job processes go with them.
stop_stepds() {
    local p pid ppid pids=() kids
    for p in /proc/[0-9]*; do
        [[ $(cat "$p/comm" 2>/dev/null) == slurmstepd ]] || continue
        tr '\0' '\n' 2>/dev/null <"$p/environ" | grep -qxF "SLURM_CONF=$SLURM_CONF" || continue
        pids+=("${p#/proc/}")
    done
    ((${#pids[@]})) || return 0
    # Add descendants until nothing new turns up.
    kids=" ${pids[*]} "
    local grew=1
    while ((grew)); do
        grew=0
        while read -r pid ppid; do
            if [[ $kids == *" $ppid "* && $kids != *" $pid "* ]]; then kids+="$pid "; grew=1; fi
        done < <(pid_ppid_pairs)
    done
    log "killing leftover slurmstepd ${pids[*]} and their processes:$kids"
    kill -KILL $kids 2>/dev/null || true
}

cmd_stop() {
    set_state "${1:-}"
    [[ -d $STATE ]] || { log "$STATE does not exist; nothing to stop"; return 0; }
    # Cancel jobs while slurmd is still there to kill their processes.
    if daemon_pid slurmctld >/dev/null && daemon_pid slurmd >/dev/null; then
        local jobs i
        jobs=$(timeout 10 squeue -h -o %i 2>/dev/null || true)
        if [[ -n $jobs ]]; then
            log "cancelling jobs: $(echo $jobs)"
            timeout 10 scancel $jobs 2>/dev/null || true
            for ((i = 0; i < 40; i++)); do
                [[ -z $(timeout 10 squeue -h -o %i -t R,CG 2>/dev/null || true) ]] && break
                sleep 0.25
            done
        fi
    fi
    local d
    for ((d = ${#DAEMONS[@]} - 1; d >= 0; d--)); do
        stop_daemon "${DAEMONS[d]}"
        [[ ${DAEMONS[d]} == slurmd ]] && stop_stepds
    done
    # The short socket dir outside STATE_DIR is ours alone (mktemp).
    if [[ -f $STATE/rundir ]]; then
        if [[ -d $RUN && ${RUN##*/} == slurm.?????? ]]; then rm -rf -- "$RUN"; fi
        rm -f "$STATE/rundir"
    else
        rm -f "$RUN"/*.sock "$RUN"/*.sock.lock
    fi
    log "stopped cluster in $STATE"
}

cmd_status() {
    set_state "${1:-}"
    local d rc=0
    for d in "${DAEMONS[@]}"; do
        if daemon_pid "$d" >/dev/null; then log "$d running"; else log "$d NOT running"; rc=1; fi
    done
    return $rc
}

CMD=${1:-}
case $CMD in
    install) cmd_install ;;
    start)   cmd_start "${2:-}" ;;
    stop)    cmd_stop "${2:-}" ;;
    status)  cmd_status "${2:-}" ;;
    *) echo "usage: $0 install | start STATE_DIR | stop STATE_DIR | status STATE_DIR" >&2; exit 2 ;;
esac
