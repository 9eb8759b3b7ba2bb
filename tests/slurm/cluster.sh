#!/usr/bin/env bash
# A real, throw-away two-node Slurm cluster on ONE machine, for tests.
#
#   cluster.sh start    install packages if needed, start munged, slurmctld and
#                       two slurmd "nodes" (node1, node2), wait until both are up
#   cluster.sh stop     kill everything started here and remove all state
#   cluster.sh status   print sinfo; exit 0 only if both nodes respond and are
#                       schedulable (idle, or mix/alloc/completing when busy)
#
# Must run as root (Debian 12). Layout:
#   - slurmctld runs on the host network, inside its own UTS namespace with the
#     hostname "slurmctl", so SlurmctldHost does not depend on the machine's
#     hostname; it is reached at the bridge address $CTL_ADDR.
#   - each node is a network namespace (own address, own hostname) attached to
#     a host bridge by a veth pair; slurmd runs there with "slurmd -N nodeX".
#     All namespaces share the filesystem, so job output lands where expected.
#   - everything generated lives in $STATE; /etc/hosts lines are tagged with
#     $HOSTS_TAG; /etc/slurm/slurm.conf is a symlink into $STATE so sinfo,
#     sbatch, srun... (and the Snakemake slurm plugin) work without SLURM_CONF.
#   - no cgroup.conf: with proctrack/linuxproc + task/affinity, slurmd 22.05
#     does not touch cgroups here, so none is needed.
#   - accounting: slurmdbd with its own MariaDB server (Debian's mariadb-server),
#     data in $STATE/mysql, listening on 127.0.0.1:$DB_PORT and a socket in
#     $STATE/run only (no grant tables: nothing but this machine can reach it),
#     the cluster registered with sacctmgr. MariaDB starts first, in the
#     background, while munge, the network and the config are set up.
# Environment: SCALESTUDY_SLURM_STATE (state folder), SCALESTUDY_SLURM_WAIT
# (seconds start waits for the nodes, default 60), SCALESTUDY_SLURM_ACCOUNTING
# (1, the default: slurmdbd and sacct; 0: no accounting, as on sites without it).
set -euo pipefail

STATE=${SCALESTUDY_SLURM_STATE:-/var/lib/scalestudy-slurm}
CONF_DIR=$STATE/etc
CONF=$CONF_DIR/slurm.conf
LOG_DIR=$STATE/log
RUN_DIR=$STATE/run
ETC_LINK=/etc/slurm/slurm.conf
HOSTS_TAG="# scalestudy-slurm"

BRIDGE=ssbr0
NET_PREFIX=10.199.77 # /24 used only on the bridge
CTL_NAME=slurmctl
CTL_ADDR=$NET_PREFIX.1
NODES=(node1 node2)
declare -A NODE_ADDR=([node1]=$NET_PREFIX.11 [node2]=$NET_PREFIX.12)
PARTITION=debug
NODE_MEM_MB=8000 # RealMemory per node (both nodes share the RAM)
GPUS_PER_NODE=2  # stand-in GPUs per node (no CUDA): see gres.conf below
WAIT_SECONDS=${SCALESTUDY_SLURM_WAIT:-60}
PACKAGES=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server)
ACCOUNTING=${SCALESTUDY_SLURM_ACCOUNTING:-1}
[[ $ACCOUNTING == 0 || $ACCOUNTING == 1 ]] || {
    echo "SCALESTUDY_SLURM_ACCOUNTING must be 0 or 1, not '$ACCOUNTING'" >&2
    exit 2
}
DB_DIR=$STATE/mysql
DB_PORT=6899 # MariaDB of this cluster only, on 127.0.0.1
DBD_PORT=6819

log() { echo "[cluster.sh] $*" >&2; }
die() {
    log "ERROR: $*"
    exit 1
}

# ---------------------------------------------------------------- helpers ---

