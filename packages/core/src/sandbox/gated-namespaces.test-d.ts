import { describe, expectTypeOf, test } from "vitest";
import type { CapabilityMap } from "../capabilities/capability-names.js";
import { createSandboxClient } from "../client/create-sandbox-client.js";
import type { SandboxProvider } from "../spec/provider-spec.js";
import type { MethodsOf, PortFetch, PortsApiOf, PortUnexpose, UnknownMethods } from "./method-gates.js";
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
type WithPorts = Omit<typeof base, "exposePort"> & { readonly exposePort: "native" };
declare const withPorts: SandboxProvider<WithPorts>;
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
    expectTypeOf(sandbox.ports).toEqualTypeOf<
      | PortsApiOf<{ readonly [K in keyof WithPorts]: WithPorts[K] | (typeof base)[K] }, UnknownMethods>
      | undefined
    >();
    expectTypeOf(sandbox.pty).toEqualTypeOf<PtyApi>();
  });

  test("an unknown map gives possibly-undefined namespaces, and can() narrows them", async () => {
    const sandbox = await createSandboxClient({ provider: unknownProvider }).create();
    const maybe: typeof sandbox.ports = undefined;
    void maybe;
    type Ports = NonNullable<typeof sandbox.ports>;
    expectTypeOf<Ports["unexpose"]>().toEqualTypeOf<PortUnexpose | undefined>();
    expectTypeOf<Ports["fetch"]>().toEqualTypeOf<PortFetch | undefined>();
    if (sandbox.can("exposePort")) {
      expectTypeOf(sandbox.ports.expose).toBeFunction();
    }
    if (sandbox.can("pty")) {
      expectTypeOf(sandbox.pty).toEqualTypeOf<PtyApi>();
    }
  });

  test("a generic Sandbox has every namespace possibly undefined", () => {
    expectTypeOf<Sandbox["pty"]>().toEqualTypeOf<PtyApi | undefined>();
    expectTypeOf<PortsApi["unexpose"]>().toEqualTypeOf<PortUnexpose | undefined>();
    expectTypeOf<PortsApi["fetch"]>().toEqualTypeOf<PortFetch | undefined>();
  });

  test("ports methods are gated one by one: fetch by proxiedFetch, unexpose by what the provider's type says", async () => {
    type NoFetch = Omit<typeof base, "exposePort"> & { readonly exposePort: "native" };
    type WithFetch = Omit<NoFetch, "proxiedFetch"> & { readonly proxiedFetch: "native" };
    // Docker-like: ports declared at create, no unexpose, no proxied fetch.
    const dockerLike = {} as SandboxProvider<NoFetch> & { readonly doUnexposePort?: undefined };
    const docker = await createSandboxClient({ provider: dockerLike }).create();
    expectTypeOf(docker.ports.fetch).toEqualTypeOf<undefined>();
    expectTypeOf(docker.ports.unexpose).toEqualTypeOf<undefined>();
    // @ts-expect-error docker cannot unexpose a port: the call does not type-check
    docker.ports.unexpose(3000);
    // @ts-expect-error docker has no proxied fetch: the call does not type-check
    docker.ports.fetch(3000, "/");
    expectTypeOf(docker.ports.expose).toBeFunction();
    // Local-like: its type has doUnexposePort, and proxiedFetch is native.
    const localLike = {} as SandboxProvider<WithFetch> & {
      readonly doUnexposePort: NonNullable<SandboxProvider["doUnexposePort"]>;
    };
    const local = await createSandboxClient({ provider: localLike }).create();
    expectTypeOf(local.ports.fetch).toEqualTypeOf<PortFetch>();
    expectTypeOf(local.ports.unexpose).toEqualTypeOf<PortUnexpose>();
    expectTypeOf<MethodsOf<typeof localLike>>().toEqualTypeOf<{ readonly unexposePort: true }>();
    expectTypeOf<PortsApiOf<WithFetch, { unexposePort: true }>["unexpose"]>().toEqualTypeOf<PortUnexpose>();
  });

  test("spec fields the provider refuses fail at compile time where its map or its honoured fields say so", async () => {
    const localLike = {} as SandboxProvider<typeof base> & {
      readonly honours: readonly ("name" | "env" | "metadata" | "ttlMs" | "ports")[];
    };
    const client = createSandboxClient({ provider: localLike });
    // What it honours type-checks.
    void client.create({ name: "web", env: { A: "1" }, metadata: { k: "v" }, ttlMs: 1000, ports: [80] });
    void client.create({ network: { egress: "allow-all" } });
    // @ts-expect-error volumes: the map says unsupported
    void client.create({ volumes: [{ name: "v", mountPath: "/data" }] });
    // @ts-expect-error template: not among the fields the provider's type honours
    void client.create({ template: "python:3.12" });
    // @ts-expect-error region: the map says unsupported
    void client.create({ region: "fra" });
    // @ts-expect-error resources.gpu: the map says unsupported
    void client.create({ resources: { gpu: "a10g" } });
    // @ts-expect-error egress other than allow-all needs egressControl, which the map says unsupported
    void client.create({ network: { egress: "block-all" } });
    // A provider whose type says nothing refuses only what its map does.
    const open = createSandboxClient({ provider: unknownProvider });
    void open.create({ template: "x", volumes: [{ name: "v", mountPath: "/d" }], region: "fra" });
  });
});
