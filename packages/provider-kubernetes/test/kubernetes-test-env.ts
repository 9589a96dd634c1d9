/**
 * Shared set-up of the tests: the Kubernetes emulator of `@sbox/emulators` (pods are containers of the
 * local Docker Engine) and providers pointed at it through its kubeconfig. Without a Docker Engine the
 * suites skip visibly, except under `CI`, where a missing engine is a failure.
 */
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import {
  type KubernetesEmulator,
  type KubernetesEmulatorOptions,
  startKubernetesEmulator,
} from "@sbox/emulators/kubernetes";
import { type KubernetesProviderOptions, kubernetes } from "../src/index.js";

/** The image test sandboxes run: busybox only, so nothing relies on GNU tools. */
export const TEST_IMAGE: string = process.env.SBOX_K8S_TEST_IMAGE ?? "sbox-busybox:latest";
/** An image with python3 (the egress cases' HTTP client; busybox 1.35's wget crashes with a timeout). */
export const DEBIAN_IMAGE: string = process.env.SBOX_K8S_DEBIAN_IMAGE ?? "sbox-debian:bookworm";
/** Label every object of this test process carries, so the run can prove it left nothing behind. */
export const RUN_LABEL = "sbox-test-run";
/** This process's value of {@link RUN_LABEL}. */
export const RUN_ID: string = `${process.pid}-${randomBytes(4).toString("hex")}`;

function probe(): { ok: boolean; reason: string } {
  const result = spawnSync("docker", ["info", "--format", "{{.ServerVersion}}"], {
    timeout: 15_000,
    encoding: "utf8",
  });
  if (result.error) return { ok: false, reason: `no docker client (${result.error.message})` };
  if (result.status !== 0)
    return { ok: false, reason: `no Docker Engine answers (${result.stderr.trim().split("\n")[0]})` };
  return { ok: true, reason: `engine ${result.stdout.trim()}` };
}

/** Whether the emulator's Docker backend is there. */
export const ENGINE: { ok: boolean; reason: string } = probe();
if (!ENGINE.ok) {
  if (process.env.CI)
    throw new Error(
      `CI is set but ${ENGINE.reason}: run scripts/start-dockerd.sh before the Kubernetes tests`,
    );
  console.warn(
    `[provider-kubernetes] SKIPPING emulator tests: ${ENGINE.reason} (start one with scripts/start-dockerd.sh)`,
  );
}

/** Title suffix that makes a skip visible. */
export const SKIP_NOTE: string = ENGINE.ok ? "" : ` (SKIPPED: ${ENGINE.reason})`;

/** Whether the engine has `image`. */
export function hasImage(image: string): boolean {
  return (
    ENGINE.ok &&
    spawnSync("docker", ["image", "inspect", image], { stdio: "ignore", timeout: 15_000 }).status === 0
  );
}

/** Starts an emulator on the Docker backend. */
export function startTestEmulator(options: KubernetesEmulatorOptions = {}): Promise<KubernetesEmulator> {
  return startKubernetesEmulator({
    backend: "docker",
    pullBackoffMs: 1_000,
    restartBackoffMs: 1_000,
    ...options,
  });
}

/** A provider talking to `emulator`, labelled with this run. */
export function testProvider(
  emulator: KubernetesEmulator,
  options: KubernetesProviderOptions = {},
): ReturnType<typeof kubernetes> {
  return kubernetes({
    kubeconfig: emulator.kubeconfig,
    image: TEST_IMAGE,
    labels: { [RUN_LABEL]: RUN_ID },
    createTimeoutMs: 60_000,
    ...options,
  });
}

/** Containers of this emulator run still on the engine (by the backend's run label). */
export function backendContainers(): string[] {
  const result = spawnSync("docker", ["ps", "-aq", "--filter", "label=sbox.meta.sbox-emulator=kubernetes"], {
    encoding: "utf8",
    timeout: 15_000,
  });
  return result.stdout.split("\n").filter((line) => line.trim() !== "");
}
