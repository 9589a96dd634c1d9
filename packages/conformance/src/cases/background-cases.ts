import { randomInt } from "node:crypto";
import { check, expectEqual, expectRejects, hexOf, show, sleep } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";
import { HEARTBEAT_TREE_SCRIPT, runOk, shArgs } from "../sandbox-scripts.js";
import { collectText, heartbeatFiles, utf8, waitForNonEmpty } from "./case-helpers.js";

/** Background processes: spawn, list, connect from another client, kill, stdin. */
export function backgroundCases(): ConformanceCase[] {
  return [
    {
      id: "background.spawn.output-and-exit",
      title: "spawn() starts a background process whose stdout, stderr and exit code are all delivered",
      requires: ["background"],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const proc = await sandbox.commands.spawn(
          "printf 'out\\n'; sleep 1; printf 'err\\n' >&2; printf 'out2'; exit 3",
        );
        check(
          Number.isInteger(proc.pid) && proc.pid > 0,
          `expected a positive integer pid, got ${show(proc.pid)}`,
        );
        const [out, err, exit] = await Promise.all([
          collectText(proc.stdout),
          collectText(proc.stderr),
          proc.wait(),
        ]);
        expectEqual(out, "out\nout2", "stdout of the background process");
        expectEqual(err, "err\n", "stderr of the background process");
        expectEqual(exit.exitCode, 3, "exit code from wait()");
      },
    },
    {
      id: "background.list.running-and-finished",
      title: "commands.list() reports a spawned process as running, and no longer running once it has exited",
      requires: ["background"],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const proc = await sandbox.commands.spawn("sleep 2");
        const during = await sandbox.commands.list();
        const entry = during.find((p) => p.pid === proc.pid);
        check(
          entry?.running === true,
          `expected commands.list() to report pid ${proc.pid} running, got ${show(during)}`,
        );
        check(
          typeof entry.command === "string",
          `expected a command string in the listing, got ${show(entry.command)}`,
        );
        await proc.wait();
        const after = await sandbox.commands.list();
        const done = after.find((p) => p.pid === proc.pid);
        check(!done?.running, `expected pid ${proc.pid} not to be running after wait(), got ${show(done)}`);
      },
    },
    {
      id: "background.connect.second-client",
      title:
        "a second client (a fresh provider instance) re-attaches to a background process by pid and gets its later output and exit code",
      requires: ["background"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const proc = await sandbox.commands.spawn(
          "sleep 1; for i in 0 1 2; do echo tick$i; sleep 1; done; exit 7",
        );
        const other = await ctx.secondClient().connect(sandbox.id);
        const listed = await other.commands.list();
        check(
          listed.some((p) => p.pid === proc.pid),
          `expected the second client to list pid ${proc.pid}, got ${show(listed)}`,
        );
        const attached = await other.commands.connect(proc.pid);
        expectEqual(attached.pid, proc.pid, "pid of the re-attached process");
        const [out, exit] = await Promise.all([collectText(attached.stdout), attached.wait()]);
        check(
          out.includes("tick2\n"),
          `expected the re-attached stdout to include "tick2\\n", got ${show(out)}`,
        );
        check(
          out.endsWith("tick2\n"),
          `expected the re-attached stdout to end with the last line, got ${show(out)}`,
        );
        expectEqual(exit.exitCode, 7, "exit code seen by the second client");
        expectEqual((await proc.wait()).exitCode, 7, "exit code seen by the first client");
      },
    },
    {
      id: "background.kill.tree",
      title: "commands.kill(pid) ends a background process and its whole tree; wait() then resolves",
      requires: ["background", "killProcess"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const beat = heartbeatFiles(await ctx.scratchDir(sandbox));
        const proc = await sandbox.commands.spawn(shArgs(HEARTBEAT_TREE_SCRIPT, ...beat.files));
        check(
          await waitForNonEmpty(sandbox, beat.files[1], 20_000),
          "expected the process tree to start within 20 s",
        );
        await sandbox.commands.kill(proc.pid);
        const exit = await proc.wait();
        check(
          exit.exitCode !== 0 || exit.signal !== undefined,
          `expected a killed process not to exit 0 without a signal, got ${show(exit)}`,
        );
        await beat.expectStopped(sandbox, "after commands.kill(pid)");
        const listed = await sandbox.commands.list();
        check(
          !listed.find((p) => p.pid === proc.pid)?.running,
          `expected pid ${proc.pid} not to be listed running after kill`,
        );
      },
    },
    {
      id: "background.stdin",
      title: "writeStdin() feeds a running background process, closeStdin() ends its input",
      requires: ["background", "stdin"],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const proc = await sandbox.commands.spawn("cat");
        const out = collectText(proc.stdout);
        await proc.writeStdin("first line\n");
        await sleep(300);
        await proc.writeStdin(utf8("ünïcödé 🎉\n"));
        await proc.closeStdin();
        const exit = await proc.wait();
        expectEqual(exit.exitCode, 0, "exit code of cat after closeStdin()");
        expectEqual(await out, "first line\nünïcödé 🎉\n", "stdout of cat");
      },
    },
    {
      id: "background.spawn.options",
      title:
        "spawn() honours cwd and env (hostile values byte-exact) and delivers stdin given at spawn, then closes it",
      requires: ["background"],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const dir = `${await ctx.scratchDir(sandbox)}/spawn dir 'q' $(x)`;
        await runOk(sandbox, ["mkdir", "-p", dir], "creating the spawn's directory");
        const value = 'it\'s "q" $(echo no) `no` \\ \n ünï 🎉';
        const withStdin = ctx.capabilities.map.stdin !== "unsupported";
        const proc = await sandbox.commands.spawn(
          [
            "sh",
            "-c",
            `pwd; printf "%s" "$SBOX_CONF_SPAWN" | od -An -v -tx1 | tr -d " \\n"; echo; ${withStdin ? "cat" : "true"}`,
          ],
          {
            cwd: dir,
            env: { SBOX_CONF_SPAWN: value },
            ...(withStdin ? { stdin: "given at spawn\nünï\n" } : {}),
          },
        );
        const [out, exit] = await Promise.all([collectText(proc.stdout), proc.wait()]);
        expectEqual(exit.exitCode, 0, "exit code of the spawned process (cat ends once stdin is closed)");
        expectEqual(
          out,
          `${dir}\n${hexOf(utf8(value))}\n${withStdin ? "given at spawn\nünï\n" : ""}`,
          "stdout of a process spawned with cwd, env and stdin (pwd, hex of the env value, stdin)",
        );
      },
    },
    {
      id: "background.unknown-pid",
      title:
        "connect() and kill() of a pid the sandbox never had reject with NotFound, and list() does not show it",
      requires: ["background"],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        // Above any pid a Linux default pid_max (4194304) hands out, so no process can have it.
        const pid = 4_200_000 + randomInt(100_000);
        await expectRejects(sandbox.commands.connect(pid), "NotFound", `commands.connect(${pid})`);
        if (ctx.capabilities.map.killProcess !== "unsupported") {
          await expectRejects(sandbox.commands.kill(pid), "NotFound", `commands.kill(${pid})`);
        }
        const listed = await sandbox.commands.list();
        check(!listed.some((p) => p.pid === pid), `expected commands.list() not to show pid ${pid}`);
      },
    },
    {
      id: "background.survives-client-dispose",
      title:
        "a background process keeps running after the client that spawned it is disposed: another client re-attaches and gets its output and exit code",
      requires: ["background"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const spawner = ctx.secondClient();
        const through = await spawner.connect(sandbox.id);
        const proc = await through.commands.spawn("sleep 2; echo survived; exit 5");
        await spawner.dispose();
        const attached = await sandbox.commands.connect(proc.pid);
        const [out, exit] = await Promise.all([collectText(attached.stdout), attached.wait()]);
        expectEqual(exit.exitCode, 5, "exit code of a process whose spawning client was disposed");
        check(
          out.includes("survived\n"),
          `expected the re-attached output to include "survived\\n", got ${show(out)}`,
        );
      },
    },
  ];
}
