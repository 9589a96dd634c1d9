import { existsSync } from "node:fs";
import { join } from "node:path";
import type { LocalSandboxPaths } from "./local-state.js";

/**
 * Where the holder's own sandbox directory is bound in the holder's staging namespace: over `/dev/shm`, which
 * every Linux has and the holder's view never takes from the host (bubblewrap makes the sandbox's own).
 */
const STAGE = "/dev/shm";
const STAGED_DIR = `${STAGE}/sandbox`;

/**
 * Steps of the staging namespace (a private mount namespace made by `unshare` for the holder's start): the
 * sandbox's own directory, with its disk's mounts, bound at STAGED_DIR, then the state root (every
 * sandbox's mounts) detached, then the holder's bubblewrap. Arguments: the sandbox's directory, the state
 * root, then bubblewrap's argv.
 */
const STAGE_SCRIPT = [
  "set -e",
  `mount -t tmpfs -o mode=0700,size=64k sbox-stage ${STAGE}`,
  `mkdir ${STAGED_DIR}`,
  `mount --rbind "$1" ${STAGED_DIR}`,
  'umount -l "$2"',
  "shift 2",
  'exec "$@"',
].join("\n");

/** The holder's start, staged: the host paths its view binds from, and the programs it runs before bubblewrap. */
export interface HolderStage {
  readonly workspace: string;
  readonly tmp: string;
  readonly home: string;
  readonly etc: string;
  /** Put before bubblewrap's argv. */
  readonly launcher: readonly string[];
}

/**
 * How the holder of a sandbox with a disk image starts without the host's mount table. Every sandbox with a
 * disk holds four mounts below the state root, and each bubblewrap start copies the mount table and reads it
 * again for every bind of its view: with hundreds of them, a holder start takes several times as long
 * (measured here: 400 extra mounts, 14 ms → 48 ms per bubblewrap), and a hundred sandboxes starting at once
 * pay that a hundred times over. Staged, the holder's bubblewrap starts in a private mount namespace of its
 * own where the state root is detached and only its own sandbox's directory is left (bound at STAGED_DIR):
 * its start costs the same however many sandboxes there are. Only as root with mounts below the state root;
 * `undefined` otherwise (and where STAGE is missing or holds the state root).
 */
export function holderStage(
  paths: LocalSandboxPaths,
  stateRoot: string,
  unshare: string,
  staged: boolean,
): HolderStage | undefined {
  if (!staged || !existsSync(STAGE) || stateRoot === STAGE || stateRoot.startsWith(`${STAGE}/`))
    return undefined;
  const inStage = (path: string) => join(STAGED_DIR, path.slice(paths.dir.length));
  return {
    workspace: inStage(paths.workspace),
    tmp: inStage(paths.tmp),
    home: inStage(paths.home),
    etc: inStage(paths.etc),
    launcher: [
      unshare,
      "--mount",
      "--propagation",
      "private",
      "--",
      "/bin/sh",
      "-c",
      STAGE_SCRIPT,
      "sbox-stage",
      paths.dir,
      stateRoot,
    ],
  };
}
