export type { DockerCapabilities, DockerHonouredField } from "./docker-capabilities.js";
export { dockerCapabilities, dockerFlags, dockerHonours } from "./docker-capabilities.js";
export { toDockerError } from "./docker-errors.js";
export type { DockerProviderOptions } from "./docker-options.js";
export { DEFAULT_IMAGE, DEFAULT_IMAGE_ENV } from "./docker-options.js";
export type { DockerProvider, DockerSandboxNative } from "./docker-provider.js";
export { docker } from "./docker-provider.js";
