/**
 * How the emulator starts a process the way envd does. envd is the parent of every process it starts:
 * it reports the pid as seen inside the sandbox (what `ps` and `kill` there know) and learns from
 * `wait` whether the process exited or was killed by a signal — also when something inside the sandbox
 * sent it (`kill -9 <pid>` from another command). A backend's handle knows neither: its pid is the
 * backend's own number (a host pid for provider-local) and a process killed from inside may read as
 * `exit 137`.
 *
 * So every process runs under a small supervisor inside the sandbox (Python 3, which E2B templates ship):
 * it switches to the requesting user, closes stdin unless it is wanted, forks the program (exec'd with
 * default signal dispositions), forwards termination signals to it, waits for it and exits the same way
 * as near as a parent can. It reports on its stderr — the terminal for ptys — in two marker lines the
 * emulator removes from the output: `\x1ee2b-pid <pid>` before the program runs, `\x1ee2b-exit code <n>`
 * or `\x1ee2b-exit signal <n>` when it ended. The program's argv travels in an environment variable the
 * supervisor removes, so `ps` inside the sandbox does not show the command twice; so does the
 * supervisor's source (`ps` shows `python3 -c <SUPERVISOR_BOOT>`).
 */
import { constants } from "node:os";

/** The environment variable carrying the supervisor's instructions (removed before the program runs). */
export const SUPERVISOR_ENV = "E2B_EMULATOR_START";

/** The environment variable carrying the supervisor's source (removed as it starts). */
export const SUPERVISOR_SOURCE_ENV = "E2B_EMULATOR_SUPERVISOR";

/** What `python3 -c` runs: the source from {@link SUPERVISOR_SOURCE_ENV}. */
export const SUPERVISOR_BOOT: string = `import os; exec(os.environ.pop("${SUPERVISOR_SOURCE_ENV}"))`;

/** The supervisor's source. Kept free of `${` so it can live in a template literal. */
export const SUPERVISOR_SOURCE: string = String.raw`
import json, os, signal, sys
spec = json.loads(os.environ.pop("E2B_EMULATOR_START"))
argv = spec["argv"]
def say(line):
    try: os.write(2, line.encode())
    except OSError: pass
CAUGHT = [signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2, signal.SIGINT, signal.SIGQUIT]
for s in CAUGHT: signal.signal(s, signal.SIG_IGN)
if "uid" in spec:
    try:
        os.initgroups(spec["user"], spec["gid"]); os.setgid(spec["gid"]); os.setuid(spec["uid"])
    except OSError as e:
        say("envd: cannot run as %s: %s\n" % (spec["user"], e.strerror)); sys.exit(126)
if not spec.get("stdin", True):
    fd = os.open("/dev/null", os.O_RDONLY); os.dup2(fd, 0); os.close(fd)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(w)
    os.read(r, 1)
    os.close(r)
    for s in CAUGHT + [signal.SIGPIPE, signal.SIGXFSZ]: signal.signal(s, signal.SIG_DFL)
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        say("fork/exec %s: %s\n" % (argv[0], e.strerror)); os._exit(127)
os.close(r)
def forward(n, frame):
    try: os.kill(pid, n)
    except OSError: pass
for s in CAUGHT:
    # A terminal's ^C and ^\ reach the whole foreground group, the program included.
    if spec.get("tty") and s in (signal.SIGINT, signal.SIGQUIT): continue
    signal.signal(s, forward)
say("\x1ee2b-pid %d\n" % pid)
os.close(w)
try:
    status = os.waitpid(pid, 0)[1]
except ChildProcessError:
    status = 0
if os.WIFSIGNALED(status):
    n = os.WTERMSIG(status); say("\x1ee2b-exit signal %d\n" % n); os._exit(128 + n)
code = os.WEXITSTATUS(status); say("\x1ee2b-exit code %d\n" % code); os._exit(code)
`;

/** How a supervised process ended, as its supervisor saw it. */
export interface SupervisedExit {
  readonly exitCode: number | undefined;
  /** Signal name (`SIGKILL`...) when a signal ended it. */
  readonly signal: string | undefined;
}

