import { NotSupportedError, shellQuoteArgv } from "@sbox/core";
import { expectPositionals } from "../args/positionals.js";
import { usageError } from "../args/usage-error.js";
import { NAME_OPTION, sandboxTarget } from "../records/sandbox-names.js";
import type { CommandDefinition } from "./command-definition.js";
import { exitCodeOf } from "./stream-command.js";

/** `sbox shell ID`: an interactive terminal in a sandbox, with resize. */
export const shellCommand: CommandDefinition = {
  name: "shell",
  summary: "open an interactive shell (pty) in a sandbox",
  usage: [
    "sbox shell [options] ID [[--] CMD [ARG...]]",
    "sbox shell [options] --name NAME [[--] CMD [ARG...]]",
  ],
  commandAfterPositionals: 1,
  idOption: "name",
  details:
    "Needs a terminal and a provider with the pty capability (see `sbox caps`). The terminal is put in raw\n" +
    "mode, so Ctrl-C and Ctrl-D go to the sandbox; exit the shell to leave. Window size changes are passed on.\n" +
    "The exit code is the shell's.",
  options: {
    cwd: { type: "string", short: "w", valueName: "DIR", description: "directory to start in" },
    name: NAME_OPTION,
  },
  examples: ["sbox shell local:3f2a", "sbox shell docker:91bc -- bash -l"],
  async run(context, args) {
    const target = await sandboxTarget(context, args);
    const [id] = expectPositionals(
      { ...args, positionals: target.id === undefined ? [] : [target.id, ...target.rest] },
      "shell",
      ["ID"],
    );
    const { stdin, stdout } = context.io;
    const sandbox = await context.connect(id!);
    const pty = sandbox.pty;
    if (!pty) {
      throw new NotSupportedError(
        "pty",
        sandbox.provider,
        `no interactive shell; use \`sbox exec ${id} -- sh -c '...'\` or a provider with pty (sbox caps)`,
      );
    }
    if (stdin.isTTY !== true || typeof stdin.setRawMode !== "function") {
      throw usageError(
        `sbox shell needs a terminal on stdin; for scripts use: sbox exec ${id} -- sh -c '...'`,
      );
    }
    const cwd = typeof args.values.cwd === "string" ? args.values.cwd : undefined;
    const env: Record<string, string> = {};
    if (context.io.env.TERM) env.TERM = context.io.env.TERM;
    const terminal = await pty.create({
      cols: stdout.columns ?? 80,
      rows: stdout.rows ?? 24,
      onData(data) {
        stdout.write(data);
      },
      ...(cwd === undefined ? {} : { cwd }),
      ...(Object.keys(env).length > 0 ? { env } : {}),
      ...(args.rest !== undefined && args.rest.length > 0 ? { command: shellQuoteArgv(args.rest) } : {}),
    });
    const onInput = (data: Buffer | string): void => {
      terminal.write(typeof data === "string" ? data : new Uint8Array(data)).catch(() => {});
    };
    const onResize = (): void => {
      terminal.resize(stdout.columns ?? 80, stdout.rows ?? 24).catch(() => {});
    };
    stdin.setRawMode(true);
    stdin.on("data", onInput);
    stdin.resume();
    process.on("SIGWINCH", onResize);
    try {
      const exit = await terminal.wait();
      return exitCodeOf({ exitCode: exit.exitCode, signal: exit.signal });
    } finally {
      process.off("SIGWINCH", onResize);
      stdin.off("data", onInput);
      stdin.setRawMode(false);
      stdin.pause();
    }
  },
};
