import type Dockerode from "dockerode";

/**
 * Keeps `pause` and exec starts of one sandbox apart, within this process. An exec that the engine
 * creates before a pause and starts after it makes runc enter a frozen cgroup: runc hangs, holds the
 * container's lock, and every later call on that container (even unpause) hangs with it (Docker 20.10,
 * cgroup v1 freezer). So a pause waits until every exec this process is starting has really started
 * (or failed), and execs that begin while a pause is under way wait for it (they then get the engine's
 * `InvalidState`). Other processes cannot be coordinated this way: pausing while another process starts
 * a command remains a risk of the engine.
 */
export class DockerPauseGate {
  private readonly entering = new Map<string, number>();
  private readonly pending = new Map<string, Set<Dockerode.Exec>>();
  private readonly pausing = new Map<string, Promise<void>>();

  private bump(id: string, by: number): void {
    const next = (this.entering.get(id) ?? 0) + by;
    if (next <= 0) this.entering.delete(id);
    else this.entering.set(id, next);
  }

  /**
   * Waits while `id` is being paused, then counts an exec as starting. Call the returned function with
   * the created exec (or undefined when create failed); call what that returns once the exec runs or ended.
   */
  async enter(id: string): Promise<(exec: Dockerode.Exec | undefined) => () => void> {
    for (let current = this.pausing.get(id); current; current = this.pausing.get(id)) {
      await current.catch(() => undefined);
    }
    this.bump(id, 1);
    let counted = true;
    return (exec) => {
      if (counted) {
        counted = false;
        this.bump(id, -1);
      }
      if (!exec) return () => undefined;
      let set = this.pending.get(id);
      if (!set) {
        set = new Set();
        this.pending.set(id, set);
      }
      set.add(exec);
      const own = set;
      return () => {
        own.delete(exec);
        if (own.size === 0 && this.pending.get(id) === own) this.pending.delete(id);
      };
    };
  }

  /** Runs `pause` once every exec of `id` this process is starting runs or ended; keeps new ones out meanwhile. */
  async pause(id: string, boundMs: number, pause: () => Promise<void>): Promise<void> {
    const sleep = () => new Promise((resolve) => setTimeout(resolve, 5));
    const run = (async () => {
      const deadline = Date.now() + boundMs;
      while (Date.now() < deadline) {
        if ((this.entering.get(id) ?? 0) > 0) {
          await sleep();
          continue;
        }
        const waiting = [...(this.pending.get(id) ?? [])];
        if (waiting.length === 0) break;
        let allStarted = true;
        for (const exec of waiting) {
          const info = await exec.inspect({ abortSignal: AbortSignal.timeout(5_000) }).catch(() => undefined);
          // A host pid means runc finished starting it; an exit code means it ended.
          if (info && (info.Pid ?? 0) === 0 && typeof info.ExitCode !== "number") allStarted = false;
        }
        if (allStarted) break;
        await sleep();
      }
      await pause();
    })();
    this.pausing.set(id, run);
    try {
      await run;
    } finally {
      if (this.pausing.get(id) === run) this.pausing.delete(id);
    }
  }
}
