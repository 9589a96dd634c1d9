import { EXPIRES_AT_METADATA_KEY, IDEMPOTENCY_KEY_METADATA_KEY, type SandboxInfo } from "@sbox/core";
import type { SandboxRecord } from "@sbox/manager";
import type { OptionSpec } from "../args/option-spec.js";
import { NAME_LABEL } from "../records/sandbox-names.js";

/** `--all-labels`: also show the labels sbox keeps for itself. */
export const ALL_LABELS_OPTION: OptionSpec = {
  type: "boolean",
  description:
    "also show the labels sbox keeps for itself (record, namespace, name, expiry, idempotency key)",
};

/**
 * Labels sbox itself puts on sandboxes: the manager's bookkeeping, the CLI's name, the core's expiry and
 * the core's record of a create's idempotency key.
 */
export function isInternalLabel(key: string): boolean {
  return (
    key.startsWith("sbox-manager-") ||
    key === NAME_LABEL ||
    key === EXPIRES_AT_METADATA_KEY ||
    key === IDEMPOTENCY_KEY_METADATA_KEY
  );
}

/** The labels a person set, or every label with `all`. */
export function visibleLabels(
  metadata: Readonly<Record<string, string>>,
  all = false,
): Record<string, string> {
  if (all) return { ...metadata };
  return Object.fromEntries(Object.entries(metadata).filter(([key]) => !isInternalLabel(key)));
}

/**
 * The one expiry of a sandbox: the earliest of the provider's own and the record's (`sbox reap` stops a
 * recorded sandbox when its record expires), so it is shown once and means what happens first.
 */
export function effectiveExpiry(info: SandboxInfo, record?: SandboxRecord): Date | undefined {
  const candidates = [info.expiresAt, record?.expiresAt ?? undefined].filter(
    (date): date is Date => date instanceof Date && !Number.isNaN(date.getTime()),
  );
  if (candidates.length === 0) return undefined;
  return new Date(Math.min(...candidates.map((date) => date.getTime())));
}

/** The name given with `sbox create --name`, if any. */
export function nameOf(info: SandboxInfo): string | undefined {
  return info.metadata[NAME_LABEL];
}

function isoOrNull(date: Date | undefined): string | null {
  return date instanceof Date && !Number.isNaN(date.getTime()) ? date.toISOString() : null;
}

/**
 * The JSON shape of a sandbox in `--json` output: stable keys, dates as ISO strings, `raw` last. The
 * expiry is the effective one (see {@link effectiveExpiry}); internal labels are left out unless `allLabels`.
 */
export function infoToJson(
  info: SandboxInfo,
  options: { record?: SandboxRecord | undefined; allLabels?: boolean | undefined } = {},
): Record<string, unknown> {
  const name = nameOf(info);
  return {
    id: info.id,
    provider: info.provider,
    ...(name === undefined ? {} : { name }),
    state: info.state,
    metadata: visibleLabels(info.metadata, options.allLabels),
    createdAt: isoOrNull(info.createdAt),
    expiresAt: isoOrNull(effectiveExpiry(info, options.record)),
    ...(info.partial ? { partial: info.partial } : {}),
    raw: info.raw ?? null,
  };
}
