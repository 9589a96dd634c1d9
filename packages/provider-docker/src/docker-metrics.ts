import { SandboxError, type SandboxMetrics } from "@sbox/core/spec";
import type Dockerode from "dockerode";
import type { DockerEngine } from "./docker-engine.js";
import { runHelper } from "./docker-exec.js";

/**
 * Reads the container's own cgroup files (v1 or v2) in one exec, instead of the engine's stats call
 * that samples for about a second. Prints `cpu_ns`, `mem`, `limit`; with `$1 = 2` it samples CPU twice
 * 100 ms apart so a first call can report a rate.
 */
const METRICS_SCRIPT = `
cpu() {
  if [ -f /sys/fs/cgroup/cpu.stat ]; then
    while read -r k v; do [ "$k" = usage_usec ] && echo "$((v * 1000))"; done < /sys/fs/cgroup/cpu.stat
  elif [ -f /sys/fs/cgroup/cpuacct/cpuacct.usage ]; then cat /sys/fs/cgroup/cpuacct/cpuacct.usage
  elif [ -f /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage ]; then cat /sys/fs/cgroup/cpu,cpuacct/cpuacct.usage
  fi
}
if [ "$1" = 2 ]; then
  echo "cpu0 $(cpu)"
  sleep 0.1 2>/dev/null || usleep 100000
fi
echo "cpu $(cpu)"
if [ -f /sys/fs/cgroup/memory.current ]; then
  echo "mem $(cat /sys/fs/cgroup/memory.current)"
  echo "limit $(cat /sys/fs/cgroup/memory.max)"
else
  echo "mem $(cat /sys/fs/cgroup/memory/memory.usage_in_bytes 2>/dev/null)"
  echo "limit $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null)"
fi
`;

/** CPU time seen at one moment, per sandbox, to turn the next reading into a rate. */
interface CpuSample {
  cpuNs: number;
  at: number;
}

/** Limits above this are "no limit" (cgroup v1 reports a page-rounded 2^63). */
const NO_LIMIT = 2 ** 60;
const SAMPLE_MAX_AGE_MS = 60_000;

/** Keeps the last CPU sample of each sandbox between `metrics()` calls. */
export class DockerMetrics {
  private readonly samples = new Map<string, CpuSample>();

  /** One exec: memory use and limit, and CPU use in percent of one CPU since the last call (or over 100 ms). */
  async read(
    engine: DockerEngine,
    container: Dockerode.Container,
    id: string,
    signal: AbortSignal,
  ): Promise<SandboxMetrics> {
    const previous = this.samples.get(id);
    const fresh = previous !== undefined && Date.now() - previous.at < SAMPLE_MAX_AGE_MS;
    const output = await runHelper(
      engine,
      container,
      ["sh", "-c", METRICS_SCRIPT, "sbox-metrics", fresh ? "1" : "2"],
      signal,
      "metrics",
    );
    const now = Date.now();
    if (output.exitCode !== 0) {
      throw new SandboxError(
        "Provider",
        `docker metrics: reading cgroup files failed (exit ${output.exitCode}): ${output.stderr.toString("utf8").trim()}`,
        {
          retryable: false,
        },
      );
    }
    const values = new Map<string, string>();
    for (const line of output.stdout.toString("utf8").split("\n")) {
      const space = line.indexOf(" ");
      if (space > 0) values.set(line.slice(0, space), line.slice(space + 1).trim());
    }
    const number = (key: string): number | undefined => {
      const value = Number(values.get(key));
      return values.get(key) && Number.isFinite(value) ? value : undefined;
    };
    const metrics: SandboxMetrics = { at: new Date(now) };
    const memory = number("mem");
    if (memory !== undefined) metrics.memoryBytes = memory;
    const limit = number("limit");
    if (limit !== undefined && limit < NO_LIMIT) metrics.memoryLimitBytes = limit;
    const cpuNs = number("cpu");
    if (cpuNs !== undefined) {
      const start = number("cpu0");
      if (start !== undefined) {
        metrics.cpuPercent = Math.max(0, ((cpuNs - start) / 1e6 / 100) * 100);
      } else if (previous && fresh && now > previous.at) {
        metrics.cpuPercent = Math.max(0, ((cpuNs - previous.cpuNs) / 1e6 / (now - previous.at)) * 100);
      }
      this.samples.set(id, { cpuNs, at: now });
    }
    return metrics;
  }

  /** Forgets a destroyed sandbox. */
  forget(id: string): void {
    this.samples.delete(id);
  }
}
