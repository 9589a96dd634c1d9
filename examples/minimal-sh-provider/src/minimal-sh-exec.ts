import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import { userInfo } from "node:os";
import { type DriverExecRequest, type DriverExecResult, SandboxError, shellCommandOf } from "@sbox/core/spec";
import type { MinimalShRecord } from "./minimal-sh-store.js";

/** Whether `user` names the user this program runs as (by name or uid). */
function isCurrentUser(user: string): boolean {
  const me = userInfo();
  return user === me.username || user === String(me.uid);
}

/** Every process of a sandbox carries this variable, so destroy can find and end them all. */
export const SANDBOX_ENV_KEY = "SBOX_MINIMAL_SH_SANDBOX";

async function writeStdin(stdin: NodeJS.WritableStream, data: DriverExecRequest["stdin"]): Promise<void> {
  if (data instanceof Uint8Array) {
    stdin.end(data);
    return;
  }
  if (data instanceof ReadableStream) {
    for await (const chunk of data as unknown as AsyncIterable<Uint8Array>) {
      if (!stdin.write(chunk)) await new Promise((resolve) => stdin.once("drain", resolve));
    }
  }
  stdin.end();
}

/**
 * The one exec primitive: `sh -c <script>` in the sandbox directory, buffered. It runs in its own process
 * group so that an abort ends the command and everything it started.
 */
export function minimalShExec(
  record: MinimalShRecord,
  request: DriverExecRequest,
): Promise<DriverExecResult> {
  return new Promise((resolve, reject) => {
    if (request.signal.aborted) {
      reject(new SandboxError("Aborted", "exec aborted before it started"));
      return;
    }
    if (request.user !== undefined && !isCurrentUser(request.user)) {
      // Refused, never ignored: a command asked to run as someone else must not run as this user.
      reject(
        new SandboxError(
          "NotSupported",
          `the minimal sh provider runs commands as the host user; running as ${JSON.stringify(request.user)} is not supported`,
        ),
      );
      return;
    }
    const child = spawn("/bin/sh", ["-c", shellCommandOf(request.command)], {
      cwd: record.dir,
      env: {
        PATH: process.env.PATH ?? "/usr/local/bin:/usr/bin:/bin",
        HOME: record.dir,
        LANG: "C.UTF-8",
        ...record.env,
        [SANDBOX_ENV_KEY]: record.id,
      },
      stdio: ["pipe", "pipe", "pipe"],
      detached: true,
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on("data", (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on("data", (chunk: Buffer) => stderr.push(chunk));
    child.stdin.on("error", () => {
      // The command may exit without reading its stdin; that is not an error of the exec.
    });
    writeStdin(child.stdin, request.stdin).catch(() => child.stdin.destroy());
    const onAbort = () => {
      if (child.pid !== undefined) {
        try {
          process.kill(-child.pid, "SIGKILL");
        } catch {
          // Already gone.
        }
      }
    };
    request.signal.addEventListener("abort", onAbort, { once: true });
    child.on("error", (error) => {
      request.signal.removeEventListener("abort", onAbort);
      // spawn reports a missing cwd as ENOENT: the sandbox directory is gone, so is the sandbox.
      if (!existsSync(record.dir)) {
        reject(new SandboxError("NotFound", `sandbox ${record.id} no longer exists`, { cause: error }));
        return;
      }
      // Anything else is rejected as Node reports it: defineProvider maps it (errno codes, abort) and
      // names the provider.
      reject(error);
    });
    child.on("close", (code, signal) => {
      request.signal.removeEventListener("abort", onAbort);
      if (request.signal.aborted) {
        reject(new SandboxError("Aborted", "exec aborted"));
        return;
      }
      resolve({
        stdout: Buffer.concat(stdout),
        stderr: Buffer.concat(stderr),
        exitCode: code ?? undefined,
        signal: signal ?? undefined,
      });
    });
  });
}

/** Ends every process that carries the sandbox's marker variable (Linux: read from /proc). */
export async function killSandboxProcesses(id: string): Promise<void> {
  let pids: string[];
  try {
    pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name));
  } catch {
    return;
  }
  const marker = `${SANDBOX_ENV_KEY}=${id}`;
  await Promise.all(
    pids.map(async (pid) => {
      try {
        const environ = await readFile(`/proc/${pid}/environ`, "latin1");
        if (environ.split("\0").includes(marker)) process.kill(Number(pid), "SIGKILL");
      } catch {
        // Exited meanwhile, or not ours to read.
      }
    }),
  );
}
