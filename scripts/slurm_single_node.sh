#!/usr/bin/env bash
# Start (or stop) a single-node SLURM cluster on this machine, for testing the workflow's
# SLURM profile: munge, slurmctld and slurmd as root, one partition "debug" holding this
# host with all its CPUs and memory, and a "gpu" generic resource of COUNT fake devices
# (stand-in device files: enough for scheduling, not for running CUDA).
#
#   sudo scripts/slurm_single_node.sh start [GPU_COUNT]   # default 2 fake GPUs
#   sudo scripts/slurm_single_node.sh stop
#
# Needs Debian's slurm-wlm and munge packages (apt-get install -y slurm-wlm munge).
# Writes /etc/slurm/slurm.conf and gres.conf (the previous ones are kept as *.orig).
set -euo pipefail

action=${1:-start}
gpus=${2:-2}
conf=/etc/slurm
state=/var/spool/slurm
host=$(hostname -s)

stop() {
    # Asks slurmctld to stop itself and every slurmd; then waits until they are gone.
    scontrol shutdown >/dev/null 2>&1 || true
    for _ in $(seq 30); do
        if ! scontrol ping >/dev/null 2>&1 &&
           ! { [ -f /run/slurmd.pid ] && kill -0 "$(cat /run/slurmd.pid)" 2>/dev/null; }; then
            return 0
        fi
        sleep 1
    done
    echo "SLURM daemons still running" >&2
    return 1
}

if [ "$action" = stop ]; then
    stop
    exit 0
fi

command -v slurmctld >/dev/null || { echo "slurm-wlm is not installed" >&2; exit 1; }
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))

for f in slurm.conf gres.conf; do
    if [ -f "$conf/$f" ] && [ ! -f "$conf/$f.orig" ]; then cp "$conf/$f" "$conf/$f.orig"; fi
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
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MpiDefault=none
GresTypes=gpu
NodeName=$host CPUs=$cpus RealMemory=$mem Gres=gpu:$gpus State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
# slurmd counts GPUs by their device files; stand-ins in /run make a GPU-less host
# offer "gpu" for scheduling. CUDA_VISIBLE_DEVICES is still set for each job.
: > "$conf/gres.conf"
for i in $(seq 0 $((gpus - 1))); do
    touch "/run/swgpu-fake-gpu$i"
    echo "Name=gpu File=/run/swgpu-fake-gpu$i" >> "$conf/gres.conf"
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
fi
munge -n | unmunge >/dev/null

stop
slurmctld
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
