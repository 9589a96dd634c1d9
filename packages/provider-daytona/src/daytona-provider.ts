import { defineProvider, type SandboxProvider } from "@sbox/core/spec";
import {
  type DaytonaCapabilities,
  daytonaCapabilities,
  daytonaFlags,
  daytonaHonoursFor,
} from "./daytona-capabilities.js";
import { mapDaytonaError } from "./daytona-errors.js";
import { daytonaExec, daytonaExecStream } from "./daytona-exec.js";
import { readDaytonaFile, writeDaytonaFile } from "./daytona-files.js";
import { type DaytonaHandle, daytonaLifecycle } from "./daytona-lifecycle.js";
import { DAYTONA_PROVIDER_NAME } from "./daytona-names.js";
import { type DaytonaProviderOptions, resolveDaytonaOptions } from "./daytona-options.js";
import { exposeDaytonaPort } from "./daytona-ports.js";
import { createDaytonaPty } from "./daytona-pty.js";
import { closeDaytona, type DaytonaSdkSandbox } from "./daytona-sdk.js";

/** What `sandbox.raw()` returns for a Daytona sandbox: the SDK's `Sandbox` (git, LSP, code run...). */
export type DaytonaSandboxNative = DaytonaSdkSandbox;

/** The Daytona provider type. */
export type DaytonaProvider = SandboxProvider<DaytonaCapabilities, DaytonaSandboxNative>;

/**
 * The Daytona provider, on the official `@daytonaio/sdk` (loaded on first use). Credentials come from
 * `apiKey` or `DAYTONA_API_KEY`; a ttl reaches Daytona as its ttl, auto-stop and auto-delete intervals.
 *
 * ```ts
 * const client = createSandboxClient({ provider: daytona({ target: "eu" }) });
 * const sandbox = await client.create({ ttlMs: 30 * 60_000 });
 * ```
 */
export function daytona(options: DaytonaProviderOptions = {}): DaytonaProvider {
  const resolved = resolveDaytonaOptions(options);
  const lifecycle = daytonaLifecycle(resolved);
  /** Preview tokens handed out (credentials: never repeated in an error). */
  const previewTokens = new Set<string>();
  return defineProvider<DaytonaCapabilities, DaytonaSandboxNative>({
    specificationVersion: "v1",
    name: DAYTONA_PROVIDER_NAME,
    capabilities: daytonaCapabilities,
    flags: daytonaFlags,
    honours: daytonaHonoursFor(resolved),
    execSignals: true,
    secrets: () => [resolved.apiKey, ...previewTokens],
    mapError: mapDaytonaError,
    doCreate: (spec, { signal }) => lifecycle.create(spec, signal),
    doConnect: (id, { signal }) => lifecycle.connect(id, signal),
    doDestroy: (s: DaytonaHandle, { signal }) => lifecycle.destroy(s, signal),
    doGetInfo: (s, { signal }) => lifecycle.getInfo(s, signal),
    doExec: (s, request) => daytonaExec(resolved, s, request),
    doExecStream: (s, request) => daytonaExecStream(resolved, s, request),
    doReadFile: (s, path, { signal }) => readDaytonaFile(resolved, s, path, signal),
    doWriteFile: (s, path, data, { signal, mode }) => writeDaytonaFile(resolved, s, path, data, mode, signal),
    doCreatePty: (s, request) => createDaytonaPty(resolved, s, request),
    doExposePort: (s, port, { signal, private: isPrivate }) =>
      exposeDaytonaPort(resolved, s, port, isPrivate, signal, previewTokens),
    doList: (filter, { signal }) => lifecycle.list(filter, signal),
    doStop: (s, { signal }) => lifecycle.stop(s, signal),
    doResume: (s, { signal }) => lifecycle.resume(s, signal),
    doDispose: () => closeDaytona(resolved),
  }) as DaytonaProvider;
}
