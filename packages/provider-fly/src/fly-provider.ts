import { defineProvider, type SandboxProvider, type SpecField, toSandboxError } from "@sbox/core/spec";
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
export function fly(
  options: FlyProviderOptions = {},
): SandboxProvider<typeof flyCapabilities, FlyMachineHandle> {
  const resolved = resolveFlyOptions(options);
  const http = createFlyHttp(resolved);
  const lifecycle = flyLifecycle(http, resolved);
  const ports = flyPorts(http, resolved);
  const secrets = tokenSecrets(resolved.apiToken ?? "");

  /** Every error leaving the driver is a SandboxError without the token in it. */
  const guard = async <T>(operation: string, run: () => Promise<T>): Promise<T> => {
    try {
      return await run();
    } catch (error) {
      throw toSandboxError(error, { provider: FLY_PROVIDER_NAME, operation, secrets });
    }
  };

  return defineProvider({
    specificationVersion: "v1",
    name: FLY_PROVIDER_NAME,
    capabilities: flyCapabilities,
    flags: flyFlags,
    honours: FLY_HONOURS,
    doCreate: (spec, { signal }) => guard("create", () => lifecycle.create(spec, signal)),
    doConnect: (id, { signal }) => guard("connect", () => lifecycle.connect(id, signal)),
    doDestroy: (sandbox, { signal }) => guard("destroy", () => lifecycle.destroy(sandbox.id, signal)),
    doGetInfo: (sandbox, { signal }) => guard("getInfo", () => lifecycle.getInfo(sandbox.id, signal)),
    doExec: (sandbox, request) =>
      guard("exec", () =>
        flyExec(http, sandbox.id, sandbox.native.env, request, resolved.execTimeoutSeconds),
      ),
    doList: (filter, { signal }) => ({
      async *[Symbol.asyncIterator]() {
        try {
          yield* lifecycle.list(filter, signal);
        } catch (error) {
          throw toSandboxError(error, { provider: FLY_PROVIDER_NAME, operation: "list", secrets });
        }
      },
    }),
    doStop: (sandbox, { signal }) => guard("stop", () => lifecycle.stop(sandbox.id, signal)),
    doPause: (sandbox, { signal }) => guard("pause", () => lifecycle.pause(sandbox.id, signal)),
    doResume: (sandbox, { signal }) => guard("resume", () => lifecycle.resume(sandbox.id, signal)),
    doExposePort: (sandbox, port, { signal, private: isPrivate }) =>
      guard("ports.expose", () => ports.expose(sandbox.id, port, isPrivate, signal)),
    doListPorts: (sandbox, { signal }) => guard("ports.list", () => ports.list(sandbox.id, signal)),
  });
}
