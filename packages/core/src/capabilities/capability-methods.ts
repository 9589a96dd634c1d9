import type { ProviderDriver } from "../spec/provider-spec.js";
import type { CapabilityName } from "./capability-names.js";

/** A driver method name. */
export type DriverMethodName = Exclude<keyof ProviderDriver, never>;

// Every driver method once; the mapped type makes the compiler reject a list that misses one.
const EVERY_DRIVER_METHOD: { readonly [K in DriverMethodName]-?: true } = {
  doCreate: true,
  doConnect: true,
  doDestroy: true,
  doGetInfo: true,
  doExec: true,
  doExecStream: true,
  doSpawn: true,
  doListProcesses: true,
  doConnectProcess: true,
  doKillProcess: true,
  doCreatePty: true,
  doReadFile: true,
  doWriteFile: true,
  doReadFileStream: true,
  doWriteFileStream: true,
  doListFiles: true,
  doStat: true,
  doMkdir: true,
  doRemove: true,
  doRename: true,
  doWatch: true,
  doList: true,
  doStop: true,
  doPause: true,
  doResume: true,
  doSetTimeout: true,
  doMetrics: true,
  doExposePort: true,
  doListPorts: true,
  doUnexposePort: true,
  doFetchPort: true,
  doSetEgress: true,
  doGetSshAccess: true,
  doCreateSnapshot: true,
  doRestoreSnapshot: true,
  doListSnapshots: true,
  doDeleteSnapshot: true,
  doFork: true,
  doRunCode: true,
  doDispose: true,
};

/** Every driver method of the spec, required and optional. */
export const DRIVER_METHOD_NAMES: readonly DriverMethodName[] = Object.keys(
  EVERY_DRIVER_METHOD,
) as DriverMethodName[];

/** The methods every provider must implement. */
export const REQUIRED_DRIVER_METHODS = ["doCreate", "doConnect", "doDestroy", "doGetInfo", "doExec"] as const;

/**
 * Which driver methods make a capability `native`. A capability declared native must have all of
 * `required`; a driver method listed here must not be present unless its capability is declared native
 * (the conformance manifest case checks both directions).
 */
export const CAPABILITY_DRIVER_METHODS: Partial<
  Record<CapabilityName, { required: readonly DriverMethodName[]; optional?: readonly DriverMethodName[] }>
> = {
  list: { required: ["doList"] },
  stop: { required: ["doStop", "doResume"] },
  pause: { required: ["doPause", "doResume"] },
  setTimeout: { required: ["doSetTimeout"] },
  streaming: { required: ["doExecStream"] },
  background: { required: ["doSpawn", "doListProcesses", "doConnectProcess"] },
  killProcess: { required: ["doKillProcess"] },
  pty: { required: ["doCreatePty"] },
  filesWatch: { required: ["doWatch"] },
  filesUpload: { required: ["doReadFileStream", "doWriteFileStream"] },
  codeInterpreter: { required: ["doRunCode"] },
  exposePort: { required: ["doExposePort"], optional: ["doListPorts", "doUnexposePort"] },
  egressControl: { required: ["doSetEgress"] },
  ssh: { required: ["doGetSshAccess"] },
  proxiedFetch: { required: ["doFetchPort"] },
  snapshot: { required: ["doCreateSnapshot", "doRestoreSnapshot", "doListSnapshots", "doDeleteSnapshot"] },
  fork: { required: ["doFork"] },
  metrics: { required: ["doMetrics"] },
};

/** File methods: each is optional and emulated over exec (E5) when absent. */
export const FILE_DRIVER_METHODS = [
  "doReadFile",
  "doWriteFile",
  "doListFiles",
  "doStat",
  "doMkdir",
  "doRemove",
  "doRename",
] as const;

/**
 * Methods hidden in primitives-only mode: everything the core can emulate, so the emulations run on the
 * real backend.
 */
export const EMULATABLE_DRIVER_METHODS: readonly DriverMethodName[] = [
  "doExecStream",
  "doSpawn",
  "doListProcesses",
  "doConnectProcess",
  "doKillProcess",
  "doWatch",
  "doReadFileStream",
  "doWriteFileStream",
  "doMetrics",
  ...FILE_DRIVER_METHODS,
];
