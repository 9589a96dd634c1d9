/** `@sbox/emulators/daytona`: an offline Daytona (control plane and toolbox) for `@daytonaio/sdk`. */

export type { DaytonaEmulator, DaytonaEmulatorOptions } from "./daytona-emulator.js";
export {
  DAYTONA_DEFAULT_IMAGES,
  DAYTONA_DOCKER_DEFAULT_IMAGE,
  startDaytonaEmulator,
} from "./daytona-emulator.js";
export type { DaytonaSandboxRecord, DaytonaState } from "./daytona-fleet.js";