const MARKER = "\u001ee2b-";
const MARKER_LINE = /^\u001ee2b-(pid|exit) (?:(code|signal) )?(\d+)\r?$/;
/** A marker line is short; a longer run after the marker byte is the program's own output. */
const MARKER_LIMIT = 48;

function signalName(number: number): string | undefined {
  for (const [name, value] of Object.entries(constants.signals)) if (value === number) return name;
  return undefined;
}

/**
 * Takes the supervisor's marker lines out of a stream of text (or of bytes read as latin1), chunk by
 * chunk: a chunk that ends inside what may be a marker is held back until its line is complete.
 */
export class SupervisorMarkers {
  private held = "";
  /** The pid inside the sandbox, once reported. */
  pid: number | undefined;
  /** How the program ended, once reported. */
  exit: SupervisedExit | undefined;
  private readonly waiters: { test: () => boolean; resolve: () => void }[] = [];

  /** Takes a chunk; returns the output in it (possibly empty). */
  push(chunk: string): string {
    let text = this.held + chunk;
    this.held = "";
    let out = "";
    for (;;) {
      const at = text.indexOf(MARKER.charAt(0));
      if (at < 0) {
        out += text;
        break;
      }
      out += text.slice(0, at);
      text = text.slice(at);
      const end = text.indexOf("\n");
      const line = end < 0 ? text : text.slice(0, end);
      const candidate = line.length <= MARKER_LIMIT && MARKER.startsWith(line.slice(0, MARKER.length));
      if (end < 0 && candidate) {
        this.held = text;
        break;
      }
      const match = end < 0 ? null : MARKER_LINE.exec(line);
      if (!match) {
        out += text.charAt(0);
        text = text.slice(1);
        continue;
      }
      const value = Number(match[3]);
      if (match[1] === "pid") this.pid = value;
      else
        this.exit =
          match[2] === "signal"
            ? { exitCode: undefined, signal: signalName(value) ?? `SIG${value}` }
            : { exitCode: value, signal: undefined };
      this.notify();
      text = text.slice(end + 1);
    }
    return out;
  }

  /** The end of the stream: whatever was held back is output. */
  end(): string {
    const rest = this.held;
    this.held = "";
    this.notify(true);
    return rest;
  }

  private ended = false;

  private notify(ended = false): void {
    if (ended) this.ended = true;
    for (const waiter of [...this.waiters]) {
      if (this.ended || waiter.test()) {
        this.waiters.splice(this.waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }

  /** Resolves once the pid is known, the stream ended, or `ms` passed. */
  whenPid(ms: number): Promise<void> {
    return this.when(() => this.pid !== undefined, ms);
  }

  /** Resolves once the exit is known, the stream ended, or `ms` passed. */
  whenExit(ms: number): Promise<void> {
    return this.when(() => this.exit !== undefined, ms);
  }

  private when(test: () => boolean, ms: number): Promise<void> {
    if (this.ended || test()) return Promise.resolve();
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.waiters.push({
        test,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }
}

/**
 * Reads a supervised process's stderr up to its pid marker: resolves with the markers (pid set unless
 * the stream ended or showed the program's output first) and the rest of the stream, markers removed.
 */
export async function readSupervisedStderr(
  stream: AsyncIterable<string>,
): Promise<{ markers: SupervisorMarkers; rest: AsyncIterable<string> }> {
  const markers = new SupervisorMarkers();
  const iterator = stream[Symbol.asyncIterator]();
  let first = "";
  let ended = false;
  while (markers.pid === undefined && first === "") {
    const next = await iterator.next();
    if (next.done) {
      ended = true;
      first = markers.end();
      break;
    }
    first = markers.push(next.value);
  }
  const rest: AsyncIterable<string> = {
    async *[Symbol.asyncIterator]() {
      if (first !== "") yield first;
      if (ended) return;
      for (;;) {
        const next = await iterator.next();
        if (next.done) break;
        const text = markers.push(next.value);
        if (text !== "") yield text;
      }
      const tail = markers.end();
      if (tail !== "") yield tail;
    },
  };
  return { markers, rest };
}
