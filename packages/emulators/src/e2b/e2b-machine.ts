/**
 * The backend sandbox behind one emulated E2B sandbox, laid out as E2B's base template is: a user `user`
 * (uid 1000) whose home `/home/user` is the default working directory, with password-less `sudo` where the
 * image has sudo. The layout is made through the backend's own exec as its default user; when that user
 * cannot create accounts (provider-local today: root without capabilities on a read-only host view), the
 * machine keeps the backend's user and working directory and says so in `layout.template` — the emulator
 * never fakes a path or an owner.
 *
 * Every envd file operation goes through {@link E2BMachine.helper}: the helper program runs inside the
 * sandbox (as root where the backend allows, chowning to the requesting user like envd does).
 */
import type { AnyCapabilities, Sandbox } from "@sbox/core";
import { SandboxError, shellQuote } from "@sbox/core/spec";
import { type ConnectCode, ConnectFailure } from "./e2b-connect-protocol.js";
import { ENVD_HELPER_SOURCE } from "./e2b-envd-helper.js";
import {
  SUPERVISOR_BOOT,
  SUPERVISOR_ENV,
  SUPERVISOR_SOURCE,
  SUPERVISOR_SOURCE_ENV,
} from "./e2b-envd-supervisor.js";

/** A user account of the sandbox, as `/etc/passwd` inside it says. */
export interface E2BUser {
  readonly name: string;
  readonly uid: number;
  readonly gid: number;
  readonly home: string;
}

/** How the machine ended up laid out. */
export interface E2BMachineLayout {
  /** The user commands and file operations default to (`user` on a faithful layout). */
  readonly defaultUser: string;
  /** True when the helper runs as uid 0 (it can create directories anywhere and chown them). */
  readonly root: boolean;
  /** True when commands can run as another user than the backend's (uid 0 allowed to change its ids). */
  readonly canSwitchUser: boolean;
  /** `e2b-base` when `user` exists with its home; `backend` when the backend's own user and workdir are kept. */
  readonly template: "e2b-base" | "backend";
  /** The backend user's name and working directory (what the fallback layout uses). */
  readonly backendUser: string;
  readonly backendWorkdir: string;
}

/** E2B's default user. */
export const E2B_DEFAULT_USER = "user";

const LAYOUT_SCRIPT = `u=${E2B_DEFAULT_USER}
if [ "$(id -u)" = 0 ] && ! id -u "$u" >/dev/null 2>&1 && command -v useradd >/dev/null 2>&1; then
  useradd -m -u 1000 -U -s /bin/bash "$u" >/dev/null 2>&1 || useradd -m -U -s /bin/sh "$u" >/dev/null 2>&1 || true
fi
if [ "$(id -u)" = 0 ] && id -u "$u" >/dev/null 2>&1 && [ -d /etc/sudoers.d ] && command -v sudo >/dev/null 2>&1 && [ ! -e /etc/sudoers.d/90-e2b-user ]; then
  { echo "$u ALL=(ALL:ALL) NOPASSWD: ALL" > /etc/sudoers.d/90-e2b-user && chmod 440 /etc/sudoers.d/90-e2b-user; } 2>/dev/null || true
fi
echo "uid=$(id -u)"
echo "name=$(id -un 2>/dev/null)"
echo "pwd=$(pwd)"
if id -u "$u" >/dev/null 2>&1; then h=$(getent passwd "$u" 2>/dev/null | cut -d: -f6); [ -n "$h" ] && [ -d "$h" ] && echo "e2buser=1"; fi
command -v python3 >/dev/null 2>&1 && echo "python=1"
if [ "$(id -u)" = 0 ] && id -u "$u" >/dev/null 2>&1 && python3 -c 'import os, pwd, sys; p = pwd.getpwnam(sys.argv[1]); os.initgroups(p.pw_name, p.pw_gid); os.setgid(p.pw_gid); os.setuid(p.pw_uid)' "$u" 2>/dev/null; then echo "switch=1"; fi
true`;

const HELPER_SOURCE_ENV = "E2B_EMULATOR_HELPER";
const HELPER_BOOT = `import os; exec(os.environ.pop("${HELPER_SOURCE_ENV}"))`;
const HELPER_ENV: Readonly<Record<string, string>> = { [HELPER_SOURCE_ENV]: ENVD_HELPER_SOURCE };

/** A helper failure, as the helper reported it. */
interface HelperError {
  code: string;
  message: string;
}

/** Connect codes the helper may name; anything else is `internal`. */
const HELPER_CONNECT_CODES = new Set<string>([
  "not_found",
  "already_exists",
  "invalid_argument",
  "failed_precondition",
  "internal",
  "permission_denied",
]);

