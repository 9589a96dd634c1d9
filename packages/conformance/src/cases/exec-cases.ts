import type { ExecResult, OutputEvent } from "@sbox/core";
import { SandboxError } from "@sbox/core/spec";
import { ConformanceFailure, check, expectEqual, expectRejects, hexOf, show, sleep } from "../assertions.js";
import type { ConformanceCase } from "../conformance-case.js";
import {
  existsViaShell,
  HEARTBEAT_TREE_SCRIPT,
  HEX_OF_ARGS_SCRIPT,
  runOk,
  shArgs,
} from "../sandbox-scripts.js";
import { allByteValues, heartbeatFiles, mapLimit, streamOf, utf8, waitForNonEmpty } from "./case-helpers.js";

/** Strings that break naive quoting: every one must reach the program byte-exact. */
export const HOSTILE_STRINGS: readonly string[] = [
  "plain",
  "",
  "with space",
  "  leading and trailing  ",
  "it's",
  '"double" quotes',
  "$(echo pwned)",
  "`echo pwned`",
  // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
  "$HOME ${PATH} $1 $@ $$",
  "a\nnew line",
  "tab\there",
  "back\\slash\\\\",
  "*.txt ? [a-z]",
  "; rm -rf / #",
  "| cat && true || false &",
  "> redirect < input 2>&1",
  "-n",
  "--",
  "--help",
  "{a,b} ~ ~root !! !$",
  "ünïcödé 日本語 🎉",
  "\x01\x02\x1b[31mred\x1b[0m\x7f",
  "'\"'\"'",
  "%s %d %% \\n",
  "=",
  "x".repeat(4096),
];

function argsFromHex(stdout: string): string[] {
  const lines = stdout.split("\n");
  lines.pop();
  return lines.map((line) => Buffer.from(line, "hex").toString("utf8"));
}

async function collectEvents(
  handle: AsyncIterable<OutputEvent>,
): Promise<{ events: OutputEvent[]; at: number[] }> {
  const events: OutputEvent[] = [];
  const at: number[] = [];
  for await (const event of handle) {
    events.push(event);
    at.push(Date.now());
  }
  return { events, at };
}

