import { defineProvider, type SandboxProvider, type SpecField } from "@sbox/core/spec";
import { flyCapabilities, flyFlags } from "./fly-capabilities.js";
import { flyExec } from "./fly-exec.js";
import { createFlyHttp } from "./fly-http.js";
import { type FlyMachineHandle, flyLifecycle } from "./fly-lifecycle.js";
import { FLY_PROVIDER_NAME } from "./fly-names.js";
import { type FlyProviderOptions, resolveFlyOptions } from "./fly-options.js";
import { flyPorts } from "./fly-ports.js";
import { tokenSecrets } from "./fly-token.js";

/** Spec fields a Fly machine honours at create. */
const FLY_HONOURS: readonly SpecField[] = [
  "template",
  "name",
  "env",
  "metadata",
  "resources.vcpus",
  "resources.memoryMB",
  "ports",
  "region",
  // A create with a key looks the key up in machine metadata first (fly-lifecycle.ts).
  "idempotencyKey",
];

/**
 * The Fly Machines provider: every sandbox is a Fly Machine in one Fly App, driven through the public
 * Machines REST API with plain `fetch`. Credentials come from `FLY_API_TOKEN` and `FLY_APP` unless given.
 * Importing or calling `fly()` makes no network call; the first driver call checks the credentials.
 *
 * ```ts
 * import { createSandboxClient } from "@sbox/core";
 * import { fly } from "@sbox/provider-fly";
 *
 * const client = createSandboxClient({ provider: fly({ region: "ams" }) });
 * const sandbox = await client.create({ ports: [8080] });
 * ```
 */
/**
 * The Fly provider type. Ports are declared at create, so there is no unexpose (`sandbox.ports.unexpose`
 * does not type-check).
 */
export type FlyProvider = SandboxProvider<typeof flyCapabilities, FlyMachineHandle> & {
  readonly doUnexposePort?: undefined;
};

export function fly(options: FlyProviderOptions = {}): FlyProvider {
  const resolved = resolveFlyOptions(options);
  const http = createFlyHttp(resolved);
  const lifecycle = flyLifecycle(http, resolved);
  const ports = flyPorts(http, resolved);

  return defineProvider({
    specificationVersion: "v1",
    name: FLY_PROVIDER_NAME,
    capabilities: flyCapabilities,
    flags: flyFlags,
    honours: FLY_HONOURS,
    // The core scrubs the token from every error, cause chain included (each bare part of a token
    // pasted with its scheme or as several tokens too).
    secrets: () => tokenSecrets(resolved.apiToken ?? ""),
    doCreate: (spec, { signal }) => lifecycle.create(spec, signal),
    doConnect: (id, { signal }) => lifecycle.connect(id, signal),
    doDestroy: (sandbox, { signal }) => lifecycle.destroy(sandbox.id, signal),
    doGetInfo: (sandbox, { signal }) => lifecycle.getInfo(sandbox.id, signal),
    doExec: (sandbox, request) =>
      flyExec(http, sandbox.id, sandbox.native.env, request, resolved.execTimeoutSeconds),
    doList: (filter, { signal }) => lifecycle.list(filter, signal),
    doStop: (sandbox, { signal }) => lifecycle.stop(sandbox.id, signal),
    doPause: (sandbox, { signal }) => lifecycle.pause(sandbox.id, signal),
    doResume: (sandbox, { signal }) => lifecycle.resume(sandbox.id, signal),
    doExposePort: (sandbox, port, { signal, private: isPrivate }) =>
      ports.expose(sandbox.id, port, isPrivate, signal),
    doListPorts: (sandbox, { signal }) => ports.list(sandbox.id, signal),
  }) as FlyProvider;
}