# is_live PID: process exists and is not a zombie. Zombies matter here: the
# daemons fork into the background and on some machines (containers, VMs
# whose PID 1 does not reap) their exited parents/selves linger as zombies.
is_live() {
    local stat
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    stat=${stat##*) } # state is the first field after "(comm) "
    [[ ${stat:0:1} != Z ]]
}

# pid_alive PIDFILE COMM: true if the pid in PIDFILE is a live process named
# COMM (the name check guards against a recycled pid).
pid_alive() {
    local pidfile=$1 comm=$2 pid
    [[ -s $pidfile ]] || return 1
    pid=$(<"$pidfile")
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    is_live "$pid" && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$comm" ]]
}

# kill_and_wait PID...: TERM, wait up to 10 s, then KILL.
kill_and_wait() {
    local pids=("$@") i p alive
    ((${#pids[@]})) || return 0
    kill -TERM "${pids[@]}" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
        alive=()
        for p in "${pids[@]}"; do is_live "$p" && alive+=("$p"); done
        ((${#alive[@]})) || return 0
        sleep 0.2
    done
    kill -KILL "${alive[@]}" 2>/dev/null || true
    sleep 0.2
}

# Pids of our daemons: the Slurm ones get "-f $CONF" on their command line,
# slurmdbd (which has no -f) SLURM_CONF=$CONF in its environment, MariaDB
# "--datadir=$DB_DIR". Finds leftovers even if a pid file is gone.
our_daemon_pids() {
    local d cmd
    for d in /proc/[0-9]*; do
        [[ -r $d/cmdline ]] || continue
        cmd=$(tr '\0' ' ' <"$d/cmdline" 2>/dev/null) || continue
        if [[ $cmd == *"-f $CONF"* || $cmd == *"--datadir=$DB_DIR "* ]] ||
            { [[ $cmd == slurmdbd* ]] && tr '\0' '\n' <"$d/environ" 2>/dev/null | grep -qxF "SLURM_CONF=$CONF"; }; then
            echo "${d#/proc/}"
        fi
    done
}

netns_exists() { [[ -e /var/run/netns/$1 ]]; }

# sinfo view of one node's state ("idle", "idle*", "down", ...), "" if unknown.
node_state() { sinfo -h -N -n "$1" -o '%t' 2>/dev/null | head -n1 || true; }

# A node is usable when slurmctld reports it responding and schedulable.
node_up() {
    case "$(node_state "$1")" in
        idle | mix | alloc | comp) return 0 ;;
        *) return 1 ;;
    esac
}

all_nodes_up() {
    local n
    for n in "${NODES[@]}"; do node_up "$n" || return 1; done
}

show_logs() {
    local f
    log "sinfo:"
    sinfo -N -l >&2 2>&1 || true
    for f in "$LOG_DIR"/*.log /var/log/munge/munged.log; do
        [[ -f $f ]] || continue
        echo "----- tail $f" >&2
        tail -n 25 "$f" >&2 || true
    done
}

# ------------------------------------------------------------------ start ---

install_packages() {
    local missing=() p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    command -v ip >/dev/null || missing+=(iproute2)
    ((${#missing[@]})) || return 0
    log "installing: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q >/dev/null
    apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
}

start_munge() {
    # Reuse a munged that already answers (ours from an earlier start, or the
    # system's); otherwise start one and remember that we own it.
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then return 0; fi
    if [[ ! -s /etc/munge/munge.key ]]; then
        log "creating munge key"
        mungekey --create --keyfile=/etc/munge/munge.key
        chown munge:munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
    fi
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/log/munge /var/lib/munge
    # Run as the munge user (as its systemd unit does); munged forks into the
    # background itself. --force: tolerate a stale socket of a killed munged.
    runuser -u munge -- munged --force --pid-file=/run/munge/munged.pid
    local i
    for ((i = 0; i < 50; i++)); do
        if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
            # Remember that this munged is ours, so that stop ends it.
            cp /run/munge/munged.pid "$RUN_DIR/munged.pid"
            return 0
        fi
        sleep 0.2
    done
    show_logs
    die "munged did not come up"
}

setup_network() {
    # Host bridge carrying the controller address.
    if ! ip link show "$BRIDGE" >/dev/null 2>&1; then
        ip link add "$BRIDGE" type bridge
    fi
    ip addr replace "$CTL_ADDR/24" dev "$BRIDGE"
    ip link set "$BRIDGE" up

    local n veth
    for n in "${NODES[@]}"; do
        veth=ss-$n # host side of the pair (name <= 15 chars)
        netns_exists "$n" || ip netns add "$n"
        if ! ip link show "$veth" >/dev/null 2>&1; then
            ip link add "$veth" type veth peer name "$veth-p"
            ip link set "$veth-p" netns "$n"
            ip -n "$n" link set "$veth-p" name eth0
        fi
        ip link set "$veth" master "$BRIDGE"
        ip link set "$veth" up
        ip -n "$n" link set lo up
        ip -n "$n" addr replace "${NODE_ADDR[$n]}/24" dev eth0
        ip -n "$n" link set eth0 up
    done
}

setup_hosts() {
    # Drop our old lines, then append fresh ones: idempotent. Rewrite in place
    # (cat >) rather than mv, in case /etc/hosts is a bind mount.
    local tmp n
    tmp=$(mktemp)
    grep -vF "$HOSTS_TAG" /etc/hosts >"$tmp" || true
    echo "$CTL_ADDR $CTL_NAME $HOSTS_TAG" >>"$tmp"
    for n in "${NODES[@]}"; do echo "${NODE_ADDR[$n]} $n $HOSTS_TAG" >>"$tmp"; done
    cat "$tmp" >/etc/hosts
    rm -f "$tmp"
}

# Print slurm.conf. Node hardware comes from "slurmd -C" (same for both nodes,
# they share the machine's cores); memory is capped to NODE_MEM_MB.
render_config() {
    local hw cpus boards sockets cores threads mem
    hw=$(slurmd -C | head -n1)
    field() { sed -n "s/.*[[:space:]]$1=\([0-9]*\).*/\1/p" <<<"$hw"; }
    cpus=$(field CPUs)
    boards=$(field Boards)
    sockets=$(field SocketsPerBoard)
    cores=$(field CoresPerSocket)
    threads=$(field ThreadsPerCore)
    mem=$(field RealMemory)
    [[ -n $cpus && -n $cores && -n $mem ]] || die "cannot parse 'slurmd -C': $hw"
    if ((mem > NODE_MEM_MB)); then mem=$NODE_MEM_MB; fi

    cat <<EOF
# Generated by tests/slurm/cluster.sh - do not edit, rewritten on every start.
ClusterName=scalestudy
SlurmctldHost=$CTL_NAME($CTL_ADDR)
AuthType=auth/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/%n/spool
SlurmctldPidFile=$RUN_DIR/slurmctld.pid
SlurmdPidFile=$RUN_DIR/slurmd-%n.pid
SlurmctldLogFile=$LOG_DIR/slurmctld.log
SlurmdLogFile=$LOG_DIR/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info

# No cgroup plugins: both "nodes" share one machine's cgroup tree, which is
# not delegated to slurmd. linuxproc tracks job processes via /proc.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
MpiDefault=none

$(accounting_config)
# Without task/cgroup, --mem is enforced by polling job RSS (every 1 s) and
# killing the step ("exceeded memory limit"; job ends FAILED).
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherParams=OverMemoryKill
JobAcctGatherFrequency=task=1

# Track cores and memory so --mem / -c are real constraints.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
# Jobs without --mem get 1000 MB per CPU instead of the whole node, so such
# jobs can share a node.
DefMemPerCPU=1000
SchedulerType=sched/backfill

# Finished jobs stay visible to squeue/scontrol for 5 min (status polling).
MinJobAge=300
# Short timeouts so failures surface quickly in tests.
SlurmctldTimeout=10
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MessageTimeout=10
ReturnToService=2

# Two stand-in GPUs per node (gres.conf): no CUDA, but Slurm schedules them and
# sets CUDA_VISIBLE_DEVICES for each job and step as it would for real ones.
GresTypes=gpu
NodeName=DEFAULT CPUs=$cpus Boards=${boards:-1} SocketsPerBoard=${sockets:-1} CoresPerSocket=$cores ThreadsPerCore=${threads:-1} RealMemory=$mem Gres=gpu:$GPUS_PER_NODE State=UNKNOWN
$(for n in "${NODES[@]}"; do echo "NodeName=$n NodeAddr=${NODE_ADDR[$n]} NodeHostname=$n"; done)
PartitionName=$PARTITION Nodes=$(
        IFS=,
        echo "${NODES[*]}"
    ) Default=YES MaxTime=INFINITE State=UP
EOF
}

# slurm.conf's accounting lines: slurmdbd (SCALESTUDY_SLURM_ACCOUNTING=1), or none.
accounting_config() {
    if ((ACCOUNTING)); then
        cat <<EOF
# Accounting through slurmdbd (its config: slurmdbd.conf beside this file):
# sacct answers (Submit, Eligible, Start, TotalCPU, MaxRSS per step).
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=$CTL_ADDR
AccountingStoragePort=$DBD_PORT
EOF
    else
        cat <<EOF
# No slurmdbd (SCALESTUDY_SLURM_ACCOUNTING=0): sacct has nothing to read,
# clients must use squeue/scontrol.
AccountingStorageType=accounting_storage/none
EOF
    fi
}

# slurmdbd.conf: slurmdbd on this host, storing into our own MariaDB.
render_dbd_config() {
    cat <<EOF
# Generated by tests/slurm/cluster.sh - do not edit, rewritten on every start.
AuthType=auth/munge
DbdHost=localhost
DbdPort=$DBD_PORT
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=root
StorageLoc=slurm_acct_db
PidFile=$RUN_DIR/slurmdbd.pid
LogFile=$LOG_DIR/slurmdbd.log
DebugLevel=info
EOF
}

# Write the config; sets CONFIG_CHANGED=1 if slurm.conf changed (running
# daemons must then be restarted to pick it up).
CONFIG_CHANGED=0
write_config() {
    install -d -m 0755 "$CONF_DIR" "$LOG_DIR" "$RUN_DIR" "$STATE/ctld"
    local n new
    for n in "${NODES[@]}"; do install -d -m 0755 "$STATE/$n/spool"; done
    new=$(render_config)
    if [[ ! -f $CONF ]] || [[ "$new" != "$(<"$CONF")" ]]; then
        printf '%s\n' "$new" >"$CONF"
        CONFIG_CHANGED=1
    fi
    # the stand-in GPUs: any existing character devices do; without cgroups nothing
    # is done to them, Slurm only counts them and numbers them for CUDA_VISIBLE_DEVICES
    new="Name=gpu File=/dev/tty[0-$((GPUS_PER_NODE - 1))]"
    if [[ ! -f $CONF_DIR/gres.conf ]] || [[ "$new" != "$(<"$CONF_DIR/gres.conf")" ]]; then
        printf '%s\n' "$new" >"$CONF_DIR/gres.conf"
        CONFIG_CHANGED=1
    fi
    if ((ACCOUNTING)); then
        new=$(render_dbd_config)
        if [[ ! -f $CONF_DIR/slurmdbd.conf ]] || [[ "$new" != "$(<"$CONF_DIR/slurmdbd.conf")" ]]; then
            # slurmdbd refuses a config others can read
            (umask 077 && printf '%s\n' "$new" >"$CONF_DIR/slurmdbd.conf")
            CONFIG_CHANGED=1
        fi
    fi
    # Default config location for the client tools: point it at ours, but
    # never clobber a real configuration that is not ours.
    install -d -m 0755 /etc/slurm
    if [[ -L $ETC_LINK ]] || [[ ! -e $ETC_LINK ]]; then
        ln -sfn "$CONF" "$ETC_LINK"
    elif [[ $(readlink -f "$ETC_LINK") != "$CONF" ]]; then
        die "$ETC_LINK exists and is not ours; move it away first"
    fi
}

# Our daemons but MariaDB (which a change of slurm.conf need not restart).
our_slurm_pids() {
    local p
    for p in $(our_daemon_pids); do
        [[ $(cat "/proc/$p/comm" 2>/dev/null) == mariadbd ]] || echo "$p"
    done
}

stop_slurm_daemons() {
    local pids
    mapfile -t pids < <(our_slurm_pids)
    kill_and_wait "${pids[@]}"
}

# MariaDB for slurmdbd, private to this cluster: its own data folder, socket and
# port, bound to 127.0.0.1, no grant tables (so no set-up of users: an empty data
# folder is enough and it is ready in well under a second). Started in the
# background; wait_for_mariadb waits for it.
start_mariadb() {
    pid_alive "$RUN_DIR/mariadbd.pid" mariadbd && return 0
    install -d -m 0700 "$DB_DIR"
    setsid mariadbd --no-defaults --datadir="$DB_DIR" --socket="$RUN_DIR/mysqld.sock" \
        --port=$DB_PORT --bind-address=127.0.0.1 --skip-name-resolve --user=root \
        --skip-grant-tables --pid-file="$RUN_DIR/mariadbd.pid" \
        --innodb-flush-log-at-trx-commit=0 --log-error="$LOG_DIR/mariadb.log" \
        </dev/null >>"$LOG_DIR/mariadb.start.log" 2>&1 &
}

wait_for_mariadb() {
    local i
    for ((i = 0; i < 300; i++)); do
        mariadb-admin --no-defaults --socket="$RUN_DIR/mysqld.sock" ping >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    show_logs
    die "MariaDB did not come up"
}

start_slurmdbd() {
    pid_alive "$RUN_DIR/slurmdbd.pid" slurmdbd && return 0
    # slurmdbd reads slurmdbd.conf from the folder of SLURM_CONF
    SLURM_CONF=$CONF setsid slurmdbd </dev/null >>"$LOG_DIR/slurmdbd.start.log" 2>&1 ||
        {
            show_logs
            die "slurmdbd failed to start"
        }
}

# Wait for slurmdbd to answer, and register the cluster (once: the data folder
# lives as long as the state folder).
register_cluster() {
    local i
    for ((i = 0; i < 300; i++)); do
        if sacctmgr -n -P list cluster format=cluster >"$RUN_DIR/clusters" 2>/dev/null; then
            grep -qx scalestudy "$RUN_DIR/clusters" && return 0
            sacctmgr -i add cluster scalestudy >/dev/null && return 0
        fi
        sleep 0.1
    done
    show_logs
    die "slurmdbd did not answer sacctmgr"
}

start_slurmctld() {
    pid_alive "$RUN_DIR/slurmctld.pid" slurmctld && return 0
    # Own UTS namespace so that hostname == SlurmctldHost; host network, so
    # the client tools reach it on $CTL_ADDR. -i: ignore stale state files.
    setsid unshare --uts sh -c "hostname $CTL_NAME; exec slurmctld -i -f '$CONF'" \
        </dev/null >>"$LOG_DIR/slurmctld.start.log" 2>&1 ||
        {
            show_logs
            die "slurmctld failed to start"
        }
}

start_slurmd() {
    local n=$1
    pid_alive "$RUN_DIR/slurmd-$n.pid" slurmd && return 0
    # nsenter (not "ip netns exec", which remounts /sys and hides the cgroup
    # mounts that slurmd inspects) + own hostname via a UTS namespace.
    setsid nsenter --net=/var/run/netns/"$n" unshare --uts \
        sh -c "hostname $n; exec slurmd -f '$CONF' -N $n" \
        </dev/null >>"$LOG_DIR/slurmd-$n.start.log" 2>&1 ||
        {
            show_logs
            die "slurmd $n failed to start"
        }
}

wait_for_nodes() {
    local t0=$SECONDS n
    while ((SECONDS - t0 < WAIT_SECONDS)); do
        all_nodes_up && return 0
        # A daemon that died will not come back by waiting (grace period:
        # the daemons write their pid files just after forking).
        if ((SECONDS - t0 >= 3)); then
            pid_alive "$RUN_DIR/slurmctld.pid" slurmctld || {
                show_logs
                die "slurmctld is not running"
            }
            for n in "${NODES[@]}"; do
                pid_alive "$RUN_DIR/slurmd-$n.pid" slurmd || {
                    show_logs
                    die "slurmd on $n is not running"
                }
            done
        fi
        for n in "${NODES[@]}"; do
            # Node marked down from an earlier life: tell slurmctld to retry.
            if [[ $(node_state "$n") == down* ]]; then
                scontrol update nodename="$n" state=resume >/dev/null 2>&1 || true
            fi
        done
        sleep 0.2
    done
    show_logs
    die "nodes not up after ${WAIT_SECONDS}s"
}

cmd_start() {
    [[ $EUID -eq 0 ]] || die "must run as root"
    local t0=$SECONDS n
    install_packages
    install -d -m 0755 "$STATE" "$RUN_DIR" "$LOG_DIR"
    # MariaDB first, in the background: it starts while munge, the network and
    # the configuration are set up
    if ((ACCOUNTING)); then start_mariadb; fi
    start_munge
    setup_network
    setup_hosts
    write_config
    if ((CONFIG_CHANGED)) && [[ -n $(our_slurm_pids) ]]; then
        log "configuration changed: restarting slurm daemons"
        stop_slurm_daemons
    fi
    if ((ACCOUNTING)); then
        wait_for_mariadb
        start_slurmdbd
        register_cluster
        log "accounting up after $((SECONDS - t0))s"
    fi
    start_slurmctld
    for n in "${NODES[@]}"; do start_slurmd "$n"; done
    wait_for_nodes
    sinfo
    log "cluster up in $((SECONDS - t0))s (config: $CONF)"
}

# ------------------------------------------------------------------- stop ---

cmd_stop() {
    [[ $EUID -eq 0 ]] || die "must run as root"
    local n pids=()
    # Everything living in a node namespace: slurmd, slurmstepd, job processes.
    for n in "${NODES[@]}"; do
        if netns_exists "$n"; then
            mapfile -t -O "${#pids[@]}" pids < <(ip netns pids "$n" 2>/dev/null)
        fi
    done
    kill_and_wait "${pids[@]}"
    stop_slurm_daemons # slurmctld, slurmdbd and any stray daemon using our config
    # then MariaDB (after slurmdbd, which writes into it)
    local rest
    mapfile -t rest < <(our_daemon_pids)
    kill_and_wait "${rest[@]}"
    # munged only if this script started it.
    if pid_alive "$RUN_DIR/munged.pid" munged; then
        kill_and_wait "$(<"$RUN_DIR/munged.pid")"
    fi

    for n in "${NODES[@]}"; do
        ip link del "ss-$n" 2>/dev/null || true # also removes the peer
        if netns_exists "$n"; then ip netns del "$n"; fi
    done
    ip link del "$BRIDGE" 2>/dev/null || true

    if grep -qF "$HOSTS_TAG" /etc/hosts; then
        local tmp
        tmp=$(mktemp)
        grep -vF "$HOSTS_TAG" /etc/hosts >"$tmp" || true
        cat "$tmp" >/etc/hosts
        rm -f "$tmp"
    fi
    if [[ -L $ETC_LINK && $(readlink "$ETC_LINK") == "$CONF" ]]; then
        rm -f "$ETC_LINK"
    fi
    rm -rf "$STATE"
    log "stopped"
}

# ----------------------------------------------------------------- status ---

cmd_status() {
    if [[ ! -f $CONF ]]; then
        log "not running (no $CONF)"
        return 1
    fi
    sinfo || return 1
    local n ok=0
    for n in "${NODES[@]}"; do
        node_up "$n" || {
            log "$n is not up (state: '$(node_state "$n")')"
            ok=1
        }
    done
    return $ok
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    *)
        echo "usage: $0 start|stop|status" >&2
        exit 2
        ;;
esac
