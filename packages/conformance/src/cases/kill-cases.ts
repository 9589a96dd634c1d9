import type { CommandHandle, ExecResult, Sandbox } from "@sbox/core";
import { check, expectEqual, show, sleep } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";
import { shArgs } from "../sandbox-scripts.js";
import { heartbeatFiles, waitForNonEmpty } from "./case-helpers.js";

/** Prints `ready`, then says it got SIGTERM and exits 3 when it does: only a SIGTERM that came first lets it. */
const POLITE = "trap 'echo got-TERM; exit 3' TERM; echo ready; while :; do sleep 0.1; done";

/**
 * A tree that ignores SIGTERM (parent and child, the child inherits the ignored disposition): only SIGKILL
 * ends it. Each member appends to its heartbeat file (`$1` parent, `$2` child) so the kit can tell it stopped.
 */
const STUBBORN_TREE =
  'trap \'\' TERM; (while :; do echo x >> "$1"; sleep 0.2; done) & while :; do echo y >> "$2"; sleep 0.2; done';

/**
 * Lists the command lines of the sandbox's processes, one a line, from /proc (what `ps -eo args` shows,
 * also on images without procps).
 */
const PROCESS_LIST = "for f in /proc/[0-9]*/cmdline; do tr '\\0' ' ' < \"$f\" 2>/dev/null; echo; done";

/** The command lines of the sandbox's processes that carry `marker` (this listing itself excluded). */
async function processesCarrying(sandbox: Sandbox, marker: string): Promise<string[]> {
  const listed = await sandbox.commands.run(["sh", "-c", PROCESS_LIST]);
  check(listed.exitCode === 0, `listing the sandbox's processes failed: ${show(listed)}`);
  return listed.stdout.split("\n").filter((line) => line.includes(marker) && !line.includes("/proc/"));
}

/** How long a polite command may take to start and be seen running (a slow remote included). */
const START_MS = 30_000;

/**
 * Runs `command` and resolves once its stdout said `ready`, with the handle inside an object (a handle is
 * awaitable, so returning it bare would wait for the command's end). Fails when the command ended first.
 */
async function runUntilReady(
  sandbox: Sandbox,
  command: string | string[],
): Promise<{ handle: CommandHandle; result: Promise<ExecResult> }> {
  let seen = "";
  let onReady!: () => void;
  const ready = new Promise<void>((resolve) => {
    onReady = resolve;
  });
  const handle = sandbox.commands.run(command, {
    onStdout: (chunk) => {
      seen += chunk;
      if (seen.includes("ready")) onReady();
    },
  });
  const result = Promise.resolve(handle);
  result.catch(() => undefined);
  let timer: ReturnType<typeof setTimeout> | undefined;
  const outcome = await Promise.race([
    ready.then(() => "ready" as const),
    result.then(
      (r) => `ended first: ${show(r)}`,
      (error: unknown) => `rejected: ${show(error)}`,
    ),
    new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`did not print ready within ${START_MS} ms`), START_MS);
    }),
  ]);
  clearTimeout(timer);
  check(outcome === "ready", `expected the command to start and print ready, but it ${outcome}`);
  return { handle, result };
}

/** Whether a result says the command was ended by SIGKILL (the signal name or the shell's 137). */
function killedBySigkill(result: ExecResult): boolean {
  return result.signal === "SIGKILL" || (result.signal === undefined && result.exitCode === 137);
}

/**
 * `handle.kill()`: SIGTERM first, SIGKILL after the grace period, or exactly the signal named. Each case
 * waits for the command to print `ready` before it kills it, so each needs `streaming` (native or emulated).
 */
