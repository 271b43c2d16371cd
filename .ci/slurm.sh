#!/usr/bin/env bash
# A one-node Slurm for the tests. `.ci/slurm.sh install` installs Slurm from Debian's packages
# when srun is missing (.ci/run runs it first, in the background, so the download is off its
# critical path). `.ci/slurm.sh start` installs it too where it is still missing, writes a config
# under a fresh temporary folder, starts slurmctld and slurmd on free ports and waits until the
# node is idle, then prints the one line to eval (`export SLURM_CONF=...`); `.ci/slurm.sh stop`
# (SLURM_CONF set) stops those two daemons by their pid files and removes the folder. Any
# failure is one line on stderr and exit 1, with the daemon's log tail: a scheduler that does
# not come up must fail CI, not hang it.
# auth/none: no munge daemon to run (this is a single-host scheduler for tests, never a
# cluster's); proctrack/linuxproc: no cgroup setup needed; task/affinity binds each task to
# its share of the cores, as a cluster's does (the tests check what lgjax makes of that).
set -euo pipefail

die() {
    echo "slurm.sh: $*" >&2
    exit 1
}

fail() {  # (the message, with the daemons' logs, is read before stop removes them)
    stop
    die "$1"
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

install_slurm() {
    if ! command -v srun >/dev/null || ! command -v slurmctld >/dev/null; then
        # the daemons, the client and their plugins; slurm-wlm would add every optional plugin
        local pkgs=(slurmctld slurmd slurm-client)
        { DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
              "${pkgs[@]}" >/dev/null ||
          { apt-get update -q >/dev/null &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
                "${pkgs[@]}" >/dev/null; }; } ||
            die "apt-get install ${pkgs[*]} failed (root and Debian's package lists needed)"
    fi
}

start() {
    install_slurm
    local dir cpus node
    dir=$(mktemp -d "${TMPDIR:-/tmp}/lgjax-slurm-XXXXXX")
    chmod 755 "$dir"
    cpus=$(nproc --all)
    # "localhost": JAX's Slurm detection takes the coordinator's host from the node list, and
    # this machine's own name need not resolve
    node=localhost
    mkdir -p "$dir/spool/ctld" "$dir/spool/d"
    cat > "$dir/slurm.conf" <<EOF
ClusterName=lgjaxci
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/none
# a requeued job may start again once its credential expired (120 s by default)
AuthInfo=cred_expire=5
CredType=cred/none
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
# a requeued job starts within a second or two, not at the next 30-60 s scheduling pass
SchedulerParameters=sched_interval=1,bf_interval=1
ReturnToService=2
StateSaveLocation=$dir/spool/ctld
SlurmdSpoolDir=$dir/spool/d
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
JobRequeue=1
# the tests' killed task takes its step down (--kill-on-bad-exit) 5 s after Slurm's SIGTERM to
# the others, not a cluster's usual 30 (the recipes state 30)
KillWait=5
InactiveLimit=0
MinJobAge=300
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
    export SLURM_CONF=$dir/slurm.conf
    slurmctld -c -f "$SLURM_CONF" ||
        fail "slurmctld did not start: $(tail -n 5 "$dir/slurmctld.log" 2>/dev/null)"
    slurmd -N "$node" -f "$SLURM_CONF" || fail "slurmd did not start: $(tail -n 5 "$dir/slurmd.log" 2>/dev/null)"
    local i state=""
    for i in $(seq 1 100); do  # 20 s: the node is idle in under a second here
        state=$(sinfo -h -N -o %T 2>/dev/null | head -n 1) || true
        [[ "$state" == idle ]] && break
        sleep 0.2
    done
    if [[ "$state" != idle ]]; then
        fail "the node is not idle: state '${state:-none}' after 20 s; slurmctld: $(tail -n 3 "$dir/slurmctld.log" 2>/dev/null | tr '\n' ' ') slurmd: $(tail -n 3 "$dir/slurmd.log" 2>/dev/null | tr '\n' ' ')"
    fi
    echo "export SLURM_CONF=$SLURM_CONF"
}

stop() {
    [[ -n "${SLURM_CONF:-}" && -f "$SLURM_CONF" ]] || return 0
    local dir pid daemon
    dir=$(dirname "$SLURM_CONF")
    scancel --quiet --full --user=root 2>/dev/null || true
    for daemon in slurmd slurmctld; do
        pid=$(cat "$dir/$daemon.pid" 2>/dev/null) || continue
        kill "$pid" 2>/dev/null || continue
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -9 "$pid" 2>/dev/null || true
    done
    case "$dir" in "${TMPDIR:-/tmp}"/lgjax-slurm-*) rm -rf "$dir" ;; esac
}

case "${1:-}" in
    install) install_slurm ;;
    start) start ;;
    stop) stop ;;
    *) die "usage: .ci/slurm.sh install|start|stop" ;;
esac
