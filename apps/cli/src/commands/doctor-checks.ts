import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, mkdir } from "node:fs/promises";
import { request } from "node:http";
import { homedir } from "node:os";
import { join } from "node:path";
import { redactSecrets } from "@sbox/core";

/** One check of `sbox doctor`. */
export interface DoctorCheck {
  /** What was checked, e.g. "bwrap", "E2B_API_KEY". */
  readonly name: string;
  readonly ok: boolean;
  /** What was found. */
  readonly detail: string;
  /** How to fix it, when not ok. */
  readonly fix?: string | undefined;
  /** Without it the provider does not work (otherwise it only works less well). */
  readonly required: boolean;
}

function run(
  file: string,
  args: readonly string[],
  timeoutMs: number,
): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile(file, [...args], { timeout: timeoutMs, encoding: "utf8" }, (error, stdout, stderr) => {
      const output = `${stdout}${stderr}`.trim();
      resolve({ ok: !error, output: output || (error ? error.message : "") });
    });
  });
}

/** Is bubblewrap installed, and can it actually create a sandbox here (user namespaces allowed)? */
export async function checkBwrap(): Promise<DoctorCheck> {
  const version = await run("bwrap", ["--version"], 5000);
  if (!version.ok) {
    return {
      name: "bwrap",
      ok: false,
      required: false,
      detail: "bubblewrap is not installed: local sandboxes run without isolation",
      fix: "install it: apt-get install bubblewrap (Debian/Ubuntu), dnf install bubblewrap (Fedora)",
    };
  }
  const trial = await run("bwrap", ["--ro-bind", "/", "/", "--dev", "/dev", "--unshare-pid", "true"], 5000);
  if (!trial.ok) {
    return {
      name: "bwrap",
      ok: false,
      required: false,
      detail: `${version.output} is installed but cannot create a sandbox: ${trial.output.split("\n")[0]}`,
      fix: "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1) or run where they are allowed",
    };
  }
  return { name: "bwrap", ok: true, required: false, detail: `${version.output}: isolation available` };
}

/** The state root of sbox: `$SBOX_HOME` or `~/.sbox`. */
export function sboxHome(env: Readonly<Record<string, string | undefined>>): string {
  return env.SBOX_HOME && env.SBOX_HOME.trim() !== "" ? env.SBOX_HOME : join(homedir(), ".sbox");
}

/** Can sbox keep its state (local sandboxes, records) under the state root? */
export async function checkStateRoot(
  env: Readonly<Record<string, string | undefined>>,
): Promise<DoctorCheck> {
  const root = sboxHome(env);
  try {
    await mkdir(root, { recursive: true });
    await access(root, constants.W_OK);
    return { name: "SBOX_HOME", ok: true, required: true, detail: `state root ${root} is writable` };
  } catch (error) {
    return {
      name: "SBOX_HOME",
      ok: false,
      required: true,
      detail: `state root ${root} is not writable: ${(error as Error).message}`,
      fix: "set SBOX_HOME to a writable directory",
    };
  }
}

function ping(
  options: { socketPath?: string; host?: string; port?: number },
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ ...options, path: "/_ping", method: "GET", timeout: timeoutMs }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () =>
        res.statusCode === 200
          ? resolve(body.trim())
          : reject(new Error(`HTTP ${res.statusCode}: ${body.trim()}`)),
      );
    });
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", reject);
    req.end();
  });
}

/** Does a Docker Engine answer, at `DOCKER_HOST` or the local socket? (`docker info` for ssh:// hosts.) */
export async function checkDockerEngine(
  env: Readonly<Record<string, string | undefined>>,
): Promise<DoctorCheck> {
  const host = env.DOCKER_HOST?.trim() || "unix:///var/run/docker.sock";
  const shown = redactSecrets(host);
  const fix =
    "start the Docker daemon (dockerd / systemctl start docker) or point DOCKER_HOST at a running engine";
  try {
    if (host.startsWith("unix://")) {
      await ping({ socketPath: host.slice("unix://".length) }, 3000);
    } else if (host.startsWith("tcp://") || host.startsWith("http://")) {
      const url = new URL(host.replace(/^tcp:/, "http:"));
      await ping({ host: url.hostname, port: Number(url.port || 2375) }, 3000);
    } else {
      const info = await run("docker", ["info", "--format", "{{.ServerVersion}}"], 10_000);
      if (!info.ok) throw new Error(info.output.split("\n")[0]);
    }
    return { name: "docker engine", ok: true, required: true, detail: `a Docker Engine answers at ${shown}` };
  } catch (error) {
    return {
      name: "docker engine",
      ok: false,
      required: true,
      detail: `no Docker Engine at ${shown}: ${(error as Error).message}`,
      fix,
    };
  }
}