/** A helper error as a Connect failure. */
export class HelperFailure extends ConnectFailure {
  constructor(
    readonly helperCode: string,
    message: string,
  ) {
    super(HELPER_CONNECT_CODES.has(helperCode) ? (helperCode as ConnectCode) : "internal", message);
  }
}

function parseLine(line: string): { ok?: unknown; err?: HelperError } {
  try {
    return JSON.parse(line) as { ok?: unknown; err?: HelperError };
  } catch {
    throw new ConnectFailure(
      "internal",
      `the envd helper answered something unreadable: ${line.slice(0, 200)}`,
    );
  }
}

/** One emulated E2B sandbox's backend sandbox, with its layout and users. */
export class E2BMachine {
  private users: Map<string, E2BUser> = new Map();

  private constructor(
    readonly sandbox: Sandbox<AnyCapabilities>,
    readonly layout: E2BMachineLayout,
  ) {}

  /** Lays a fresh backend sandbox out as E2B's base template and reads its users. */
  static async open(sandbox: Sandbox<AnyCapabilities>): Promise<E2BMachine> {
    const probe = await sandbox.commands.run(["sh", "-c", LAYOUT_SCRIPT], { timeoutMs: 60_000 });
    const facts = new Map<string, string>();
    for (const line of probe.stdout.split("\n")) {
      const at = line.indexOf("=");
      if (at > 0) facts.set(line.slice(0, at), line.slice(at + 1));
    }
    if (facts.get("python") !== "1") {
      throw new SandboxError(
        "Provider",
        "the E2B emulator needs python3 in the sandbox image (E2B's base template has it); this backend's sandbox has none",
        { retryable: false },
      );
    }
    const hasUser = facts.get("e2buser") === "1";
    const backendUser = facts.get("name") || "root";
    const layout: E2BMachineLayout = {
      defaultUser: hasUser ? E2B_DEFAULT_USER : backendUser,
      root: facts.get("uid") === "0",
      canSwitchUser: facts.get("switch") === "1",
      template: hasUser ? "e2b-base" : "backend",
      backendUser,
      backendWorkdir: facts.get("pwd") || "/",
    };
    const machine = new E2BMachine(sandbox, layout);
    await machine.refreshUsers();
    return machine;
  }

  /** Re-reads `/etc/passwd` inside the sandbox. */
  async refreshUsers(): Promise<void> {
    const rows = (await this.helper("users", {})) as [string, number, number, string][];
    const users = new Map<string, E2BUser>();
    for (const [name, uid, gid, home] of rows) users.set(name, { name, uid, gid, home });
    if (this.layout.template === "backend") {
      // The backend's user keeps the backend's working directory as its home: its passwd home may be a
      // read-only host directory.
      const own = users.get(this.layout.backendUser);
      users.set(this.layout.backendUser, {
        name: this.layout.backendUser,
        uid: own?.uid ?? 0,
        gid: own?.gid ?? 0,
        home: this.layout.backendWorkdir,
      });
    }
    this.users = users;
  }

  /** Looks a user up like envd's `user.Lookup` (re-reading the accounts once on a miss). */
  async user(name: string): Promise<E2BUser> {
    let found = this.users.get(name);
    if (!found) {
      await this.refreshUsers();
      found = this.users.get(name);
    }
    if (!found) {
      throw new ConnectFailure(
        "unauthenticated",
        `error looking up user '${name}': user: unknown user ${name}`,
      );
    }
    return found;
  }

  /** The user of a request: `Authorization: Basic base64("<name>:")`, else the default user. */
  async requestUser(authorization: string | undefined): Promise<E2BUser> {
    let name = this.layout.defaultUser;
    if (authorization?.startsWith("Basic ")) {
      const decoded = Buffer.from(authorization.slice(6), "base64").toString("utf8");
      const colon = decoded.indexOf(":");
      name = colon < 0 ? decoded : decoded.slice(0, colon);
    }
    return this.user(name);
  }

  /** Owner ids for files created for `user` (none when the helper cannot chown). */
  ownerOf(user: E2BUser): { uid?: number; gid?: number } {
    return this.layout.root ? { uid: user.uid, gid: user.gid } : {};
  }

  /** The helper's command; its source travels in the environment, so `ps` inside shows only its operation. */
  private helperArgv(op: string, args: unknown): string[] {
    return ["python3", "-c", HELPER_BOOT, op, JSON.stringify(args)];
  }

