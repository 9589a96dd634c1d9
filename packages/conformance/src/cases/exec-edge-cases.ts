import { randomBytes, randomUUID } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ExecResult, OutputEvent } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { ConformanceFailure, check, expectEqual, expectRejects, show, sleep } from "../assertions.js";
import type { ConformanceCase, ConformanceContext } from "../conformance-case.js";
import { existsViaShell, printfFormatOf, runOk, shArgs } from "../sandbox-scripts.js";
import { allByteValues } from "./case-helpers.js";

/**
 * Whether user commands reach the provider's exec through the core's exit-code marker (E2) on their raw
 * output: the provider reports no exit code and the core does not run them detached (E3).
 */
function runsMarkerOnUserOutput(ctx: ConformanceContext): boolean {
  return ctx.capabilities.flags.exitCodeNative === false && ctx.capabilities.map.streaming !== "emulated";
}

/** The outcome of a command as one comparable string: its exit, or the code it was rejected with. */
async function outcomeOf(handle: PromiseLike<ExecResult>): Promise<ExecResult | SandboxError> {
  try {
    return await handle;
  } catch (error) {
    if (SandboxError.isInstance(error)) return error;
    throw new ConformanceFailure(`expected a result or a SandboxError, got ${show(error)}`);
  }
}

/**
 * Sets `m` to the pid of the nearest ancestor (up to four levels) whose command line carries a core
 * exit-code marker token (the shell that will print the marker), or leaves it empty; `t` to the token.
 */
const FIND_MARKER_SHELL = [
  "m= t=; p=$PPID; i=0",
  'while [ "$i" -lt 4 ] && [ -n "$p" ] && [ "$p" -gt 1 ] 2>/dev/null; do',
  "  t=$(tr '\\000' '\\n' < /proc/$p/cmdline 2>/dev/null | grep -o '__sbox_exit_[0-9a-f]*__' | head -n 1)",
  '  if [ -n "$t" ]; then m=$p; break; fi',
  "  p=$(cut -d ' ' -f 4 /proc/$p/stat 2>/dev/null); i=$((i + 1))",
  "done",
].join("\n");

