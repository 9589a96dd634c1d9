import type { SandboxState } from "@sbox/core/spec";
import type { FlyMachineStateName } from "./fly-api-types.js";

/**
 * Maps a Fly Machine state (https://fly.io/docs/machines/machine-states/) to the sandbox state. `created`
 * is a machine that was never started (persistent, like stopped: `resume()` starts it); transitions count
 * as the state they lead to, except boots, which are `starting`.
 */
export function sandboxStateOf(state: FlyMachineStateName | undefined): SandboxState {
  switch (state) {
    case "started":
      return "running";
    case "creating":
    case "starting":
    case "restarting":
    case "updating":
    case "replacing":
      return "starting";
    case "created":
    case "stopping":
    case "stopped":
      return "stopped";
    case "suspending":
    case "suspended":
      return "paused";
    case "destroying":
    case "destroyed":
      return "destroyed";
    case "failed":
    case "launch_failed":
      return "error";
    default:
      return "unknown";
  }
}
