import type { SandboxState } from "@sbox/core/spec";

/**
 * sbox's state of a Daytona sandbox state (the API's `SandboxState`). Transitional states report where the
 * sandbox is heading as Daytona's SDK waits on them: booting ones are `starting`; stopping, archiving and
 * archived ones keep their files and run nothing (`stopped`); pausing and paused are `paused`.
 */
export function sandboxStateOf(state: string | undefined): SandboxState {
  switch (state) {
    case "started":
      return "running";
    case "creating":
    case "starting":
    case "restoring":
    case "pulling_snapshot":
    case "pending_build":
    case "building_snapshot":
    case "resuming":
    case "resizing":
    case "snapshotting":
    case "forking":
      return "starting";
    case "stopping":
    case "stopped":
    case "archiving":
    case "archived":
      return "stopped";
    case "pausing":
    case "paused":
      return "paused";
    case "destroying":
    case "destroyed":
      return "destroyed";
    case "error":
    case "build_failed":
      return "error";
    default:
      return "unknown";
  }
}
