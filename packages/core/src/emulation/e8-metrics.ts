/**
 * E8: `sandbox.metrics()` from inside the sandbox, in one exec: the cgroup of the shell (v2, else v1) for
 * memory use, memory limit and CPU time; `/proc/meminfo` and `/proc/stat` when there is no readable cgroup;
 * `df` of the working directory for disk use. A value that cannot be read is left out, never made up.
 *
 * `cpuPercent` follows the `docker stats` convention: 100 means one CPU fully busy, so it can exceed 100
 * on several CPUs. It is sampled over ~150 ms.
 * `memoryLimitBytes` is the cgroup limit, or the machine's memory when the cgroup sets none (or a larger one).
 * `diskBytes` is the space used on the filesystem holding the working directory.
 */
import { SandboxError } from "../errors/sandbox-error.js";
import { toSandboxError } from "../errors/to-sandbox-error.js";
import type { ProviderDriver, SandboxMetrics } from "../spec/provider-spec.js";
import { stderrTail } from "./e5-file-errors.js";
import type { EmulationContext } from "./emulation-context.js";

/** The sampling window for CPU usage. */
const SAMPLE_SECONDS = 0.15;

/** Reads each value once per sample; every line printed is `key=value`, values are numbers or `max`. */
const METRICS_SCRIPT = `v2= v1m= v1c=
p=$(sed -n 's/^0:://p' /proc/self/cgroup 2>/dev/null | head -n 1)
for d in "/sys/fs/cgroup$p" /sys/fs/cgroup; do
  if [ -r "$d/memory.current" ] || [ -r "$d/cpu.stat" ]; then v2=$d; break; fi
done
if [ -z "$v2" ]; then
  m=$(sed -n 's/^[0-9]*:[^:]*memory[^:]*:\\(.*\\)$/\\1/p' /proc/self/cgroup 2>/dev/null | head -n 1)
  for d in "/sys/fs/cgroup/memory$m" /sys/fs/cgroup/memory; do
    if [ -r "$d/memory.usage_in_bytes" ]; then v1m=$d; break; fi
  done
  c=$(sed -n 's/^[0-9]*:[^:]*cpuacct[^:]*:\\(.*\\)$/\\1/p' /proc/self/cgroup 2>/dev/null | head -n 1)
  for d in "/sys/fs/cgroup/cpuacct$c" "/sys/fs/cgroup/cpu,cpuacct$c" /sys/fs/cgroup/cpuacct /sys/fs/cgroup/cpu,cpuacct; do
    if [ -r "$d/cpuacct.usage" ]; then v1c=$d; break; fi
  done
fi
sample() {
  if [ -n "$v2" ] && [ -r "$v2/cpu.stat" ]; then
    printf 'cpu_usec%s=%s\\n' "$1" "$(sed -n 's/^usage_usec //p' "$v2/cpu.stat")"
  elif [ -n "$v1c" ]; then
    printf 'cpu_nsec%s=%s\\n' "$1" "$(cat "$v1c/cpuacct.usage")"
  fi
  printf 'clock_ns%s=%s\\n' "$1" "$(date +%s%N 2>/dev/null)"
  printf 'uptime%s=%s\\n' "$1" "$(cut -d ' ' -f 1 /proc/uptime 2>/dev/null)"
  printf 'stat%s=%s\\n' "$1" "$(sed -n 's/^cpu  *//p' /proc/stat 2>/dev/null | head -n 1)"
}
sample 1
sleep ${SAMPLE_SECONDS} 2>/dev/null || sleep 1
sample 2
printf 'ncpu=%s\\n' "$(grep -c '^cpu[0-9]' /proc/stat 2>/dev/null)"
if [ -n "$v2" ]; then
  [ -r "$v2/memory.current" ] && printf 'mem_current=%s\\n' "$(cat "$v2/memory.current")"
  [ -r "$v2/memory.max" ] && printf 'mem_max=%s\\n' "$(cat "$v2/memory.max")"
elif [ -n "$v1m" ]; then
  printf 'mem_current=%s\\n' "$(cat "$v1m/memory.usage_in_bytes")"
  [ -r "$v1m/memory.limit_in_bytes" ] && printf 'mem_max=%s\\n' "$(cat "$v1m/memory.limit_in_bytes")"
fi
printf 'mem_total_kb=%s\\n' "$(sed -n 's/^MemTotal: *\\([0-9]*\\) kB$/\\1/p' /proc/meminfo 2>/dev/null)"
printf 'mem_available_kb=%s\\n' "$(sed -n 's/^MemAvailable: *\\([0-9]*\\) kB$/\\1/p' /proc/meminfo 2>/dev/null)"
printf 'disk_used_kb=%s\\n' "$(df -P -k . 2>/dev/null | awk 'NR==2 {print $3}')"
exit 0`;

