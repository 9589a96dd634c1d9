import { readFileSync } from "node:fs";

/** The user every sandboxed command runs as, inside its user namespace. */
export const SANDBOX_USER = { name: "user", uid: 1000, gid: 1000, home: "/home/user" } as const;

/** Used when the host program is root and `/etc/subuid` reserves nothing for root (far above what useradd hands out (SUB_UID_MAX is 600100000)). */
const DEFAULT_ROOT_SUBORDINATE_ID = 2_147_000_000;

/** Who the host program is, and which host ids the sandbox user is mapped to. */
export interface HostIdentity {
  /** The host program runs as uid 0. */
  readonly root: boolean;
  readonly uid: number;
  readonly gid: number;
  /**
   * Host uid and gid behind the sandbox user. Root maps it to a subordinate id (never 0: a process that is
   * host root, even without capabilities, owns `/proc/sys` and `/proc/sysrq-trigger`); any other user can
   * only map its own id.
   */
  readonly sandboxUid: number;
  readonly sandboxGid: number;
}

/** The first subordinate id `/etc/subuid` (or subgid) gives root, if any. */
function subordinateStart(file: string): number | undefined {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return undefined;
  }
  for (const line of text.split("\n")) {
    const [owner, start, count] = line.trim().split(":");
    if ((owner === "root" || owner === "0") && Number(count) > 0 && Number.isInteger(Number(start))) {
      return Number(start);
    }
  }
  return undefined;
}

let cached: HostIdentity | undefined;

/** The identity of this host program (read once: it does not change while it runs). */
export function hostIdentity(): HostIdentity {
  if (cached) return cached;
  const uid = typeof process.getuid === "function" ? process.getuid() : 0;
  const gid = typeof process.getgid === "function" ? process.getgid() : 0;
  const root = uid === 0;
  cached = {
    root,
    uid,
    gid,
    sandboxUid: root ? (subordinateStart("/etc/subuid") ?? DEFAULT_ROOT_SUBORDINATE_ID) : uid,
    sandboxGid: root ? (subordinateStart("/etc/subgid") ?? DEFAULT_ROOT_SUBORDINATE_ID) : gid,
  };
  return cached;
}

/** `/etc/passwd` inside a sandbox: root, the sandbox user and nobody, nothing of the host's accounts. */
export function sandboxPasswd(): string {
  const { name, uid, gid, home } = SANDBOX_USER;
  return [
    "root:x:0:0:root:/root:/bin/sh",
    `${name}:x:${uid}:${gid}:${name}:${home}:/bin/sh`,
    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin",
    "",
  ].join("\n");
}

/** `/etc/group` inside a sandbox. */
export function sandboxGroup(): string {
  const { name, gid } = SANDBOX_USER;
  return ["root:x:0:", `${name}:x:${gid}:`, "nogroup:x:65534:", ""].join("\n");
}
