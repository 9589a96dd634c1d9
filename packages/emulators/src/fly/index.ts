/**
 * `@sbox/emulators/fly`: an offline Fly Machines API — apps, machines with their states, leases, exec with
 * Fly's limits, `/wait` — that fly-go and sbox's provider-fly use as they use api.machines.dev, with every
 * machine a real sandbox of an sbox backend.
 */

export type { FlyEmulator, FlyEmulatorOptions } from "./fly-emulator.js";
export { FLY_DOCKER_DEFAULT_IMAGE, startFlyEmulator } from "./fly-emulator.js";
export { FLY_EXEC_LIMIT_SECONDS } from "./fly-exec.js";
export type { FlyImageMap } from "./fly-machine.js";
