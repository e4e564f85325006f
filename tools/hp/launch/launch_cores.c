// launch_cores.c - how many cores this process may run on, and whether ranks fit on them.
// defines: tool_cores_available, tool_launch_binding
//
// The launcher binds each rank to its own cores when the job fits (ranks x BLAS threads per
// rank <= cores), and otherwise oversubscribes and says so (launch.c). The count is asked of
// the machine, never assumed: the CPUs of this process's affinity mask (taskset, a cgroup
// cpuset), folded into physical cores through sysfs, because Open MPI's and MPICH's
// `bind-to core` give each rank a whole core: two ranks on the two hardware threads of one
// core do not fit. Where sysfs cannot be read, every CPU of the mask counts as a core.
#define _GNU_SOURCE   // sched_getaffinity, CPU_COUNT
#include <sched.h>
#include <stdio.h>
#include <unistd.h>
#include "launch.h"

// A small integer read from a sysfs file, or -1.
static long read_sysfs_long(int cpu, const char *leaf) {
    char path[128];
    snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu%d/topology/%s", cpu, leaf);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    long v = -1;
    if (fscanf(f, "%ld", &v) != 1) v = -1;
    fclose(f);
    return v;
}

int tool_cores_available(void) {
    cpu_set_t mask;
    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof mask, &mask) != 0) {
        const long n = sysconf(_SC_NPROCESSORS_ONLN);
        return n > 0 ? (int)n : 1;
    }
    // distinct (package, core) pairs among the CPUs we may run on
    static long package[CPU_SETSIZE], core[CPU_SETSIZE];
    int cores = 0;
    for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
        if (!CPU_ISSET(cpu, &mask)) continue;
        const long p = read_sysfs_long(cpu, "physical_package_id");
        const long c = read_sysfs_long(cpu, "core_id");
        if (p < 0 || c < 0) return CPU_COUNT(&mask) > 0 ? CPU_COUNT(&mask) : 1;   // no topology
        int seen = 0;
        for (int i = 0; i < cores && !seen; i++) seen = package[i] == p && core[i] == c;
        if (!seen) { package[cores] = p; core[cores] = c; cores++; }
    }
    return cores > 0 ? cores : 1;
}

tool_binding tool_launch_binding(int nproc, int threads_per_rank, int cores) {
    tool_binding b;
    b.threads = threads_per_rank > 0 ? threads_per_rank : 1;
    b.cores = cores > 0 ? cores : 1;
    b.bind = (long)nproc * b.threads <= b.cores;
    return b;
}
