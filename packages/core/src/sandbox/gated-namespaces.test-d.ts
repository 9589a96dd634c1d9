import { describe, expectTypeOf, test } from "vitest";
import type { CapabilityMap } from "../capabilities/capability-names.js";
import { createSandboxClient } from "../client/create-sandbox-client.js";
import type { SandboxProvider } from "../spec/provider-spec.js";
import type { CodeApi, PortsApi, PtyApi, Sandbox, SnapshotsApi } from "./sandbox-types.js";

const base = {
  list: "unsupported",
  stop: "unsupported",
  pause: "unsupported",
  setTimeout: "unsupported",
  streaming: "emulated",
  background: "emulated",
  killProcess: "emulated",
  stdin: "native",
  pty: "native",
  filesWatch: "emulated",
  filesUpload: "emulated",
  codeInterpreter: "unsupported",
  statefulKernel: "unsupported",
  exposePort: "unsupported",
  privatePreview: "unsupported",
  egressControl: "unsupported",
  ssh: "unsupported",
  proxiedFetch: "unsupported",
  snapshot: "unsupported",
  fork: "unsupported",
  volumes: "unsupported",
  gpu: "unsupported",
  region: "unsupported",
  secretsVault: "unsupported",
  metrics: "emulated",
} as const;

declare const ptyOnly: SandboxProvider<typeof base>;
declare const withPorts: SandboxProvider<Omit<typeof base, "exposePort"> & { readonly exposePort: "native" }>;
declare const unknownProvider: SandboxProvider<CapabilityMap>;

describe("gated namespaces follow the provider's literal capability map", () => {
  test("a native capability gives a defined namespace, an unsupported one gives undefined", async () => {
    const sandbox = await createSandboxClient({ provider: ptyOnly }).create();
    expectTypeOf(sandbox.pty).toEqualTypeOf<PtyApi>();
    expectTypeOf(sandbox.ports).toEqualTypeOf<undefined>();
    expectTypeOf(sandbox.snapshots).toEqualTypeOf<undefined>();
    expectTypeOf(sandbox.code).toEqualTypeOf<undefined>();
    // @ts-expect-error an unsupported namespace cannot be called
    sandbox.ports.expose(3000);
  });

  test("opting into a lossy emulation turns the namespace on", async () => {
    const sandbox = await createSandboxClient({
      provider: ptyOnly,
      emulate: ["snapshot", "codeInterpreter"],
    }).create();
    expectTypeOf(sandbox.snapshots).toEqualTypeOf<SnapshotsApi>();
    expectTypeOf(sandbox.code).toEqualTypeOf<CodeApi>();
    expectTypeOf(sandbox.fork).toEqualTypeOf<undefined>();
  });

  test("a fallback that lacks a capability makes the namespace possibly undefined", async () => {
    const sandbox = await createSandboxClient({ provider: withPorts, fallback: [ptyOnly] }).create();
    expectTypeOf(sandbox.ports).toEqualTypeOf<PortsApi | undefined>();
    expectTypeOf(sandbox.pty).toEqualTypeOf<PtyApi>();
  });

  test("an unknown map gives possibly-undefined namespaces, and can() narrows them", async () => {
    const sandbox = await createSandboxClient({ provider: unknownProvider }).create();
    expectTypeOf(sandbox.ports).toEqualTypeOf<PortsApi | undefined>();
    if (sandbox.can("exposePort")) {
      expectTypeOf(sandbox.ports).toEqualTypeOf<PortsApi>();
    }
    if (sandbox.can("pty")) {
      expectTypeOf(sandbox.pty).toEqualTypeOf<PtyApi>();
    }
  });

  test("a generic Sandbox has every namespace possibly undefined", () => {
    expectTypeOf<Sandbox["pty"]>().toEqualTypeOf<PtyApi | undefined>();
  });
});
