/**
 * `@sbox/emulators/kubernetes`: an offline Kubernetes API server — discovery, pods with exec, attach,
 * port-forward and logs, services, network policies that really restrict egress, and
 * kubernetes-sigs/agent-sandbox's Sandbox, SandboxTemplate, SandboxWarmPool and SandboxClaim with a small
 * controller — that kubectl and `@kubernetes/client-node` use through the kubeconfig it prints, with every
 * pod a real sandbox of an sbox backend.
 */

export type { EmulatorCertificate } from "./kubernetes-certificate.js";
export { selfSignedCertificate } from "./kubernetes-certificate.js";
export { EMULATED_KUBERNETES_VERSION } from "./kubernetes-discovery.js";
export type { KubernetesEmulator, KubernetesEmulatorOptions } from "./kubernetes-emulator.js";
export { KUBERNETES_DOCKER_DEFAULT_IMAGE, startKubernetesEmulator } from "./kubernetes-emulator.js";
export type { KubernetesImage, KubernetesImageMap } from "./kubernetes-kubelet.js";
