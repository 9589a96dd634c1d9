/** Finding a sandbox's processes on the test machine through /proc, by the marker in their environment. */
import { readdirSync, readFileSync } from "node:fs";

/** The environment variable every process of a test sandbox inherits. */
export const SANDBOX_MARKER = "E2B_TEST_SANDBOX";

/** Pids of the live processes whose environment carries `E2B_TEST_SANDBOX=<id>`. */
export function sandboxPids(id: string): number[] {
  const needle = Buffer.from(`${SANDBOX_MARKER}=${id}\0`);
  const out: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const environ = readFileSync(`/proc/${entry}/environ`);
      if (environ.includes(needle)) out.push(Number(entry));
    } catch {
      // The process ended while the table was read.
    }
  }
  return out;
}

/** Sends `signal` to every process of the sandbox; returns how many there were. */
export function signalSandbox(id: string, signal: NodeJS.Signals): number {
  const pids = sandboxPids(id);
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // Already gone.
    }
  }
  return pids.length;
}
