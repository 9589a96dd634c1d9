/**
 * `meta.k8s.io/v1 Status`: the body of every failed API call and of an exec's status channel, with the
 * reasons and codes the API server uses (`NotFound` 404, `AlreadyExists` 409, `Conflict` 409, `Invalid` 422,
 * `BadRequest` 400, `Unauthorized` 401, `Forbidden` 403, `MethodNotAllowed` 405, `Expired`/`Gone` 410,
 * `UnsupportedMediaType` 415, `InternalError` 500).
 */

/** A Status body. */
export interface KubeStatus {
  readonly kind: "Status";
  readonly apiVersion: "v1";
  readonly metadata: Record<string, never>;
  readonly status: "Success" | "Failure";
  readonly message?: string | undefined;
  readonly reason?: string | undefined;
  readonly details?: Record<string, unknown> | undefined;
  readonly code?: number | undefined;
}

/** What a failed call is described with. */
export interface StatusDetails {
  readonly name?: string | undefined;
  readonly group?: string | undefined;
  readonly kind?: string | undefined;
  readonly causes?: readonly { reason?: string; message?: string; field?: string }[] | undefined;
}

/** A failure that the routes answer with its Status. */
export class KubeApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: StatusDetails | undefined,
  ) {
    super(message);
  }

  /** The Status body. */
  toStatus(): KubeStatus {
    return {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message: this.message,
      reason: this.reason,
      ...(this.details ? { details: { ...this.details } } : {}),
      code: this.code,
    };
  }
}

/** `<resource>.<group>` as the API server names a resource in messages (`pods`, `sandboxes.agents.x-k8s.io`). */
export function qualifiedResource(plural: string, group: string): string {
  return group ? `${plural}.${group}` : plural;
}

export function notFound(plural: string, group: string, name: string): KubeApiError {
  return new KubeApiError(404, "NotFound", `${qualifiedResource(plural, group)} "${name}" not found`, {
    name,
    group,
    kind: plural,
  });
}

export function alreadyExists(plural: string, group: string, name: string): KubeApiError {
  return new KubeApiError(
    409,
    "AlreadyExists",
    `${qualifiedResource(plural, group)} "${name}" already exists`,
    {
      name,
      group,
      kind: plural,
    },
  );
}

export function conflict(plural: string, group: string, name: string, why: string): KubeApiError {
  return new KubeApiError(
    409,
    "Conflict",
    `Operation cannot be fulfilled on ${qualifiedResource(plural, group)} "${name}": ${why}`,
    { name, group, kind: plural },
  );
}

/** 422 Invalid, with one cause per field error (`spec.containers: Required value`). */
export function invalid(
  kind: string,
  group: string,
  name: string,
  errors: readonly { field: string; message: string; reason?: string }[],
): KubeApiError {
  const text = errors.map((e) => `${e.field}: ${e.message}`).join(", ");
  return new KubeApiError(
    422,
    "Invalid",
    `${kind}${group ? `.${group}` : ""} "${name}" is invalid: ${errors.length > 1 ? `[${text}]` : text}`,
    {
      name,
      group,
      kind,
      causes: errors.map((e) => ({
        reason: e.reason ?? "FieldValueInvalid",
        message: e.message,
        field: e.field,
      })),
    },
  );
}

export function badRequest(message: string): KubeApiError {
  return new KubeApiError(400, "BadRequest", message);
}

export function methodNotAllowed(): KubeApiError {
  return new KubeApiError(
    405,
    "MethodNotAllowed",
    "the server does not allow this method on the requested resource",
  );
}

/** The status-channel answer of an exec that ended with `exitCode` (v4 and later). */
export function execExitStatus(exitCode: number, argv: readonly string[]): KubeStatus {
  if (exitCode === 0) return { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success" };
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: `command terminated with non-zero exit code: error executing command [${argv.join(" ")}], exit code ${exitCode}`,
    reason: "NonZeroExitCode",
    details: { causes: [{ reason: "ExitCode", message: String(exitCode) }] },
  };
}

/** The status-channel answer of an exec that could not run or was cut off. */
export function execFailureStatus(message: string): KubeStatus {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason: "InternalError",
    code: 500,
  };
}
