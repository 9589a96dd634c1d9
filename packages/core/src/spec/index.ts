/**
 * `@sbox/core/spec`: the contract a provider implements. No runtime dependencies; safe for third-party
 * adapters to import.
 */

export type { CapabilityFlags, PreviewModel } from "../capabilities/capability-flags.js";
export type { DriverMethodName } from "../capabilities/capability-methods.js";
export {
  CAPABILITY_DRIVER_METHODS,
  DRIVER_METHOD_NAMES,
  EMULATABLE_DRIVER_METHODS,
  FILE_DRIVER_METHODS,
  REQUIRED_DRIVER_METHODS,
} from "../capabilities/capability-methods.js";
export type { CapabilityLevel, CapabilityMap, CapabilityName } from "../capabilities/capability-names.js";
export { CAPABILITY_NAMES, isCapabilityName } from "../capabilities/capability-names.js";
export type { NamespacedCapability } from "../capabilities/capability-namespaces.js";
export { CAPABILITY_NAMESPACES } from "../capabilities/capability-namespaces.js";
export type { ManifestProblem } from "../capabilities/manifest.js";
export { checkProviderManifest } from "../capabilities/manifest.js";
export { argvScript, displayOfScript, EXEC_ARGS_SCRIPT } from "../emulation/argv-script.js";
export { shellCommandOf, shellQuote, shellQuoteArgv } from "../emulation/shell-quote.js";
export { abortErrorOf } from "../errors/abort-error.js";
export type { SandboxErrorCode } from "../errors/error-codes.js";
export { SANDBOX_ERROR_CODES } from "../errors/error-codes.js";
export { scrubHostPaths } from "../errors/host-paths.js";
export { redactSecrets } from "../errors/redact.js";
export { RedactedCause, redactError } from "../errors/redact-error.js";
export type { SandboxErrorOptions } from "../errors/sandbox-error.js";
export { NotSupportedError, SandboxError } from "../errors/sandbox-error.js";
export type { WrapErrorContext } from "../errors/to-sandbox-error.js";
export { codeForHttpStatus, isRetryableHttpStatus, toSandboxError } from "../errors/to-sandbox-error.js";
export { exitCodeForSignal, signalName, signalNumber } from "../sandbox/signal-names.js";
export { defineProvider } from "./define-provider.js";
export type * from "./files-types.js";
export { isMissingPackage, optionalPackageError } from "./optional-package.js";
export type { ProviderFetch, ProviderFetchOptions, ProviderRequestOptions } from "./provider-fetch.js";
export { createProviderFetch } from "./provider-fetch.js";
export type { ProviderOptionRule, ProviderOptionRules } from "./provider-options.js";
export { optionRules, validateProviderOptions } from "./provider-options.js";
export type { SettingParser, SettingParsers, SettingSource } from "./provider-settings.js";
export { invalidSetting, loadSetting, readEnv, settingParsers } from "./provider-settings.js";
export type * from "./provider-spec.js";
export { resolveSandboxPath } from "./sandbox-paths.js";
export type * from "./sandbox-spec.js";
export { SANDBOX_SPEC_FIELDS, SANDBOX_STATES } from "./sandbox-spec-values.js";
