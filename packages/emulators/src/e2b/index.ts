/**
 * `@sbox/emulators/e2b`: an offline E2B — control plane, envd and the sandbox proxy — that the unmodified
 * `e2b` SDK uses as it uses e2b.app, with every sandbox a real sandbox of an sbox backend.
 */

export type { E2BEmulator, E2BEmulatorOptions, E2BSandboxRecord } from "./e2b-emulator.js";
export {
  E2B_DOCKER_BASE_IMAGE,
  E2B_EMULATED_ENVD_VERSION,
  E2B_EMULATOR_DOMAIN,
  startE2BEmulator,
} from "./e2b-emulator.js";
export type { E2BMachineLayout } from "./e2b-machine.js";
export type { E2BNetworkConfig } from "./e2b-network.js";
export type { E2BExtraTemplates } from "./e2b-templates.js";