/** A non-negative integer, or undefined for anything else (empty, `max`, garbage). */
function count(value: string | undefined): number | undefined {
  if (value === undefined || !/^\d+$/.test(value)) return undefined;
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : undefined;
}

/** Busy and total jiffies from the numbers after `cpu` in /proc/stat. */
function jiffies(line: string | undefined): { busy: number; total: number } | undefined {
  const fields = (line ?? "").trim().split(/\s+/).map(Number);
  if (fields.length < 4 || fields.some((n) => !Number.isFinite(n))) return undefined;
  // user nice system idle iowait irq softirq steal; guest time is already part of user.
  const total = fields.slice(0, 8).reduce((a, b) => a + b, 0);
  const idle = fields[3]! + (fields[4] ?? 0);
  return { busy: total - idle, total };
}

/** Parses the script output into metrics; exported for reuse by providers that read the same files. */
export function parseMetrics(output: string, at: Date): SandboxMetrics {
  const values = new Map<string, string>();
  for (const line of output.split("\n")) {
    const eq = line.indexOf("=");
    if (eq > 0) values.set(line.slice(0, eq), line.slice(eq + 1).trim());
  }
  const metrics: SandboxMetrics = { at };

  const memTotal = count(values.get("mem_total_kb"));
  const memAvailable = count(values.get("mem_available_kb"));
  const machineBytes = memTotal === undefined ? undefined : memTotal * 1024;
  const current = count(values.get("mem_current"));
  if (current !== undefined) metrics.memoryBytes = current;
  else if (machineBytes !== undefined && memAvailable !== undefined) {
    metrics.memoryBytes = machineBytes - memAvailable * 1024;
  }
  // cgroup v1 says "no limit" with a huge number, v2 with "max".
  const cgroupLimit = count(values.get("mem_max"));
  const limit =
    cgroupLimit !== undefined && cgroupLimit < 2 ** 60
      ? machineBytes !== undefined
        ? Math.min(cgroupLimit, machineBytes)
        : cgroupLimit
      : machineBytes;
  if (limit !== undefined) metrics.memoryLimitBytes = limit;

  const elapsedNs = (() => {
    const c1 = count(values.get("clock_ns1"));
    const c2 = count(values.get("clock_ns2"));
    if (c1 !== undefined && c2 !== undefined && c2 > c1) return c2 - c1;
    const u1 = Number(values.get("uptime1"));
    const u2 = Number(values.get("uptime2"));
    if (Number.isFinite(u1) && Number.isFinite(u2) && u2 > u1) return (u2 - u1) * 1e9;
    return undefined;
  })();
  const usec1 = count(values.get("cpu_usec1"));
  const usec2 = count(values.get("cpu_usec2"));
  const nsec1 = count(values.get("cpu_nsec1"));
  const nsec2 = count(values.get("cpu_nsec2"));
  const usedNs =
    usec1 !== undefined && usec2 !== undefined
      ? (usec2 - usec1) * 1000
      : nsec1 !== undefined && nsec2 !== undefined
        ? nsec2 - nsec1
        : undefined;
  if (usedNs !== undefined && elapsedNs !== undefined) {
    metrics.cpuPercent = Math.max(0, (usedNs / elapsedNs) * 100);
  } else {
    const s1 = jiffies(values.get("stat1"));
    const s2 = jiffies(values.get("stat2"));
    const cpus = count(values.get("ncpu"));
    if (s1 && s2 && cpus && s2.total > s1.total) {
      metrics.cpuPercent = Math.max(0, ((s2.busy - s1.busy) / (s2.total - s1.total)) * cpus * 100);
    }
  }

  const disk = count(values.get("disk_used_kb"));
  if (disk !== undefined) metrics.diskBytes = disk * 1024;
  return metrics;
}

/** Builds the E8 metrics method. */
export function emulatedMetrics(ctx: EmulationContext): NonNullable<ProviderDriver["doMetrics"]> {
  return async (sandbox, options) => {
    let result: Awaited<ReturnType<EmulationContext["exec"]>>;
    try {
      result = await ctx.exec(sandbox, METRICS_SCRIPT, { signal: options.signal });
    } catch (error) {
      throw toSandboxError(error, { provider: ctx.provider, operation: "metrics" });
    }
    if (result.exitCode !== 0) {
      throw new SandboxError(
        "Provider",
        `metrics: the sandbox could not run the metrics script: ${stderrTail(result)}`,
        {
          provider: ctx.provider,
        },
      );
    }
    return parseMetrics(new TextDecoder().decode(result.stdout), new Date());
  };
}