export function killCases(): ConformanceCase[] {
  return [
    {
      id: "exec.kill.term-first",
      title:
        "handle.kill() without a signal sends SIGTERM first: a command that traps it prints its handler's output and exits with its own code",
      requires: ["killProcess", "streaming"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const { handle, result } = await runUntilReady(sandbox, POLITE);
        await handle.kill();
        const ended = await result;
        check(
          ended.stdout.includes("got-TERM"),
          `expected the SIGTERM handler's output, got stdout ${show(ended.stdout)}`,
        );
        expectEqual(ended.exitCode, 3, "exit code chosen by the SIGTERM handler");
        expectEqual(ended.signal, undefined, "signal of a command that exited on its own");
      },
    },
    {
      id: "exec.kill.grace-then-sigkill",
      title:
        "handle.kill(undefined, { graceMs }) sends SIGKILL once the grace period has passed to a tree that ignores SIGTERM; the whole tree stops",
      requires: ["killProcess", "streaming"],
      timeoutMs: 120_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const beat = heartbeatFiles(await ctx.scratchDir(sandbox));
        const handle = sandbox.commands.run(shArgs(STUBBORN_TREE, ...beat.files));
        const result = Promise.resolve(handle);
        result.catch(() => undefined);
        check(
          (await waitForNonEmpty(sandbox, beat.files[0], 20_000)) &&
            (await waitForNonEmpty(sandbox, beat.files[1], 20_000)),
          "expected both members of the tree to start within 20 s",
        );
        const before = Date.now();
        await handle.kill(undefined, { graceMs: 1500 });
        const waited = Date.now() - before;
        const ended = await result;
        check(killedBySigkill(ended), `expected the tree to end by SIGKILL, got ${show(ended)}`);
        check(
          waited >= 1400,
          `expected SIGKILL only after the 1500 ms grace period, kill() returned after ${waited} ms`,
        );
        await beat.expectStopped(sandbox, "after kill() with a grace period");
      },
    },
    {
      id: "exec.kill.exact-signal",
      title:
        'handle.kill("SIGKILL") sends SIGKILL alone, at once: a SIGTERM handler never runs, and the handle settles with SIGKILL',
      requires: ["killProcess", "streaming"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const { handle, result } = await runUntilReady(sandbox, POLITE);
        await handle.kill("SIGKILL");
        const ended = await result;
        check(
          !ended.stdout.includes("got-TERM"),
          `expected no SIGTERM handler to run on kill("SIGKILL"), got stdout ${show(ended.stdout)}`,
        );
        check(killedBySigkill(ended), `expected the command to end by SIGKILL, got ${show(ended)}`);
      },
    },
    {
      id: "exec.kill.hostile-tree",
      title:
        "handle.kill() of a tree that ignores every signal it can leaves none of it running; where the provider signals its execs natively, that includes a child that left for a new session",
      requires: ["killProcess", "streaming"],
      timeoutMs: 120_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const marker = `sbox-hostile-${ctx.runId.replace(/[^A-Za-z0-9]/g, "").slice(-12)}`;
        const loop = "trap '' TERM HUP INT QUIT USR1 USR2; while :; do sleep 0.1; done";
        // Where the core signals the command (E3: its process group), a child in a new session is out of reach.
        const native = ctx.provider.execSignals === true && ctx.mode !== "primitives-only";
        const script = [
          "trap '' TERM HUP INT",
          ...(native ? [`setsid sh -c ${JSON.stringify(loop)} ${marker}-session &`] : []),
          `sh -c ${JSON.stringify(`(${loop}) & ${loop}`)} ${marker}-group &`,
          "echo ready",
          "while :; do sleep 0.1; done",
        ].join("\n");
        const { handle, result } = await runUntilReady(sandbox, script);
        const expected = native ? 3 : 2;
        const deadline = Date.now() + 10_000;
        let running = await processesCarrying(sandbox, marker);
        while (running.length < expected && Date.now() < deadline) {
          await sleep(200);
          running = await processesCarrying(sandbox, marker);
        }
        check(
          running.length >= expected,
          `expected ${expected} hostile processes to start, saw ${show(running)}`,
        );
        await handle.kill(undefined, { graceMs: 500 });
        const ended = await result;
        check(killedBySigkill(ended), `expected the hostile tree to end by SIGKILL, got ${show(ended)}`);
        // The kill has been sent and the command is gone; its tree must be too, at once or very soon.
        const gone = Date.now() + 5_000;
        let left = await processesCarrying(sandbox, marker);
        while (left.length > 0 && Date.now() < gone) {
          await sleep(250);
          left = await processesCarrying(sandbox, marker);
        }
        check(left.length === 0, `expected nothing of the hostile tree left running, found ${show(left)}`);
      },
    },
  ];
}
