/**
 * The emulators `sbox emulate <vendor>` can start, each loaded only when chosen. A vendor added to this
 * package adds one entry here; the CLI lists and starts whatever is registered.
 */
import type { EmulatorBackendInput } from "./backend.js";

/** What every emulator's `start` resolves to. */
export interface RunningEmulator {
  /** The main URL (the API clients talk to). */
  readonly url: string;
  /** Exactly the environment variables the vendor's client needs. */
  readonly env: Readonly<Record<string, string>>;
  /** The backend provider machines run on. */
  readonly backend: string;
  /**
   * A configuration file the vendor's client reads instead of (or besides) variables — Kubernetes: a
   * kubeconfig — which `sbox emulate` prints.
   */
  readonly config?: { readonly name: string; readonly text: string } | undefined;
  /** Stops the emulator and destroys every machine it made. */
  close(): Promise<void>;
}

/** Options every emulator takes. */
export interface CommonEmulatorOptions {
  readonly backend?: EmulatorBackendInput | undefined;
  readonly port?: number | undefined;
  readonly host?: string | undefined;
}

/** One registered emulator. */
export interface EmulatorVendor {
  /** What it emulates, for `sbox emulate --help`. */
  readonly description: string;
  /** The client the printed variables are for. */
  readonly client: string;
  start(options: CommonEmulatorOptions): Promise<RunningEmulator>;
}

/** Every emulator of this package, by vendor name. */
export const EMULATORS: Readonly<Record<string, EmulatorVendor>> = {
  e2b: {
    description: "E2B: control plane, envd and the sandbox proxy",
    client: "the e2b SDK",
    async start(options) {
      const { startE2BEmulator } = await import("./e2b/e2b-emulator.js");
      return startE2BEmulator(options);
    },
  },
  fly: {
    description: "Fly Machines: the Machines API, leases, exec, /wait and a Fly Proxy stand-in",
    client: "fly-go, flyctl's Machines calls and @sbox/provider-fly",
    async start(options) {
      const { startFlyEmulator } = await import("./fly/fly-emulator.js");
      return startFlyEmulator(options);
    },
  },
  kubernetes: {
    description:
      "Kubernetes: an API server with one node (pods, exec, logs, port-forward, network policies, agent-sandbox CRDs)",
    client: "kubectl, client-go and @kubernetes/client-node (through the printed kubeconfig)",
    async start(options) {
      const { startKubernetesEmulator } = await import("./kubernetes/kubernetes-emulator.js");
      const emulator = await startKubernetesEmulator(options);
      return {
        url: emulator.url,
        env: emulator.env,
        backend: emulator.backend,
        config: { name: "kubeconfig", text: emulator.kubeconfig },
        close: () => emulator.close(),
      };
    },
  },
  vercel: {
    description:
      "Vercel Sandbox: sandboxes, sessions, commands with NDJSON logs, files, snapshots and port routes",
    client:
      "@vercel/sandbox (through a fetch that rewrites https://vercel.com/api) and @sbox/provider-vercel",
    async start(options) {
      const { startVercelEmulator } = await import("./vercel/vercel-emulator.js");
      return startVercelEmulator(options);
    },
  },
  daytona: {
    description: "Daytona: the control plane (sandboxes, states, auto-stop/archive/delete) and the toolbox",
    client: "@daytonaio/sdk and @sbox/provider-daytona",
    async start(options) {
      const { startDaytonaEmulator } = await import("./daytona/daytona-emulator.js");
      return startDaytonaEmulator(options);
    },
  },
};
