export type {
  KubernetesAgentSandboxCapabilities,
  KubernetesCapabilities,
} from "./kubernetes-capabilities.js";
export {
  kubernetesAgentSandboxCapabilities,
  kubernetesAgentSandboxFlags,
  kubernetesCapabilities,
  kubernetesFlags,
  kubernetesHonours,
} from "./kubernetes-capabilities.js";
export { toKubernetesError } from "./kubernetes-errors.js";
export { PROVIDER_NAME } from "./kubernetes-names.js";
export type { KubernetesPortMode, KubernetesProviderOptions } from "./kubernetes-options.js";
export { DEFAULT_IMAGE } from "./kubernetes-options.js";
export type { KubernetesProvider } from "./kubernetes-provider.js";
export { kubernetes } from "./kubernetes-provider.js";
export type { KubernetesSandboxNative } from "./kubernetes-sandboxes.js";
