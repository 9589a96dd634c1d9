/**
 * Docker for the tests: is an engine there, and a per-run label so every container this run makes can be
 * found and removed. Without an engine the Docker cases skip visibly, except under `CI`, where that fails.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { docker } from "@sbox/provider-docker";

/** The image of Docker test sandboxes (busybox: nothing may rely on GNU tools). */
export const DOCKER_IMAGE: string = process.env.SBOX_DOCKER_TEST_IMAGE ?? "sbox-busybox:latest";
/** Label on every container of this run. */
export const RUN_LABEL = "sbox.test-run";
/** This run's label value. */
export const RUN_ID: string = `mcp-${process.pid}-${randomBytes(4).toString("hex")}`;

function probe(): string | undefined {
  const info = spawnSync("docker", ["info", "--format", "{{.ServerVersion}}"], {
    timeout: 15_000,
    encoding: "utf8",
  });
  if (info.error || info.status !== 0)
    return "no Docker Engine answers (scripts/start-dockerd.sh starts one)";
  const image = spawnSync("docker", ["image", "inspect", DOCKER_IMAGE], { stdio: "ignore", timeout: 15_000 });
  if (image.status !== 0)
    return `image ${DOCKER_IMAGE} is missing (scripts/build-busybox-image.sh builds it)`;
  return undefined;
}

/** Why Docker cases cannot run here, or undefined when they can. */
export const DOCKER_MISSING: string | undefined = probe();
if (DOCKER_MISSING) {
  if (process.env.CI) throw new Error(`CI is set but ${DOCKER_MISSING}`);
  console.warn(`[mcp] SKIPPING Docker cases: ${DOCKER_MISSING}`);
}

/** A docker provider whose containers carry this run's label. */
export function dockerProvider(): ReturnType<typeof docker> {
  return docker({ image: DOCKER_IMAGE, labels: { [RUN_LABEL]: RUN_ID } });
}

/** Containers of this run still on the engine (should be none after cleanup). */
export function leftoverContainers(): string[] {
  const result = spawnSync("docker", ["ps", "-aq", "--filter", `label=${RUN_LABEL}=${RUN_ID}`], {
    encoding: "utf8",
    timeout: 15_000,
  });
  return result.stdout.split("\n").filter(Boolean);
}