/** Exec: output separation, exit codes, argv, cwd/env, big output, streaming, timeouts, abort, stdin, encodings. */
export function execCases(): ConformanceCase[] {
  return [
    {
      id: "exec.stdout.captured",
      title: "run() resolves with the exact stdout, an empty stderr and exit code 0",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const result = await sandbox.commands.run("printf 'hello\\n'; printf 'world'");
        expectEqual(result.stdout, "hello\nworld", "stdout");
        expectEqual(result.stderr, "", "stderr");
        expectEqual(result.exitCode, 0, "exit code");
        check(
          typeof result.durationMs === "number" && result.durationMs >= 0,
          `expected durationMs to be a number >= 0, got ${show(result.durationMs)}`,
        );
      },
    },
    {
      id: "exec.stderr.separate",
      title: "stdout and stderr are kept apart, each complete",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const result = await sandbox.commands.run(
          "printf 'out\\n'; printf 'err\\n' >&2; printf 'out2\\n'; printf 'err2\\n' >&2",
        );
        expectEqual(result.stdout, "out\nout2\n", "stdout");
        expectEqual(result.stderr, "err\nerr2\n", "stderr");
      },
    },
    {
      id: "exec.exit-code.all-values",
      title: "every exit code 0..255 is reported exactly, and a non-zero one resolves instead of throwing",
      requires: [],
      timeoutMs: 180_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const codes = Array.from({ length: 256 }, (_, i) => i);
        const wrong: string[] = [];
        await mapLimit(codes, 8, async (code) => {
          let result: ExecResult;
          try {
            result = await sandbox.commands.run(`exit ${code}`);
          } catch (error) {
            wrong.push(`exit ${code} rejected with ${show(error)}`);
            return;
          }
          if (result.exitCode !== code) wrong.push(`exit ${code} gave ${result.exitCode}`);
        });
        if (wrong.length > 0) {
          throw new ConformanceFailure(
            `expected each exit code back exactly; ${wrong.length} wrong: ${wrong.slice(0, 8).join(", ")}`,
          );
        }
      },
    },
    {
      id: "exec.exit-code.non-zero-is-data",
      title:
        "a non-zero exit is data: run() resolves with the code and the output, and iteration ends with an exit event carrying it",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const result = await sandbox.commands.run("printf partial; printf oops >&2; exit 3");
        expectEqual(result.exitCode, 3, "exit code");
        expectEqual(result.stdout, "partial", "stdout of a failing command");
        expectEqual(result.stderr, "oops", "stderr of a failing command");
        const { events } = await collectEvents(sandbox.commands.run("exit 1"));
        const last = events.at(-1);
        check(
          last?.type === "exit" && last.exitCode === 1,
          `expected the last event to be { type: "exit", exitCode: 1 }, got ${show(last)}`,
        );
      },
    },
    {
      id: "exec.exit-code.command-not-found",
      title: "a missing program gives exit code 127 as data (stderr says so), never a thrown error",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const result = await sandbox.commands.run("sbox-conformance-no-such-program --flag");
        expectEqual(result.exitCode, 127, "exit code of a missing program");
        check(
          result.stderr.length > 0,
          "expected stderr to explain the missing program, got an empty stderr",
        );
        const two = await sandbox.commands.run("ls /sbox-conformance-does-not-exist");
        check(
          two.exitCode !== 0 && two.exitCode !== 127,
          `expected ls of a missing path to exit with its own non-zero code, got ${two.exitCode}`,
        );
      },
    },
    {
      id: "exec.shell.string",
      title: "a string command is a shell snippet: expansions, pipes, redirections and && work",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const result = await sandbox.commands.run(
          'x=4; echo $((x * 10 + 2)) | tr 4 Z && printf "%s" "a b" | wc -c',
        );
        expectEqual(result.stdout.replace(/[ \t]+/g, ""), "Z2\n3\n", "stdout");
      },
    },
    {
      id: "exec.argv.hostile",
      title:
        "argv words reach the program byte-exact: quotes, $(), backticks, globs, newlines, unicode, control bytes, empty and 4 KiB words",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const result = await runOk(
          sandbox,
          shArgs(HEX_OF_ARGS_SCRIPT, ...HOSTILE_STRINGS),
          "printing argv as hex",
        );
        const got = argsFromHex(result.stdout);
        expectEqual(got.length, HOSTILE_STRINGS.length, "number of arguments received");
        for (const [i, word] of HOSTILE_STRINGS.entries()) expectEqual(got[i], word, `argument ${i}`);
      },
    },
    {
      id: "exec.argv.no-shell",
      title: "an argv command runs the program itself: no word is expanded by a shell",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const result = await runOk(
          sandbox,
          ["printf", "%s|", "$HOME", "*", "a b", "$(id)", "`id`", ";"],
          "printf with shell syntax in argv",
        );
        expectEqual(result.stdout, "$HOME|*|a b|$(id)|`id`|;|", "stdout");
      },
    },
    {
      id: "exec.cwd.hostile",
      title: "cwd is honoured, also for a directory whose name has spaces, quotes, $() and unicode",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const dir = `${await ctx.scratchDir(sandbox)}/dir with 'q' "d" $(x) \`y\` ünï`;
        await runOk(sandbox, ["mkdir", "-p", dir], "creating the directory");
        const result = await runOk(sandbox, "pwd", "pwd in the directory", { cwd: dir });
        expectEqual(result.stdout, `${dir}\n`, "pwd");
        const argv = await runOk(sandbox, ["sh", "-c", "pwd"], "argv pwd in the directory", { cwd: dir });
        expectEqual(argv.stdout, `${dir}\n`, "pwd of an argv command");
      },
    },
    {
      id: "exec.cwd.missing",
      title:
        "a cwd that does not exist fails the command (a SandboxError or a non-zero exit) and the command does not run",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const dir = await ctx.scratchDir(sandbox);
        const marker = `${dir}/ran`;
        let outcome: string;
        try {
          const result = await sandbox.commands.run(["sh", "-c", 'touch "$1"', "sh", marker], {
            cwd: `${dir}/missing`,
          });
          outcome = `exit ${result.exitCode}`;
          check(result.exitCode !== 0, "expected a non-zero exit code for a missing cwd, got 0");
        } catch (error) {
          outcome = show(error);
          check(
            SandboxError.isInstance(error),
            `expected a SandboxError for a missing cwd, got ${show(error)}`,
          );
        }
        check(
          !(await existsViaShell(sandbox, marker)),
          `expected the command not to run in a missing cwd (${outcome}), but it ran`,
        );
      },
    },
    {
      id: "exec.env.hostile",
      title:
        "env values reach the command byte-exact (quotes, $(), newlines, unicode, empty), and keys do not leak between commands",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const values = HOSTILE_STRINGS.slice(0, 22);
        const env = Object.fromEntries(values.map((v, i) => [`SBOX_CONF_${i}`, v]));
        const script = `for i in ${values.map((_, i) => i).join(" ")}; do eval "v=\\\${SBOX_CONF_$i-UNSET}"; printf "%s" "$v" | od -An -v -tx1 | tr -d " \\n"; echo; done`;
        const result = await runOk(sandbox, ["sh", "-c", script], "printing env as hex", { env });
        const got = argsFromHex(result.stdout);
        for (const [i, value] of values.entries()) expectEqual(got[i], value, `value of SBOX_CONF_${i}`);
        const after = await runOk(
          sandbox,
          // biome-ignore lint/suspicious/noTemplateCurlyInString: shell parameter expansion, not a template
          ["sh", "-c", 'printf "%s" "${SBOX_CONF_0-unset}"'],
          "env of the next command",
        );
        expectEqual(after.stdout, "unset", "SBOX_CONF_0 in a later command without env");
      },
    },
    {
      id: "exec.output.large-50mb",
      title: "50 MB of stdout arrives complete and in order",
      requires: [],
      timeoutMs: 180_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const last = 6_500_000;
        const result = await sandbox.commands.run(
          `if command -v seq >/dev/null 2>&1; then seq 1 ${last}; else awk 'BEGIN { for (i = 1; i <= ${last}; i++) print i }'; fi`,
        );
        expectEqual(result.exitCode, 0, "exit code of the 50 MB command");
        let expectedLength = 0;
        for (let digits = 1, low = 1; low <= last; digits++, low *= 10) {
          expectedLength += (Math.min(last, low * 10 - 1) - low + 1) * (digits + 1);
        }
        const out = result.stdout;
        let position = 0;
        for (let n = 1; n <= last; n++) {
          const line = `${n}\n`;
          if (!out.startsWith(line, position)) {
            throw new ConformanceFailure(
              `expected line ${n} at offset ${position} of ${expectedLength} bytes, got ${show(out.slice(position, position + 20))} (stdout is ${out.length} chars)`,
            );
          }
          position += line.length;
        }
        expectEqual(out.length, expectedLength, "stdout length");
      },
    },
    {
      id: "exec.output.unicode",
      title: "UTF-8 output (accents, CJK, emoji) is decoded exactly",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const text = "ünïcödé 日本語 🎉 \u00a0\u200b\n";
        const result = await runOk(sandbox, ["printf", "%s", text], "printing unicode");
        expectEqual(result.stdout, text, "stdout");
        const err = await runOk(
          sandbox,
          ["sh", "-c", 'printf "%s" "$1" >&2', "sh", text],
          "printing unicode to stderr",
        );
        expectEqual(err.stderr, text, "stderr");
      },
    },
    {
      id: "exec.output.invalid-utf8",
      title: "invalid UTF-8 output is decoded with replacement characters, never a crash or lost neighbours",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const result = await sandbox.commands.run("printf 'a\\377\\376b\\300c'");
        expectEqual(result.exitCode, 0, "exit code");
        expectEqual(result.stdout, "a\ufffd\ufffdb\ufffdc", "stdout with invalid bytes");
      },
    },
    {
      id: "exec.output.utf8-split-across-chunks",
      title: "a multi-byte character written in two parts with a pause between is decoded whole",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        let streamed = "";
        const result = await sandbox.commands.run("printf '\\342\\202'; sleep 1; printf '\\254\\n'", {
          onStdout: (chunk) => {
            streamed += chunk;
          },
        });
        expectEqual(result.stdout, "€\n", "stdout");
        expectEqual(streamed, "€\n", "text passed to onStdout");
      },
    },
    {
      id: "exec.stream.first-chunk-early",
      title:
        "streamed output arrives while the command runs: the first chunk of `echo a; sleep 2; echo b` comes at least 500 ms before the end (a buffered run delivers both at once)",
      requires: ["streaming"],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        let callbackAt: number | undefined;
        let callbackText = "";
        const handle = sandbox.commands.run("echo a; sleep 2; echo b", {
          onStdout: (chunk) => {
            callbackAt ??= Date.now();
            callbackText ||= chunk;
          },
        });
        const { events, at } = await collectEvents(handle);
        const firstIndex = events.findIndex((e) => e.type === "stdout");
        const exitIndex = events.findIndex((e) => e.type === "exit");
        check(firstIndex >= 0 && exitIndex >= 0, `expected stdout and exit events, got ${show(events)}`);
        const first = events[firstIndex] as { data: string };
        check(
          first.data.startsWith("a") && !first.data.includes("b"),
          `expected the first chunk to hold "a" only, got ${show(first.data)}`,
        );
        const lead = at[exitIndex]! - at[firstIndex]!;
        check(
          lead >= 500,
          `expected the first chunk at least 500 ms before the exit event, it came ${lead} ms before`,
        );
        check(
          callbackAt !== undefined && at[exitIndex]! - callbackAt >= 500,
          `expected onStdout to be called at least 500 ms before the exit, got ${callbackAt === undefined ? "no call" : `${at[exitIndex]! - callbackAt} ms`}`,
        );
        check(
          callbackText.startsWith("a") && !callbackText.includes("b"),
          `expected the first onStdout chunk to hold "a" only, got ${show(callbackText)}`,
        );
      },
    },
    {
      id: "exec.stream.events-in-order",
      title:
        "iteration yields stdout and stderr events whose concatenation equals the result, then exactly one exit event, last",
      requires: [],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const handle = sandbox.commands.run(
          "printf o1; printf e1 >&2; sleep 1; printf o2; printf e2 >&2; exit 4",
        );
        const { events } = await collectEvents(handle);
        const exits = events.filter((e) => e.type === "exit");
        expectEqual(exits.length, 1, "number of exit events");
        check(
          events.at(-1)?.type === "exit",
          `expected the exit event to be last, got ${show(events.map((e) => e.type))}`,
        );
        const exit = exits[0] as { exitCode: number };
        expectEqual(exit.exitCode, 4, "exitCode of the exit event");
        const out = events.flatMap((e) => (e.type === "stdout" ? [e.data] : [])).join("");
        const err = events.flatMap((e) => (e.type === "stderr" ? [e.data] : [])).join("");
        expectEqual(out, "o1o2", "concatenated stdout events");
        expectEqual(err, "e1e2", "concatenated stderr events");
        const result = await handle;
        expectEqual(result.stdout, "o1o2", "stdout of the awaited handle after iteration");
        expectEqual(result.exitCode, 4, "exitCode of the awaited handle after iteration");
      },
    },
    {
      id: "exec.timeout.kills-tree",
      title: "timeoutMs rejects with Timeout and kills the command's whole process tree (children stop)",
      requires: [],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const beat = heartbeatFiles(await ctx.scratchDir(sandbox));
        const started = Date.now();
        // Generous, so that even a loaded machine starts the whole tree before the timeout fires.
        const handle = sandbox.commands.run(shArgs(HEARTBEAT_TREE_SCRIPT, ...beat.files), {
          timeoutMs: 5_000,
        });
        const settled = expectRejects(handle, "Timeout", "run() of a command that outlives timeoutMs");
        const childStarted = waitForNonEmpty(sandbox, beat.files[1], 5_000);
        await settled;
        const took = Date.now() - started;
        check(took >= 4_500, `expected the Timeout not before the 5000 ms timeout, it came after ${took} ms`);
        check(await childStarted, "expected the command's child process to start within the 5000 ms timeout");
        await beat.expectStopped(sandbox, "after the timeout");
      },
    },
    {
      id: "exec.abort.kills-tree",
      title: "aborting the signal rejects with Aborted and kills the whole process tree",
      requires: [],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const beat = heartbeatFiles(await ctx.scratchDir(sandbox));
        const controller = new AbortController();
        const handle = sandbox.commands.run(shArgs(HEARTBEAT_TREE_SCRIPT, ...beat.files), {
          signal: controller.signal,
        });
        const settled = expectRejects(Promise.resolve(handle), "Aborted", "run() whose signal is aborted");
        check(
          await waitForNonEmpty(sandbox, beat.files[1], 20_000),
          "expected the command to start within 20 s",
        );
        controller.abort();
        await settled;
        await beat.expectStopped(sandbox, "after abort");
      },
    },
    {
      id: "exec.abort.before-start",
      title: "an already aborted signal rejects with Aborted and the command never runs",
      requires: [],
      coreOnly: true,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const marker = `${await ctx.scratchDir(sandbox)}/ran`;
        await expectRejects(
          Promise.resolve(sandbox.commands.run(["touch", marker], { signal: AbortSignal.abort() })),
          "Aborted",
          "run() with an aborted signal",
        );
        await sleep(500);
        check(
          !(await existsViaShell(sandbox, marker)),
          "expected the command not to run, but its marker file exists",
        );
      },
    },
    {
      id: "exec.kill.handle",
      title: "handle.kill() ends the command and its whole tree; the handle settles",
      requires: ["killProcess"],
      timeoutMs: 90_000,
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const beat = heartbeatFiles(await ctx.scratchDir(sandbox));
        const handle = sandbox.commands.run(shArgs(HEARTBEAT_TREE_SCRIPT, ...beat.files));
        const settled = Promise.resolve(handle).then(
          (result) =>
            result.exitCode === 0 && !result.signal
              ? "success"
              : `exit ${result.exitCode} ${result.signal ?? ""}`,
          (error: unknown) => `rejected with ${show(error)}`,
        );
        // Both beats, not only the second: the first is a subshell that may write after it, and a kill
        // before its first beat would leave it looking as if it never started.
        check(
          (await waitForNonEmpty(sandbox, beat.files[1], 20_000)) &&
            (await waitForNonEmpty(sandbox, beat.files[0], 20_000)),
          "expected the command to start within 20 s",
        );
        await handle.kill();
        const outcome = await settled;
        check(
          outcome !== "success",
          "expected a killed command not to resolve as a success (exit 0, no signal)",
        );
        await beat.expectStopped(sandbox, "after handle.kill()");
      },
    },
    {
      id: "exec.stdin.string",
      title: "stdin given as a string reaches the command exactly and is closed",
      requires: ["stdin"],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const text = 'line 1\nit\'s "q" $(x)\nünïcödé 🎉\nno newline at end';
        const result = await runOk(sandbox, "cat", "cat with stdin", { stdin: text });
        expectEqual(result.stdout, text, "stdout of cat");
      },
    },
    {
      id: "exec.stdin.bytes",
      title: "stdin given as bytes (all 256 values) reaches the command exactly",
      requires: ["stdin"],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const bytes = allByteValues();
        const result = await runOk(sandbox, 'od -An -v -tx1 | tr -d " \\n"', "od of stdin", { stdin: bytes });
        expectEqual(result.stdout, hexOf(bytes), "hex of the bytes read from stdin");
        const empty = await runOk(sandbox, "wc -c", "wc of empty stdin", { stdin: new Uint8Array(0) });
        expectEqual(empty.stdout.trim(), "0", "byte count of empty stdin");
      },
    },
    {
      id: "exec.stdin.stream",
      title: "stdin given as a stream is forwarded chunk by chunk and closed at its end",
      requires: ["stdin"],
      async run(ctx) {
        const sandbox = await ctx.sharedSandbox();
        const bytes = utf8("chunked stdin ünï\n".repeat(2000));
        const result = await runOk(sandbox, 'od -An -v -tx1 | tr -d " \\n"', "od of streamed stdin", {
          stdin: streamOf(bytes, 4096),
        });
        expectEqual(result.stdout.length / 2, bytes.length, "number of bytes read from streamed stdin");
        expectEqual(result.stdout, hexOf(bytes), "hex of streamed stdin");
      },
    },
  ];
}
