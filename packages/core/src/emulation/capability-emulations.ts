import type { CapabilityName } from "../capabilities/capability-names.js";
import type { DriverSandbox, ProviderDriver } from "../spec/provider-spec.js";
import { concatBytes } from "./concat-bytes.js";
import type { EmulatedBackground } from "./e4-background.js";
import type { EmulatedFileMethods } from "./e5-files.js";
import { emulatedWatch } from "./e6-watch.js";
import { emulatedMetrics } from "./e8-metrics.js";
import type { EmulationContext } from "./emulation-context.js";
import { emulatedCodeInterpreter } from "./lossy-code-interpreter.js";
import { emulatedFork } from "./lossy-fork.js";
import { emulatedSnapshots } from "./lossy-snapshot.js";

/** What the emulations of one provider runtime are built from; each piece is made once, on first use. */
export interface EmulationSources {
  readonly context: EmulationContext;
  /** E3, shared by emulated streaming and by commands whose stdin must be fed from a file. */
  readonly stream: () => NonNullable<ProviderDriver["doExecStream"]>;
  /** E4, shared by background processes and kill. */
  readonly background: () => EmulatedBackground;
  /** E5. */
  readonly files: () => EmulatedFileMethods;
  /** The runtime's file methods: the provider's own where it has them, E5 for the rest. */
  readonly fileMethods: Pick<EmulatedFileMethods, "doListFiles" | "doReadFileStream" | "doWriteFileStream">;
  /** The directory commands start in (snapshots and forks archive it). */
  readonly workdir: (sandbox: DriverSandbox) => Promise<string>;
  /** A new sandbox like `source` (lossy fork). */
  readonly createSibling: (source: DriverSandbox, signal: AbortSignal) => Promise<DriverSandbox>;
  /** Destroys a sandbox (lossy fork cleans up after a failure). */
  readonly destroy: (sandbox: DriverSandbox, signal: AbortSignal) => Promise<void>;
}

/**
 * The one table from a capability to the driver methods the core emulates it with. A runtime takes a
 * capability's methods from here when its effective level is `emulated`, and from the provider when it is
 * `native` (see `CAPABILITY_DRIVER_METHODS`). `stdin` has no methods: the exec pipeline feeds it through E3.
 */
export const CAPABILITY_EMULATIONS: {
  readonly [C in CapabilityName]?: (sources: EmulationSources) => Partial<ProviderDriver>;
} = {
  streaming: (s) => ({ doExecStream: s.stream() }),
  background: (s) => {
    const { doSpawn, doListProcesses, doConnectProcess } = s.background();
    return { doSpawn, doListProcesses, doConnectProcess };
  },
  killProcess: (s) => ({ doKillProcess: s.background().doKillProcess }),
  filesWatch: (s) => ({ doWatch: emulatedWatch(s.context, { doListFiles: s.fileMethods.doListFiles }) }),
  filesUpload: (s) => {
    const { doReadFileStream, doWriteFileStream } = s.files();
    return { doReadFileStream, doWriteFileStream };
  },
  metrics: (s) => ({ doMetrics: emulatedMetrics(s.context) }),
  snapshot: (s) => emulatedSnapshots(s.context, s.workdir),
  fork: (s) => ({
    doFork: emulatedFork(s.context, s.workdir, s.createSibling, s.fileMethods, s.destroy),
  }),
  codeInterpreter: (s) => ({ doRunCode: emulatedCodeInterpreter(s.context) }),
};

/**
 * Stream methods for a provider without `filesUpload`: `readStream` and a streamed `write` still work, but
 * the data passes through memory once (one whole-file read or write).
 */
export function bufferedFileStreams(
  files: Pick<EmulatedFileMethods, "doReadFile" | "doWriteFile">,
): Pick<EmulatedFileMethods, "doReadFileStream" | "doWriteFileStream"> {
  return {
    doReadFileStream: async (sandbox, path, options) => {
      const bytes = await files.doReadFile(sandbox, path, options);
      return new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(bytes);
          controller.close();
        },
      });
    },
    doWriteFileStream: async (sandbox, path, data, options) => {
      const chunks: Uint8Array[] = [];
      for await (const chunk of data as unknown as AsyncIterable<Uint8Array>) chunks.push(chunk);
      await files.doWriteFile(sandbox, path, concatBytes(chunks), options);
    },
  };
}
