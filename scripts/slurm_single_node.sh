#!/usr/bin/env bash
# Start (or stop) a single-node SLURM cluster on this machine, for testing the workflow's
# SLURM profile: munge, slurmctld and slurmd as root, one partition "debug" holding this
# host with all its CPUs and memory, and a "gpu" generic resource of COUNT stand-in devices:
# character device nodes with NVIDIA's major number (195) under /run/swgpu-slurm/, which
# slurmd accepts as GPUs, so that SLURM schedules them and sets CUDA_VISIBLE_DEVICES in a
# job that asks for --gpus (no driver behind them: enough for scheduling, not for CUDA).
# There is no accounting database (no slurmdbd): job states come from squeue, which keeps
# finished jobs for MinJobAge seconds (the profile asks squeue, see workflow/profiles/slurm).
#
#   sudo scripts/slurm_single_node.sh start [GPU_COUNT]   # default 2 stand-in GPUs
#   sudo scripts/slurm_single_node.sh stop                # undoes what start did
#
# Needs Debian's slurm-wlm and munge packages (apt-get install -y slurm-wlm munge).
# Writes /etc/slurm/slurm.conf and gres.conf; stop puts back the ones found before (kept
# as *.orig meanwhile) or removes them where there were none.
set -euo pipefail

action=${1:-start}
gpus=${2:-2}
conf=/etc/slurm
state=/var/spool/slurm
host=$(hostname -s)
# What start created and started, so that stop undoes exactly that.
run=/run/swgpu-slurm

stop() {
    # Cancels the jobs still known (a job step whose controller is gone keeps retrying its
    # completion message forever), asks slurmctld to stop itself and every slurmd, and
    # waits until they and the jobs' slurmstepd are gone.
    if scontrol ping >/dev/null 2>&1; then
        squeue -h -o %i | xargs -r scancel 2>/dev/null || true
        for _ in $(seq 30); do
            [ -z "$(squeue -h -o %i 2>/dev/null)" ] && break
            sleep 1
        done
    fi
    scontrol shutdown >/dev/null 2>&1 || true
    for _ in $(seq 30); do
        if ! scontrol ping >/dev/null 2>&1 &&
           ! { [ -f /run/slurmd.pid ] && kill -0 "$(cat /run/slurmd.pid)" 2>/dev/null; } &&
           ! { [ -f /run/slurmctld.pid ] && kill -0 "$(cat /run/slurmctld.pid)" 2>/dev/null; } &&
           ! pgrep -x slurmstepd >/dev/null; then
            return 0
        fi
        sleep 1
    done
    echo "SLURM daemons still running" >&2
    return 1
}

stop_munged() {
    # Only a munged that start started (its pid recorded in $run/munged.pid).
    [ -f "$run/munged.pid" ] || return 0
    pid=$(cat "$run/munged.pid")
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid"
        for _ in $(seq 10); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
    fi
    rm -f "$run/munged.pid"
}

restore_config() {
    # The configuration found before start ($f.orig), or none where there was none.
    for f in slurm.conf gres.conf; do
        if [ -f "$conf/$f.orig" ]; then
            mv -f "$conf/$f.orig" "$conf/$f"
        elif [ -f "$run/wrote-$f" ]; then
            rm -f "$conf/$f"
        fi
    done
}

case $action in
    start) ;;
    stop)
        stop
        stop_munged
        restore_config
        rm -rf "$run"
        exit 0
        ;;
    *) echo "usage: $0 start [GPU_COUNT] | stop" >&2; exit 2 ;;
esac

command -v slurmctld >/dev/null || { echo "slurm-wlm is not installed" >&2; exit 1; }
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))

mkdir -p "$run"
for f in slurm.conf gres.conf; do
    # Kept once: a second start must not take the first one's file for the machine's.
    if [ -f "$conf/$f.orig" ] || [ -f "$run/wrote-$f" ]; then continue; fi
    if [ -f "$conf/$f" ]; then cp "$conf/$f" "$conf/$f.orig"; else : > "$run/wrote-$f"; fi
done
mkdir -p "$state/ctld" "$state/d" /var/log/slurm
cat > "$conf/slurm.conf" <<CONF
ClusterName=swgpu-test
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# Finished jobs stay visible to squeue for MinJobAge seconds: the profile's status
# checks (squeue) must see each job end, at least 3 status intervals after it started.
MinJobAge=300
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
GresTypes=gpu
NodeName=$host CPUs=$cpus RealMemory=$mem Gres=gpu:$gpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# slurmd counts GPUs by their device files and sets CUDA_VISIBLE_DEVICES (the job's
# devices, numbered from the trailing digits) only for character devices: stand-ins with
# NVIDIA's major number make a GPU-less host offer "gpu".
: > "$conf/gres.conf"
for i in $(seq 0 $((gpus - 1))); do
    [ -c "$run/nvidia$i" ] || mknod -m 0666 "$run/nvidia$i" c 195 "$i"
    echo "Name=gpu File=$run/nvidia$i" >> "$conf/gres.conf"
done

# munge: a key readable by the munge daemon, then the daemon.
if [ ! -s /etc/munge/munge.key ]; then
    dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
fi
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown -R munge:munge /etc/munge /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
chmod 0400 /etc/munge/munge.key
if ! munge -n >/dev/null 2>&1; then
    if id munge >/dev/null 2>&1; then runuser -u munge -- /usr/sbin/munged; else /usr/sbin/munged --force; fi
    for _ in $(seq 20); do [ -s /run/munge/munged.pid ] && break; sleep 0.5; done
    cp /run/munge/munged.pid "$run/munged.pid"
fi
munge -n | unmunge >/dev/null

stop
# -c: a test cluster starts without the jobs of its previous run (which would otherwise
# come back from the saved state as running and hold the node).
slurmctld -c
slurmd
scontrol update nodename="$host" state=resume 2>/dev/null || true
for _ in $(seq 60); do
    if sinfo -h -o %T 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
        sinfo
        exit 0
    fi
    sleep 1
done
echo "SLURM did not come up; see /var/log/slurm/*.log" >&2
tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
