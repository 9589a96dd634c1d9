/**
 * kubectl, a real client nobody here wrote, against the Kubernetes emulator with the kubeconfig it prints:
 * `get pods`, `run --image … -- …`, `wait`, `exec -i … -- sh -c …` with stdin and exit codes, `cp` both
 * ways (binary), `port-forward` (kubectl 1.31+ tunnels SPDY through a WebSocket), `logs`, `delete`.
 * Pods are containers of the local Docker Engine. kubectl runs as a child process, so the emulator (in
 * this process) keeps answering while it waits. Without kubectl or a Docker Engine the suite skips
 * visibly, except under `CI`.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { type KubernetesEmulator, startKubernetesEmulator } from "../src/kubernetes/index.js";

const IMAGE = "sbox-busybox:latest";

function check(): string | undefined {
  const kubectl = spawnSync("kubectl", ["version", "--client", "--output=json"], {
    encoding: "utf8",
    timeout: 20_000,
  });
  if (kubectl.error || kubectl.status !== 0) return "kubectl is not installed (.ci/run installs it)";
  const docker = spawnSync("docker", ["image", "inspect", IMAGE], { stdio: "ignore", timeout: 20_000 });
  if (docker.error || docker.status !== 0)
    return `no Docker Engine with ${IMAGE} (scripts/start-dockerd.sh, scripts/build-busybox-image.sh)`;
  return undefined;
}

const missing = check();
if (missing && process.env.CI) throw new Error(`CI is set but ${missing}`);
if (missing) console.warn(`[emulators] SKIPPING kubectl tests: ${missing}`);

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

describe.skipIf(missing !== undefined)(
  `kubectl against the Kubernetes emulator${missing ? ` (SKIPPED: ${missing})` : ""}`,
  () => {
    let emulator: KubernetesEmulator;
    let dir: string;
    const children = new Set<ChildProcess>();

    const kubectl = (
      args: string[],
      input?: Buffer | string,
      env: Record<string, string> = {},
    ): Promise<Run> =>
      new Promise((resolve, reject) => {
        const child = spawn("kubectl", args, {
          env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig"), ...env },
          stdio: ["pipe", "pipe", "pipe"],
        });
        children.add(child);
        const out: Buffer[] = [];
        let err = "";
        const timer = setTimeout(() => child.kill("SIGKILL"), 90_000);
        child.stdout.on("data", (chunk: Buffer) => out.push(chunk));
        child.stderr.on("data", (chunk: Buffer) => {
          err += chunk.toString("utf8");
        });
        child.on("error", reject);
        child.on("close", (code) => {
          clearTimeout(timer);
          children.delete(child);
          resolve({ code, stdout: Buffer.concat(out), stderr: err });
        });
        child.stdin.end(input ?? "");
      });

    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), "sbox-kubectl-"));
      emulator = await startKubernetesEmulator({ backend: "docker" });
      writeFileSync(join(dir, "kubeconfig"), emulator.kubeconfig, { mode: 0o600 });
    });

    afterAll(async () => {
      for (const child of children) child.kill("SIGKILL");
      await emulator?.close();
      rmSync(dir, { recursive: true, force: true });
    });

    test("get pods on an empty namespace, then run a pod and wait for it", async () => {
      const empty = await kubectl(["get", "pods"]);
      expect(empty.code).toBe(0);
      expect(empty.stderr).toContain("No resources found in default namespace.");
      const run = await kubectl([
        "run",
        "web",
        "--image",
        IMAGE,
        "--",
        "sh",
        "-c",
        "echo ready; mkdir -p /srv; echo hello-from-pod > /srv/index.html; exec httpd -f -p 8080 -h /srv",
      ]);
      expect(run.stderr).toBe("");
      expect(run.stdout.toString()).toContain("pod/web created");
      const wait = await kubectl(["wait", "--for=condition=Ready", "pod/web", "--timeout=60s"]);
      expect(wait.stdout.toString()).toContain("pod/web condition met");
      const list = await kubectl(["get", "pods"]);
      expect(list.stdout.toString()).toMatch(
        /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\nweb\s+1\/1\s+Running\s+0\s+\d+s\n$/,
      );
    });

    test("exec -i feeds stdin, separates stdout from stderr, and exits with the command's code", async () => {
      const result = await kubectl(
        ["exec", "-i", "web", "--", "sh", "-c", 'read line; echo "got:$line"; echo oops >&2; exit 3'],
        "hello\n",
      );
      expect(result.code).toBe(3);
      expect(result.stdout.toString()).toBe("got:hello\n");
      expect(result.stderr).toContain("oops");
      const ok = await kubectl(["exec", "web", "--", "sh", "-c", "exit 0"]);
      expect(ok.code).toBe(0);
      const data = randomBytes(256 * 1024);
      const sum = await kubectl(["exec", "-i", "web", "--", "sha256sum"], data);
      expect(sum.stdout.toString().split(" ")[0]).toBe(createHash("sha256").update(data).digest("hex"));
    });

    test("cp copies a binary file into the pod and a file back out", async () => {
      const data = randomBytes(1024 * 1024);
      writeFileSync(join(dir, "up.bin"), data);
      const up = await kubectl(["cp", join(dir, "up.bin"), "web:/tmp/up.bin"]);
      expect(up.code).toBe(0);
      const sum = await kubectl(["exec", "web", "--", "sha256sum", "/tmp/up.bin"]);
      expect(sum.stdout.toString().split(" ")[0]).toBe(createHash("sha256").update(data).digest("hex"));
      const down = await kubectl(["cp", "web:/tmp/up.bin", join(dir, "down.bin")]);
      expect(down.code).toBe(0);
      expect(readFileSync(join(dir, "down.bin")).equals(data)).toBe(true);
      const page = await kubectl(["cp", "web:/srv/index.html", join(dir, "index.html")]);
      expect(page.code).toBe(0);
      expect(readFileSync(join(dir, "index.html"), "utf8")).toBe("hello-from-pod\n");
    });

    const portForward = async (env: Record<string, string>) => {
      const child = spawn("kubectl", ["port-forward", "pod/web", ":8080"], {
        env: { ...process.env, KUBECONFIG: join(dir, "kubeconfig"), ...env },
      });
      children.add(child);
      try {
        const port = await new Promise<number>((resolve, reject) => {
          let text = "";
          const timer = setTimeout(() => reject(new Error(`no forwarding line: ${text}`)), 30_000);
          child.stdout.on("data", (chunk: Buffer) => {
            text += chunk.toString();
            const m = /Forwarding from 127\.0\.0\.1:(\d+) -> 8080/.exec(text);
            if (m) {
              clearTimeout(timer);
              resolve(Number(m[1]));
            }
          });
          child.on("exit", (code) => reject(new Error(`kubectl port-forward exited with ${code}: ${text}`)));
        });
        for (let i = 0; i < 3; i++) {
          const response = await fetch(`http://127.0.0.1:${port}/index.html`);
          expect(response.status).toBe(200);
          expect(await response.text()).toBe("hello-from-pod\n");
        }
      } finally {
        child.kill("SIGTERM");
        children.delete(child);
      }
    };

    test("port-forward reaches the pod's server from a local port (SPDY tunnelled in a WebSocket)", async () => {
      await portForward({});
    });

    test("the SPDY fallbacks work too: exec and port-forward with kubectl's WebSockets switched off", async () => {
      const off = { KUBECTL_REMOTE_COMMAND_WEBSOCKETS: "false", KUBECTL_PORT_FORWARD_WEBSOCKETS: "false" };
      const result = await kubectl(
        ["exec", "-i", "web", "--", "sh", "-c", "cat; echo done >&2; exit 4"],
        "over spdy\n",
        off,
      );
      expect(result.code).toBe(4);
      expect(result.stdout.toString()).toBe("over spdy\n");
      expect(result.stderr).toContain("done");
      await portForward(off);
    });

    test("logs shows the container's output", async () => {
      const logs = await kubectl(["logs", "web"]);
      expect(logs.code).toBe(0);
      expect(logs.stdout.toString()).toBe("ready\n");
    });

    test("delete removes the pod, and its backend container goes with it", async () => {
      const deleted = await kubectl(["delete", "pod", "web"]);
      expect(deleted.code).toBe(0);
      expect(deleted.stdout.toString()).toContain('pod "web" deleted');
      const after = await kubectl(["get", "pods"]);
      expect(after.stderr).toContain("No resources found");
      expect(emulator.machines).toBe(0);
    });

    test("a pod whose image cannot be pulled shows ErrImagePull or ImagePullBackOff, and exec into it is refused", async () => {
      await kubectl(["run", "broken", "--image", "sbox-no-such-image:1", "--", "sleep", "100"]);
      let status = "";
      for (let i = 0; i < 50 && !/ErrImagePull|ImagePullBackOff/.test(status); i++) {
        status = (
          await kubectl([
            "get",
            "pod",
            "broken",
            "-o",
            "jsonpath={.status.containerStatuses[0].state.waiting.reason}",
          ])
        ).stdout.toString();
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      expect(status).toMatch(/ErrImagePull|ImagePullBackOff/);
      const exec = await kubectl(["exec", "broken", "--", "true"]);
      expect(exec.code).not.toBe(0);
      const deleted = await kubectl(["delete", "pod", "broken", "--wait=true"]);
      expect(deleted.code).toBe(0);
      expect(emulator.podNames()).toEqual([]);
    });
  },
);
