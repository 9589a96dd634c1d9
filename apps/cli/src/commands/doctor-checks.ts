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

/** GET `path` of a Docker Engine over its socket or tcp address; the body on 200, else an error. */
function engineGet(
  options: { socketPath?: string; host?: string; port?: number },
  path: string,
  timeoutMs: number,
): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ ...options, path, method: "GET", timeout: timeoutMs }, (res) => {
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

/** The engine address of `DOCKER_HOST` or the local socket, as `engineGet` takes it (undefined for ssh://). */
function engineAddress(host: string): { socketPath?: string; host?: string; port?: number } | undefined {
  if (host.startsWith("unix://")) return { socketPath: host.slice("unix://".length) };
  if (host.startsWith("tcp://") || host.startsWith("http://")) {
    const url = new URL(host.replace(/^tcp:/, "http:"));
    return { host: url.hostname, port: Number(url.port || 2375) };
  }
  return undefined;
}

function dockerHost(env: Readonly<Record<string, string | undefined>>): string {
  return env.DOCKER_HOST?.trim() || "unix:///var/run/docker.sock";
}

/** Does a Docker Engine answer, at `DOCKER_HOST` or the local socket? (`docker info` for ssh:// hosts.) */
export async function checkDockerEngine(
  env: Readonly<Record<string, string | undefined>>,
): Promise<DoctorCheck> {
  const host = dockerHost(env);
  const shown = redactSecrets(host);
  const fix =
    "start the Docker daemon (dockerd / systemctl start docker) or point DOCKER_HOST at a running engine";
  try {
    const address = engineAddress(host);
    if (address) {
      await engineGet(address, "/_ping", 3000);
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

/** The images the engine has, by `repository:tag` (dangling ones left out), sorted. */
export async function localDockerImages(
  env: Readonly<Record<string, string | undefined>>,
): Promise<string[]> {
  const address = engineAddress(dockerHost(env));
  let tags: string[];
  if (address) {
    const images = JSON.parse(await engineGet(address, "/images/json", 5000)) as {
      RepoTags?: string[] | null;
    }[];
    tags = images.flatMap((image) => image.RepoTags ?? []);
  } else {
    const listed = await run("docker", ["images", "--format", "{{.Repository}}:{{.Tag}}"], 15_000);
    if (!listed.ok) throw new Error(listed.output.split("\n")[0]);
    tags = listed.output.split("\n");
  }
  return [...new Set(tags.filter((tag) => tag !== "" && !tag.includes("<none>")))].sort();
}

/**
 * Is the image docker sandboxes start from (when `-t` names none) on the engine, and which images are?
 * Without a registry a missing default image means every `sbox create -p docker` without `-t` fails.
 */
export async function checkDockerImages(
  env: Readonly<Record<string, string | undefined>>,
  defaultImage: { image: string; from: string },
): Promise<DoctorCheck> {
  let images: string[];
  try {
    images = await localDockerImages(env);
  } catch (error) {
    return {
      name: "docker images",
      ok: false,
      required: false,
      detail: `could not list the engine's images: ${(error as Error).message}`,
    };
  }
  const present = images.includes(defaultImage.image) || images.includes(`${defaultImage.image}:latest`);
  const list = images.length === 0 ? "none" : images.join(", ");
  if (present) {
    return {
      name: "docker images",
      ok: true,
      required: false,
      detail: `default image ${defaultImage.image} (${defaultImage.from}) is on the engine; local images: ${list}`,
    };
  }
  return {
    name: "docker images",
    ok: false,
    required: false,
    detail: `default image ${defaultImage.image} (${defaultImage.from}) is not on the engine and would be pulled; local images: ${list}`,
    fix:
      images.length > 0
        ? `use a local one: sbox create -p docker -t ${images[0]}, SBOX_DOCKER_IMAGE=${images[0]}, or "image" under providers.docker in $SBOX_HOME/config.json`
        : "build or load an image (docker build / docker load), then name it with -t or SBOX_DOCKER_IMAGE",
  };
}
