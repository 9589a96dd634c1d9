/**
 * Shared set-up of the Docker tests: is there an engine, which image, and a per-run label so the run can
 * prove it left no container behind. Without an engine the suites skip visibly, except under `CI`, where
 * a missing engine is a failure.
 */
import { execFileSync, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { fileURLToPath } from "node:url";
import Docker from "dockerode";

/** Root of the repository (for scripts/). */
export const REPO_ROOT: string = fileURLToPath(new URL("../../../", import.meta.url));

/** The image every test sandbox runs: busybox only, so nothing relies on GNU tools. */
export const TEST_IMAGE: string = process.env.SBOX_DOCKER_TEST_IMAGE ?? "sbox-busybox:latest";

/** Label carried by every container this test process creates. */
export const RUN_LABEL = "sbox.test-run";
/** This process's value of {@link RUN_LABEL}. */
export const RUN_ID: string = `${process.pid}-${randomBytes(4).toString("hex")}`;

function probeEngine(): { ok: boolean; reason: string } {
  const result = spawnSync("docker", ["info", "--format", "{{.ServerVersion}}"], {
    timeout: 15_000,
    encoding: "utf8",
  });
  if (result.error) return { ok: false, reason: `no docker client (${result.error.message})` };
  if (result.status !== 0)
    return { ok: false, reason: `no Docker Engine answers (${result.stderr.trim().split("\n")[0]})` };
  return { ok: true, reason: `engine ${result.stdout.trim()}` };
}

/** Whether an engine answers, and why not. */
export const ENGINE: { ok: boolean; reason: string } = probeEngine();

if (!ENGINE.ok) {
  if (process.env.CI) {
    throw new Error(`CI is set but ${ENGINE.reason}: run scripts/start-dockerd.sh before the Docker tests`);
  }
  console.warn(
    `[provider-docker] SKIPPING Docker tests: ${ENGINE.reason} (start one with scripts/start-dockerd.sh)`,
  );
}

/** Title suffix that makes a skip visible in the report. */
export const SKIP_NOTE: string = ENGINE.ok ? "" : ` (SKIPPED: ${ENGINE.reason})`;

/** Builds the busybox test image when it is missing (the script is idempotent and takes about a second). */
export function ensureTestImage(): void {
  if (!ENGINE.ok) return;
  const inspect = spawnSync("docker", ["image", "inspect", TEST_IMAGE], { stdio: "ignore", timeout: 15_000 });
  if (inspect.status === 0) return;
  execFileSync("bash", [`${REPO_ROOT}scripts/build-busybox-image.sh`, TEST_IMAGE], {
    stdio: "inherit",
    timeout: 120_000,
  });
}

/** A raw dockerode client for checks through a second channel. */
export function rawDocker(): Docker {
  return new Docker();
}

/** Containers of this run still on the engine. */
export async function leftovers(docker: Docker = rawDocker()): Promise<Docker.ContainerInfo[]> {
  return docker.listContainers({ all: true, filters: { label: [`${RUN_LABEL}=${RUN_ID}`] } });
}

/** Removes whatever this run left (so a failing test does not leak), and returns how many there were. */
export async function removeLeftovers(docker: Docker = rawDocker()): Promise<number> {
  const left = await leftovers(docker);
  for (const c of left)
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined);
  return left.length;
}

/** A fresh abort signal for one driver call. */
export function call(timeoutMs = 60_000): { signal: AbortSignal } {
  return { signal: AbortSignal.timeout(timeoutMs) };
}

/** Decodes driver output. */
export function text(data: Uint8Array | string): string {
  return typeof data === "string" ? data : Buffer.from(data).toString("utf8");
}
