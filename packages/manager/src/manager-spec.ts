import type { SandboxSpec } from "@sbox/core/spec";

/** Credentials for an HTTP(S) git remote. Used for the clone only: never stored, never logged. */
export interface GitCredentials {
  /** Defaults to `"x-access-token"`, which GitHub, GitLab and Gitea accept with a token as password. */
  username?: string | undefined;
  /** A password or access token. */
  password?: string | undefined;
  /** Alias of `password`, for access tokens. */
  token?: string | undefined;
}

/** A repository to check out before setup runs. */
export interface GitSource {
  /** `https://`, `http://`, `ssh://`, `git://`, `file://` or scp-like `user@host:path`. Userinfo in an
   * http(s) URL is moved to `credentials`. */
  url: string;
  /** Branch, tag or full commit id; the remote's default branch when omitted. */
  ref?: string | undefined;
  /** Shallow clone with this many commits (not with a commit-id `ref`). */
  depth?: number | undefined;
  /** Checkout directory, relative to the sandbox workdir (default `"repo"`). */
  dir?: string | undefined;
  credentials?: GitCredentials | undefined;
}

/** A command the manager runs: a shell snippet, or argv run without a shell. */
export type ManagedCommand = string | readonly string[];

/** One setup step; a bare string is `{ run: string }`. */
export interface SetupStep {
  /** Shown in errors and history; defaults to the command. */
  name?: string | undefined;
  run: ManagedCommand;
  /** Relative to the sandbox workdir; defaults to the checkout directory when `git` is set. */
  cwd?: string | undefined;
  env?: Readonly<Record<string, string>> | undefined;
  /** Fails the step (and the create) when it runs longer (default 10 minutes). */
  timeoutMs?: number | undefined;
}

/** The sandbox's main process: started detached after setup, its output kept in a log file, restarted by `resume`. */
export interface StartCommand {
  run: ManagedCommand;
  /** Relative to the sandbox workdir; defaults to the checkout directory when `git` is set. */
  cwd?: string | undefined;
  env?: Readonly<Record<string, string>> | undefined;
}

/** A file to place into the sandbox after the checkout and before setup. */
export interface SeedFile {
  /** Absolute, or relative to the sandbox workdir. */
  path: string;
  content: string | Uint8Array;
  mode?: number | undefined;
}

/**
 * What `SandboxManager.create` makes: a sandbox spec plus a checkout, setup steps, a main process, ports
 * and files. `ttlMs` is enforced by the manager (`stopExpired`), not handed to the provider.
 */
export interface ManagerSpec extends Omit<SandboxSpec, "signal" | "idempotencyKey"> {
  git?: GitSource | undefined;
  /** Run in order after the checkout and the files; the first non-zero exit marks the record `failed`. */
  setup?: readonly (ManagedCommand | SetupStep)[] | undefined;
  /** The main process: a shell snippet, an argv, or `{ run, cwd?, env? }`. */
  start?: ManagedCommand | StartCommand | undefined;
  /** Files to seed. Only their paths, sizes and modes are stored in the record. */
  files?: readonly SeedFile[] | undefined;
}

/** A seed file as stored in a record: its content is not kept. */
export interface StoredSeedFile {
  path: string;
  size: number;
  mode?: number | undefined;
}

/** A spec as a record keeps it: no git credentials, no file contents. */
export interface StoredSpec extends Omit<ManagerSpec, "git" | "files"> {
  git?: (Omit<GitSource, "credentials"> & { authenticated: boolean }) | undefined;
  files?: readonly StoredSeedFile[] | undefined;
}
