/**
 * Acceptance: killing the Docker daemon in the middle of a command gives a SandboxError (retryable) within
 * a bound, never a hang; once the daemon is back (restarted here with scripts/start-dockerd.sh, also when
 * the test fails), `connect` works again.
 *
 * Needs a local daemon this process may kill: root, no DOCKER_HOST, /var/run/docker.pid.
 */
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import type { DriverSandbox } from "@sbox/core/spec";
import { SandboxError } from "@sbox/core/spec";
import { afterAll, describe, expect, test } from "vitest";
import type { DockerSandboxNative } from "../src/index.js";
import { docker } from "../src/index.js";
import {
  call,
  ENGINE,
  ensureTestImage,
  REPO_ROOT,
  RUN_ID,
  RUN_LABEL,
  removeLeftovers,
  TEST_IMAGE,
  text,
} from "./docker-test-env.js";

const PID_FILE = "/var/run/docker.pid";

function controllable(): string | undefined {
  if (!ENGINE.ok) return ENGINE.reason;
  if (process.env.DOCKER_HOST) return "DOCKER_HOST points at a remote engine";
  if (process.getuid?.() !== 0) return "not root: cannot kill the daemon";
  if (!existsSync(PID_FILE)) return `no ${PID_FILE}: the daemon is not a local dockerd`;
  return undefined;
}

const reason = controllable();
if (reason && process.env.CI) throw new Error(`CI is set but the daemon-restart test cannot run: ${reason}`);
if (reason) console.warn(`[provider-docker] SKIPPING daemon-restart acceptance test: ${reason}`);

function daemonPid(): number {
  return Number(readFileSync(PID_FILE, "utf8").trim());
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function restartDaemon(): void {
  execFileSync("bash", [`${REPO_ROOT}scripts/start-dockerd.sh`], { stdio: "inherit", timeout: 120_000 });
}

const provider = docker({ image: TEST_IMAGE, labels: { [RUN_LABEL]: RUN_ID }, requestTimeoutMs: 10_000 });

describe.skipIf(reason !== undefined)(
  `docker daemon killed mid-command${reason ? ` (SKIPPED: ${reason})` : ""}`,
  () => {
    let sandbox: DriverSandbox<DockerSandboxNative> | undefined;

    afterAll(async () => {
      // Whatever happened above, leave a running daemon and no container behind.
      restartDaemon();
      if (sandbox) await provider.doDestroy(sandbox, call()).catch(() => undefined);
      expect(await removeLeftovers()).toBe(0);
    });

    test("the running command rejects with a retryable SandboxError, calls while down fail fast, connect works after restart", async () => {
      ensureTestImage();
      sandbox = await provider.doCreate({}, call());
      const box = sandbox;
      const pid = daemonPid();
      let killed = false;
      const started = Date.now();
      const running = provider.doExecStream!(box, {
        command: { shell: "echo started; sleep 60; echo never" },
        signal: AbortSignal.timeout(45_000),
        onStdout(chunk) {
          if (!killed && text(chunk).includes("started")) {
            killed = true;
            process.kill(pid, "SIGKILL");
          }
        },
        onStderr() {},
      });
      try {
        const error = await running.then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(killed).toBe(true);
        expect(SandboxError.isInstance(error)).toBe(true);
        expect(error).toMatchObject({ code: "Provider", retryable: true, provider: "docker" });
        // Well inside the command's own 45 s bound: the cut connection is noticed, not waited out.
        expect(Date.now() - started).toBeLessThan(30_000);
        for (let i = 0; i < 50 && alive(pid); i++) await new Promise((r) => setTimeout(r, 100));

        const down = await provider.doConnect(box.id, call()).catch((e: unknown) => e);
        expect(down).toMatchObject({ code: "Provider", retryable: true });
        const downExec = await provider
          .doExec(box, { command: { shell: "true" }, ...call() })
          .catch((e: unknown) => e);
        expect(downExec).toMatchObject({ code: "Provider", retryable: true });
      } finally {
        restartDaemon();
      }

      const again = await provider.doConnect(box.id, call());
      expect(again.id).toBe(box.id);
      // Without live-restore the engine stopped the container on restart; the files are still there.
      await provider.doResume!(again, call());
      const result = await provider.doExec(again, { command: { shell: "echo back" }, ...call() });
      expect(text(result.stdout)).toBe("back\n");
    });
  },
);