  private static failure(exitCode: number, stderr: string, op: string): ConnectFailure {
    return new ConnectFailure(
      "internal",
      `envd ${op} failed inside the sandbox (exit ${exitCode}): ${stderr.trim().slice(0, 500) || "no output"}`,
    );
  }

  /** Runs one helper operation and returns its `ok` value; a helper error throws a {@link HelperFailure}. */
  async helper(
    op: string,
    args: unknown,
    options: {
      stdin?: ReadableStream<Uint8Array> | Uint8Array | undefined;
      signal?: AbortSignal | undefined;
    } = {},
  ): Promise<unknown> {
    const result = await this.sandbox.commands.run(this.helperArgv(op, args), {
      env: HELPER_ENV,
      ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
    const line = result.stdout.split("\n", 1)[0] ?? "";
    if (result.exitCode !== 0 || line === "") throw E2BMachine.failure(result.exitCode, result.stderr, op);
    const parsed = parseLine(line);
    if (parsed.err) throw new HelperFailure(parsed.err.code, parsed.err.message);
    return parsed.ok;
  }

  /**
   * Runs a helper operation whose answer goes on after its first line (`read`, `watch`, `pack`): resolves
   * with the `ok` value once it is known and hands every later line to `onLine`; `done` settles when the
   * helper ends (or `signal` stops it).
   */
  async helperStream(
    op: string,
    args: unknown,
    options: {
      onLine(line: string): void;
      signal: AbortSignal;
      stdin?: ReadableStream<Uint8Array> | undefined;
    },
  ): Promise<{ ok: unknown; done: Promise<void> }> {
    let buffer = "";
    let header: ((value: { ok?: unknown; err?: HelperError }) => void) | undefined;
    let headerFailed: ((error: unknown) => void) | undefined;
    const first = new Promise<{ ok?: unknown; err?: HelperError }>((resolve, reject) => {
      header = resolve;
      headerFailed = reject;
    });
    let sawHeader = false;
    const take = (chunk: string) => {
      buffer += chunk;
      let at = buffer.indexOf("\n");
      while (at >= 0) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 1);
        if (!sawHeader) {
          sawHeader = true;
          try {
            header?.(parseLine(line));
          } catch (error) {
            headerFailed?.(error);
          }
        } else if (line !== "") {
          options.onLine(line);
        }
        at = buffer.indexOf("\n");
      }
    };
    const run = this.sandbox.commands.run(this.helperArgv(op, args), {
      env: HELPER_ENV,
      signal: options.signal,
      collectOutput: false,
      onStdout: take,
      ...(options.stdin === undefined ? {} : { stdin: options.stdin }),
    });
    const done = (async () => {
      const result = await run;
      if (buffer !== "" && sawHeader) options.onLine(buffer);
      if (!sawHeader) headerFailed?.(E2BMachine.failure(result.exitCode, result.stderr, op));
    })();
    done.catch((error: unknown) => headerFailed?.(error));
    const parsed = await first;
    if (parsed.err) {
      done.catch(() => undefined);
      throw new HelperFailure(parsed.err.code, parsed.err.message);
    }
    return { ok: parsed.ok, done };
  }

  /**
   * The argv and environment that run `argv` as `user` the way envd starts processes, under the
   * supervisor of `e2b-envd-supervisor.ts` (switched to `user` when the backend runs as root, stdin closed
   * unless it is wanted, `tty` for terminals).
   */
  commandFor(
    user: E2BUser,
    argv: readonly string[],
    options: { stdin: boolean; tty: boolean },
  ): { argv: string[]; env: Record<string, string> } {
    const spec: Record<string, unknown> = { argv, stdin: options.stdin, tty: options.tty };
    if (user.name !== this.layout.backendUser) {
      if (!this.layout.canSwitchUser) {
        throw new ConnectFailure(
          "permission_denied",
          `this sandbox's backend runs everything as ${this.layout.backendUser} and cannot switch to ${user.name}`,
        );
      }
      Object.assign(spec, { user: user.name, uid: user.uid, gid: user.gid });
    }
    return {
      argv: ["python3", "-c", SUPERVISOR_BOOT],
      env: { [SUPERVISOR_ENV]: JSON.stringify(spec), [SUPERVISOR_SOURCE_ENV]: SUPERVISOR_SOURCE },
    };
  }

  /** {@link commandFor} with the argv as one shell command line (terminals take one). */
  commandLineFor(
    user: E2BUser,
    argv: readonly string[],
    options: { stdin: boolean; tty: boolean },
  ): { command: string; env: Record<string, string> } {
    const { argv: line, env } = this.commandFor(user, argv, options);
    return { command: line.map(shellQuote).join(" "), env };
  }
}
