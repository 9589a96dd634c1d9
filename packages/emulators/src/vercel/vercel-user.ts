/**
 * Who runs a session's commands and file calls. On Vercel everything runs as the user `vercel-sandbox`,
 * which has password-less sudo; a command sent with `sudo: true` runs as root, with the environment sudo
 * gives (`USER=root`, `HOME=/root`, `SUDO_USER`...) plus the request's variables.
 *
 * The emulator gives the same where the backend can: when its machines run as root and the image has the
 * `vercel-sandbox` account (the docker backend on `sbox-vercel-base`, scripts/build-vercel-base-image.sh),
 * commands and file calls drop to that user with `setpriv` (real uid, gid and supplementary groups, looked
 * up when each one starts, so a `usermod -aG` counts from the next command), and `sudo: true` commands stay
 * root. Elsewhere (provider-local's unprivileged user, an image without the account) everything runs as the
 * backend's own user and `sudo: true` changes nothing; the layout says which one a session got.
 */
import type { AnyCapabilities, Sandbox } from "@sbox/core";
import { SANDBOX_CWD } from "./vercel-limits.js";

/** Vercel's default user. */
export const VERCEL_DEFAULT_USER = "vercel-sandbox";

/** An account of the guest, as its `/etc/passwd` says. */
export interface VercelGuestUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

/** How a session's machine is laid out. */
export interface VercelLayout {
  /** The working directory (`/vercel/sandbox`, or the backend's own where `/` is read-only). */
  readonly cwd: string;
  /** The user commands run as, when the machine can switch to it; `undefined`: the backend's user. */
  readonly user?: VercelGuestUser | undefined;
  /** True when `env --default-signal` is there to give commands SIGINT and SIGQUIT back (see below). */
  readonly resetsSignals?: boolean | undefined;
}

/** One shell run at boot: makes the workdir, reports it and the default user when root can become it. */
const LAYOUT_PROBE = `mkdir -p ${SANDBOX_CWD} 2>/dev/null; cd ${SANDBOX_CWD} 2>/dev/null; echo "cwd=$(pwd)"
env --default-signal=INT,QUIT true 2>/dev/null && echo "signals=1"
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null 2>&1; then
  e=$(getent passwd ${VERCEL_DEFAULT_USER} 2>/dev/null) && echo "user=$e"
fi
true`;

/** Reads the layout of a freshly booted machine. */
export async function probeLayout(machine: Sandbox<AnyCapabilities>): Promise<VercelLayout> {
  const probe = await machine.commands.run(["sh", "-c", LAYOUT_PROBE]);
  const facts = new Map<string, string>();
  for (const line of probe.stdout.split("\n")) {
    const at = line.indexOf("=");
    if (at > 0) facts.set(line.slice(0, at), line.slice(at + 1));
  }
  const cwd = facts.get("cwd")?.trim() || SANDBOX_CWD;
  const base = { cwd, resetsSignals: facts.get("signals") === "1" };
  const fields = facts.get("user")?.split(":");
  if (!fields || fields.length < 7) return base;
  const [name, , uid, gid, , home] = fields;
  if (name !== VERCEL_DEFAULT_USER || !/^\d+$/.test(uid ?? "") || !/^\d+$/.test(gid ?? "")) return base;
  return { ...base, user: { name, uid: Number(uid), gid: Number(gid), home: home || `/home/${name}` } };
}

/** The argv prefix that runs what follows as `user` (uid, gid and the user's groups). */
function dropTo(user: VercelGuestUser): string[] {
  return ["setpriv", `--reuid=${user.uid}`, `--regid=${user.gid}`, "--init-groups", "--"];
}

/** The environment a login of `user` has. */
function userEnv(user: VercelGuestUser): Record<string, string> {
  return { HOME: user.home, USER: user.name, LOGNAME: user.name };
}

/**
 * The argv and environment that run a command of the API as the session's user would: as the default
 * user, or as root with sudo's environment when `sudo` is set. The request's variables win over both.
 */
export function launchOf(
  layout: VercelLayout,
  request: {
    readonly command: string;
    readonly args: readonly string[];
    readonly env: Readonly<Record<string, string>>;
    readonly sudo: boolean;
  },
): { argv: string[]; env: Record<string, string> } {
  // A backend that starts commands in the background of a shell (provider-docker's detached runner) hands
  // them SIGINT and SIGQUIT ignored, as POSIX shells do for `&` jobs; the service's commands take both, so
  // they are reset to their defaults where `env` can (a command named NAME=VALUE would be read as a variable
  // by env, so it goes as it is).
  const reset = layout.resetsSignals === true && !request.command.includes("=");
  const argv = [...(reset ? ["env", "--default-signal=INT,QUIT"] : []), request.command, ...request.args];
  const user = layout.user;
  if (!user) return { argv, env: { ...request.env } };
  if (request.sudo) {
    const env = {
      HOME: "/root",
      USER: "root",
      LOGNAME: "root",
      SUDO_USER: user.name,
      SUDO_UID: String(user.uid),
      SUDO_GID: String(user.gid),
      SUDO_COMMAND: [request.command, ...request.args].join(" ").slice(0, 4096),
    };
    return { argv, env: { ...env, ...request.env } };
  }
  return { argv: [...dropTo(user), ...argv], env: { ...userEnv(user), ...request.env } };
}

/**
 * Runs a small shell script as the session's user (for the file API's checks); `undefined` when the
 * session has no user to switch to (everything is the backend's user then, nothing to check).
 */
export async function runAsUser(
  machine: Sandbox<AnyCapabilities>,
  layout: VercelLayout,
  script: string,
  args: readonly string[],
): Promise<{ exitCode: number; stderr: string } | undefined> {
  const user = layout.user;
  if (!user) return undefined;
  const result = await machine.commands.run([...dropTo(user), "sh", "-c", script, "sh", ...args], {
    env: userEnv(user),
  });
  return { exitCode: result.exitCode, stderr: result.stderr };
}

/** Makes `paths` owned by the session's user (files the file API wrote as root on its behalf). */
export async function chownToUser(
  machine: Sandbox<AnyCapabilities>,
  layout: VercelLayout,
  paths: readonly string[],
): Promise<void> {
  const user = layout.user;
  if (!user || paths.length === 0) return;
  const result = await machine.commands.run(["chown", "-h", `${user.uid}:${user.gid}`, "--", ...paths]);
  if (result.exitCode !== 0) throw new Error(`chown failed: ${result.stderr.trim()}`);
}
