/**
 * `sbox emulate`: the Kubernetes emulator started from the CLI prints a kubeconfig kubectl uses as is, keeps
 * serving until SIGTERM, then exits 0 having destroyed every pod's container. Unknown vendors and
 * backends are usage errors. Without kubectl or a Docker Engine the emulator part skips visibly (not in CI).
 */
import { spawn, spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { runSbox, SBOX_BIN } from "./sbox-harness.js";

function missing(): string | undefined {
  if (spawnSync("kubectl", ["version", "--client"], { stdio: "ignore", timeout: 20_000 }).status !== 0)
    return "no kubectl";
  if (
    spawnSync("docker", ["image", "inspect", "sbox-busybox:latest"], { stdio: "ignore", timeout: 20_000 })
      .status !== 0
  ) {
    return "no Docker Engine with sbox-busybox:latest";
  }
  return undefined;
}

const why = missing();
if (why && process.env.CI) throw new Error(`CI is set but ${why}`);

function kubectl(args: string[], kubeconfig: string): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn("kubectl", args, { env: { ...process.env, KUBECONFIG: kubeconfig } });
    let stdout = "";
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    child.on("close", (code) => resolve({ code, stdout }));
  });
}

describe("sbox emulate", () => {
  test("an unknown vendor or backend is a usage error", async () => {
    const vendor = await runSbox(["emulate", "nosuchcloud"]);
    expect(vendor.code).toBe(2);
    expect(vendor.stderr).toContain("unknown vendor");
    const backend = await runSbox(["emulate", "kubernetes", "--backend", "vm"]);
    expect(backend.code).toBe(2);
    expect(backend.stderr).toContain("--backend");
  });

  test.skipIf(why !== undefined)(
    `kubernetes prints a kubeconfig that kubectl uses, and cleans up on SIGTERM${why ? ` (SKIPPED: ${why})` : ""}`,
    async () => {
      const dir = mkdtempSync(join(tmpdir(), "sbox-emulate-"));
      const child = spawn(process.execPath, [SBOX_BIN, "emulate", "kubernetes", "--backend", "docker"], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      try {
        let text = "";
        await new Promise<void>((resolve, reject) => {
          const timer = setTimeout(() => reject(new Error(`no kubeconfig printed: ${text}`)), 30_000);
          child.stdout.on("data", (chunk: Buffer) => {
            text += chunk.toString();
            if (text.includes("current-context:")) {
              clearTimeout(timer);
              resolve();
            }
          });
          child.on("exit", (code) => reject(new Error(`sbox emulate exited with ${code}`)));
        });
        const kubeconfig = join(dir, "kubeconfig");
        writeFileSync(kubeconfig, text);
        expect(
          (
            await kubectl(
              ["run", "from-cli", "--image", "sbox-busybox:latest", "--", "sleep", "300"],
              kubeconfig,
            )
          ).code,
        ).toBe(0);
        expect(
          (await kubectl(["wait", "--for=condition=Ready", "pod/from-cli", "--timeout=60s"], kubeconfig))
            .code,
        ).toBe(0);
        const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
        child.kill("SIGTERM");
        expect(await exit).toBe(0);
        const left = spawnSync("docker", ["ps", "-aq", "--filter", "label=sbox.meta.k8s-pod=from-cli"], {
          encoding: "utf8",
        });
        expect(left.stdout.trim()).toBe("");
      } finally {
        if (child.exitCode === null) child.kill("SIGKILL");
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