/** Exec contracts beyond the basics: cwd resolution, deadlines, forged markers, users, big stderr, bytes, signals. */
export function execEdgeCases(): ConformanceCase[] {
  return [
    {
      id: "exec.cwd.default-and-relative",
      title:
        "a command without cwd runs in the sandbox's working directory (the declared workdir, where there is one), a relative cwd and a relative file path resolve against it, and another sandbox does not see the file there",
      requires: [],
      timeoutMs: 120_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const workdir = (await runOk(sandbox, "pwd", "pwd without cwd")).stdout.replace(/\n$/, "");
        const declared = ctx.provider.workdir;
        if (declared !== undefined)
          expectEqual(workdir, declared, "pwd of a command without cwd (the declared workdir)");
        const again = (await runOk(sandbox, ["sh", "-c", "pwd"], "argv pwd without cwd")).stdout;
        expectEqual(again, `${workdir}\n`, "pwd of an argv command without cwd");
        const name = `sbox-conformance-${randomUUID().slice(0, 8)}`;
        const sub = `${name}-dir`;
        ctx.defer(() => sandbox.commands.run(["rm", "-rf", name, sub]));
        await sandbox.files.write(name, "written by relative path");
        expectEqual(
          (await runOk(sandbox, ["cat", name], "cat by relative name without cwd")).stdout,
          "written by relative path",
          "content of a file written by a relative path, read in the default cwd",
        );
        expectEqual(
          (await runOk(sandbox, ["cat", `${workdir}/${name}`], "cat by absolute path")).stdout,
          "written by relative path",
          "content of a file written by a relative path, read under the working directory",
        );
        await runOk(sandbox, ["mkdir", sub], "mkdir of a relative directory");
        const inSub = await runOk(sandbox, "pwd", "pwd with a relative cwd", { cwd: sub });
        expectEqual(inSub.stdout, `${workdir === "/" ? "" : workdir}/${sub}\n`, "pwd with a relative cwd");
        const other = await ctx.createSandbox();
        check(
          !(await existsViaShell(other, name)),
          `expected another sandbox not to see ${show(name)} in its own working directory, but it exists there`,
        );
        expectEqual(await other.files.exists(name), false, `files.exists(${show(name)}) in another sandbox`);
      },
    },
    {
      id: "exec.timeout.on-time",
      title:
        "timeoutMs rejects with Timeout neither early nor more than 5 s late, and an aborted signal rejects with Aborted within 5 s",
      requires: [],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const timeoutMs = 3_000;
        let started = Date.now();
        await expectRejects(
          Promise.resolve(sandbox.commands.run("sleep 30", { timeoutMs })),
          "Timeout",
          "run() of `sleep 30` with timeoutMs 3000",
        );
        const took = Date.now() - started;
        check(
          took >= timeoutMs - 100,
          `expected the Timeout after ${timeoutMs} ms, it came after ${took} ms`,
        );
        check(
          took <= timeoutMs + 5_000,
          `expected the Timeout within ${timeoutMs + 5_000} ms (timeoutMs + 5 s), it came after ${took} ms`,
        );
        const controller = new AbortController();
        const handle = sandbox.commands.run("sleep 30", { signal: controller.signal });
        const settled = expectRejects(Promise.resolve(handle), "Aborted", "run() whose signal is aborted");
        await sleep(1_000);
        started = Date.now();
        controller.abort();
        await settled;
        const abortTook = Date.now() - started;
        check(
          abortTook <= 5_000,
          `expected Aborted within 5000 ms of the abort, it came after ${abortTook} ms`,
        );
      },
    },
    {
      id: "exec.exit-code.spoofed-marker",
      title:
        "output that imitates the core's exit-code marker cannot change the exit code or lose output: a look-alike last line, the real token read from the parent's command line, and (where the marker runs on raw output) a look-alike followed by killing the shell that would print the real one",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        // Shaped like the real token (32 hex digits), but not it.
        const fake = `__sbox_exit_${randomBytes(16).toString("hex")}__`;
        const result = await sandbox.commands.run(shArgs('printf "before\\n\\n%s:0\\n" "$1"; exit 3', fake));
        expectEqual(result.exitCode, 3, "exit code of a command whose last line imitates the marker");
        expectEqual(
          result.stdout,
          `before\n\n${fake}:0\n`,
          "stdout with a look-alike marker line, kept whole",
        );

        const real = await sandbox.commands.run(
          `${FIND_MARKER_SHELL}\nprintf 'token %s\\n' "\${t:-none}"; [ -n "$t" ] && printf '\\n%s:0\\n' "$t"; exit 4`,
        );
        expectEqual(real.exitCode, 4, "exit code of a command that prints the real marker token with code 0");
        const token = /^token (\S+)\n/.exec(real.stdout)?.[1] ?? "none";
        if (token !== "none") {
          expectEqual(
            real.stdout,
            `token ${token}\n\n${token}:0\n`,
            "stdout of a command that prints the real token",
          );
          // A token a command can read must at least be new on every call, or the next command could forge it.
          const next = await sandbox.commands.run(`${FIND_MARKER_SHELL}\nprintf '%s' "$t"`);
          check(next.stdout !== token, `expected a new marker token for every command, got ${token} twice`);
        }

        if (runsMarkerOnUserOutput(ctx)) {
          // The shell that prints the marker is this command's parent: kill it after a look-alike, so that
          // the look-alike is the last thing on stdout. Only a parent that carries a marker is killed.
          const outcome = await outcomeOf(
            sandbox.commands.run(
              shArgs(
                `${FIND_MARKER_SHELL}\nprintf "\\n%s:0\\n" "$1"; [ -n "$m" ] && kill -9 "$m"; exit 5`,
                fake,
              ),
            ),
          );
          check(
            SandboxError.isInstance(outcome) || outcome.exitCode !== 0,
            `expected a look-alike marker (another token) followed by the death of the marker's shell not to pass for exit 0, got ${show(outcome)}`,
          );
        }
      },
    },
    {
      id: "exec.exit-code.forged-records",
      title:
        "a process of the sandbox that rewrites every exit record it can find (files named exit*, proof-like names next to the core's runners) every 10 ms does not change the exit code a foreground command or a background process reports; where the provider offers no means, flags.exitCodeForgeable says so",
      requires: ["background"],
      timeoutMs: 180_000,
      async run(ctx) {
        if (ctx.capabilities.flags.exitCodeForgeable === true) {
          ctx.skip("flags.exitCodeForgeable: the provider offers the core no means to prove an exit code");
        }
        // A sandbox of its own: the forger spoils whatever records it finds.
        const sandbox = await ctx.createSandbox();
        // The attack must reach nothing outside this test: it runs only where the sandbox's temporary
        // directory is its own. A canary file on the host's temporary directory must not be visible inside
        // (it is where the sandbox shares the host's files: a process-only provider, no isolation).
        for (const hostTmp of new Set([tmpdir(), "/tmp"])) {
          const canary = join(hostTmp, `sbox-conformance-canary-${randomUUID()}`);
          try {
            writeFileSync(canary, "host");
          } catch {
            continue; // not writable by the kit: nothing of the kit's user there to protect or to see
          }
          ctx.defer(() => rmSync(canary, { force: true }));
          const seen = await sandbox.commands.run(
            shArgs('[ -e "$1" ] && echo shared || echo private', canary),
          );
          if (seen.stdout.trim() !== "private") {
            ctx.skip(
              `the sandbox sees the host's ${hostTmp} (a canary written there is visible inside): a forger inside would rewrite files outside this test`,
            );
          }
        }
        // Bounded (3000 rounds of 10 ms, about 30 s) and confined to the sandbox's own temporary
        // directories, where the core keeps its emulation state.
        const forger = await sandbox.commands.spawn([
          "sh",
          "-c",
          [
            "zeros=$(printf '%0128d' 0); i=0",
            'roots="/tmp"; [ -n "$TMPDIR" ] && [ "$TMPDIR" != /tmp ] && roots="$roots $TMPDIR"',
            'while [ "$i" -lt 3000 ]; do',
            '  for f in $(find $roots -name "exit*" -type f 2>/dev/null); do printf "0\\n" > "$f" 2>/dev/null; done',
            "  for r in $(find $roots -name runner -type f 2>/dev/null); do",
            '    d=$(dirname "$r"); : > "$d/x.0.$zeros" 2>/dev/null; for x in "$d"/x.*; do [ -f "$x" ] && printf 0 > "$x" 2>/dev/null; done',
            "  done",
            "  sleep 0.01; i=$((i + 1))",
            "done",
          ].join("\n"),
        ]);
        ctx.defer(() => forger.kill("SIGKILL").catch(() => {}));
        for (let round = 0; round < 3; round++) {
          const result = await sandbox.commands.run(`echo round${round}; sleep 0.4; exit 7`);
          expectEqual(
            result.exitCode,
            7,
            `exit code of a command run while a forger rewrites records (round ${round})`,
          );
          expectEqual(result.stdout, `round${round}\n`, `stdout of that command (round ${round})`);
        }
        const background = await sandbox.commands.spawn("sleep 0.6; exit 5");
        const exit = await background.wait();
        expectEqual(
          exit.exitCode,
          5,
          "exit code a background process reports while a forger rewrites records",
        );
      },
    },
    {
      id: "exec.user",
      title:
        "the user option is honoured or refused, never ignored: a command run as another user either runs as that user or rejects with a SandboxError",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const me = (await runOk(sandbox, "id -u", "id -u")).stdout.trim();
        const other = me === "0" ? "65534" : "0";
        const outcomes: string[] = [];
        for (const [user, uid] of [
          [me, me],
          [other, other],
        ] as const) {
          const outcome = await outcomeOf(sandbox.commands.run("id -u", { user }));
          if (SandboxError.isInstance(outcome)) {
            outcomes.push(`user ${user}: ${outcome.code}`);
            continue;
          }
          check(
            outcome.exitCode === 0 && outcome.stdout.trim() === uid,
            `expected run("id -u", { user: ${show(user)} }) to run as uid ${uid} or reject, it resolved with exit ${outcome.exitCode} and stdout ${show(outcome.stdout)}`,
          );
          outcomes.push(`user ${user}: ran as ${uid}`);
        }
        if (ctx.capabilities.map.background !== "unsupported") {
          let proc: Awaited<ReturnType<typeof sandbox.commands.spawn>> | undefined;
          try {
            proc = await sandbox.commands.spawn("id -u", { user: other });
          } catch (error) {
            check(
              SandboxError.isInstance(error),
              `expected spawn({ user }) to resolve or reject with a SandboxError, got ${show(error)}`,
            );
          }
          if (proc) {
            let out = "";
            for await (const chunk of proc.stdout) out += chunk;
            const exit: { exitCode: number } | SandboxError = await proc
              .wait()
              .catch((error: unknown) => (SandboxError.isInstance(error) ? error : { exitCode: -1 }));
            check(
              SandboxError.isInstance(exit) || (exit.exitCode === 0 && out.trim() === other),
              `expected spawn("id -u", { user: ${show(other)} }) to run as uid ${other} or fail, it printed ${show(out)} (${show(exit)})`,
            );
          }
        }
      },
    },
    {
      id: "exec.stderr.large",
      title: "10 MB of stderr arrives complete and in order, apart from stdout",
      requires: [],
      timeoutMs: 180_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const last = 1_500_000;
        const result = await sandbox.commands.run(
          `printf start; if command -v seq >/dev/null 2>&1; then seq 1 ${last} >&2; else awk 'BEGIN { for (i = 1; i <= ${last}; i++) print i }' >&2; fi; printf end`,
        );
        expectEqual(result.exitCode, 0, "exit code of the 10 MB stderr command");
        expectEqual(result.stdout, "startend", "stdout next to 10 MB of stderr");
        const err = result.stderr;
        let position = 0;
        for (let n = 1; n <= last; n++) {
          const line = `${n}\n`;
          if (!err.startsWith(line, position)) {
            throw new ConformanceFailure(
              `expected stderr line ${n} at offset ${position}, got ${show(err.slice(position, position + 20))} (stderr is ${err.length} chars)`,
            );
          }
          position += line.length;
        }
        expectEqual(err.length, position, "stderr length");
      },
    },
    {
      id: "exec.stdout.binary",
      title:
        "binary stdout (all 256 byte values, NUL and CR included) arrives whole: decoded as UTF-8 with replacement characters exactly where the bytes are invalid, the same through onStdout and through iteration",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const bytes = allByteValues();
        const expected = new TextDecoder().decode(bytes);
        let streamed = "";
        const handle = sandbox.commands.run(`printf '${printfFormatOf(bytes)}'`, {
          onStdout: (chunk) => {
            streamed += chunk;
          },
        });
        const events: OutputEvent[] = [];
        for await (const event of handle) events.push(event);
        const result = await handle;
        expectEqual(result.exitCode, 0, "exit code");
        check(
          result.stdout === expected,
          `expected stdout to be the 512 bytes decoded (${expected.length} chars), got ${result.stdout.length} chars ${show(result.stdout.slice(0, 40))}`,
        );
        expectEqual(streamed === expected, true, "onStdout text equals the decoded bytes");
        const iterated = events.flatMap((e) => (e.type === "stdout" ? [e.data] : [])).join("");
        expectEqual(iterated === expected, true, "stdout events equal the decoded bytes");
      },
    },
    {
      id: "exec.kill.signal-name",
      title:
        'a command ended by a signal reports it: `kill -TERM $$` exits 143 (signal SIGTERM when named), handle.kill("SIGTERM") resolves with signal SIGTERM, and a background process killed with SIGUSR1 reports SIGUSR1',
      requires: ["killProcess"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const self = await sandbox.commands.run("kill -TERM $$; sleep 5");
        expectEqual(self.exitCode, 143, "exit code of a shell that sent itself SIGTERM");
        check(
          self.signal === undefined || self.signal === "SIGTERM",
          `expected no signal or SIGTERM for a shell that sent itself SIGTERM, got ${show(self.signal)}`,
        );
        const dir = await ctx.scratchDir(sandbox);
        const started = `${dir}/started`;
        const handle = sandbox.commands.run(shArgs('touch "$1"; sleep 30', started));
        const deadline = Date.now() + 20_000;
        while (!(await existsViaShell(sandbox, started)) && Date.now() < deadline) await sleep(200);
        await handle.kill("SIGTERM");
        const killed = await outcomeOf(handle);
        check(
          !SandboxError.isInstance(killed) && killed.signal === "SIGTERM" && killed.exitCode === 143,
          `expected handle.kill("SIGTERM") to end the command with signal SIGTERM and exit 143, got ${show(killed)}`,
        );
        if (ctx.capabilities.map.background === "unsupported") return;
        const proc = await sandbox.commands.spawn("sleep 30");
        await sleep(500);
        await sandbox.commands.kill(proc.pid, "SIGUSR1");
        const exit = await proc.wait();
        expectEqual(exit.exitCode, 138, "exit code of a background process killed with SIGUSR1");
        expectEqual(exit.signal, "SIGUSR1", "signal of a background process killed with SIGUSR1");
      },
    },
  ];
}
