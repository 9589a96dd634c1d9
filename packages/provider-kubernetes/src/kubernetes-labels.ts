/**
 * What marks an object as an sbox sandbox and what it records: identity labels (`sbox.dev/managed`,
 * `sbox.dev/provider`, the provider's own `labels` option, `sbox.dev/sandbox=<id>`), the metadata as JSON
 * in an annotation (labels cannot hold arbitrary strings) plus label copies of the entries a label can
 * hold (so `list` filters on the server where it can), the spec's name and the expiry. Reading back
 * trusts the annotation, never the label copies.
 */
import type { DriverSandboxInfo, ListFilter, SandboxSpec, SandboxState } from "@sbox/core/spec";
import {
  EXPIRES_ANNOTATION,
  MANAGED_LABEL,
  METADATA_ANNOTATION,
  METADATA_LABEL_PREFIX,
  NAME_ANNOTATION,
  PROVIDER_LABEL,
  PROVIDER_NAME,
  SANDBOX_LABEL,
} from "./kubernetes-names.js";
import { isLabelKey, isLabelValue } from "./kubernetes-options.js";

/** Labels and annotations of an object. */
export interface ObjectMetadata {
  name?: string | undefined;
  labels?: Record<string, string> | undefined;
  annotations?: Record<string, string> | undefined;
  creationTimestamp?: Date | string | undefined;
  deletionTimestamp?: Date | string | undefined;
}

/** The labels every object of this provider carries. */
export function identityLabels(extra: Readonly<Record<string, string>>): Record<string, string> {
  return { ...extra, [MANAGED_LABEL]: "true", [PROVIDER_LABEL]: PROVIDER_NAME };
}

/** Labels and annotations of a new sandbox. */
export function sandboxMetadata(
  id: string,
  spec: SandboxSpec,
  extra: Readonly<Record<string, string>>,
  now: number,
): { labels: Record<string, string>; annotations: Record<string, string> } {
  const labels: Record<string, string> = { ...identityLabels(extra), [SANDBOX_LABEL]: id };
  const metadata = { ...(spec.metadata ?? {}) };
  for (const [key, value] of Object.entries(metadata)) {
    const label = `${METADATA_LABEL_PREFIX}${key}`;
    if (isLabelKey(label) && isLabelValue(value)) labels[label] = value;
  }
  const annotations: Record<string, string> = { [METADATA_ANNOTATION]: JSON.stringify(metadata) };
  if (spec.name !== undefined) annotations[NAME_ANNOTATION] = spec.name;
  if (spec.ttlMs !== undefined) annotations[EXPIRES_ANNOTATION] = new Date(now + spec.ttlMs).toISOString();
  return { labels, annotations };
}

/** The label selector of this provider's sandboxes, narrowed by the filter's label-safe metadata. */
export function listSelector(extra: Readonly<Record<string, string>>, filter: ListFilter = {}): string {
  const terms = Object.entries(identityLabels(extra)).map(([k, v]) => `${k}=${v}`);
  terms.push(SANDBOX_LABEL);
  for (const [key, value] of Object.entries(filter.metadata ?? {})) {
    const label = `${METADATA_LABEL_PREFIX}${key}`;
    // Values a label cannot hold were never copied into labels: the core filters those.
    if (isLabelKey(label) && isLabelValue(value)) terms.push(`${label}=${value}`);
  }
  return terms.join(",");
}

/** Whether an object carries this provider's identity labels. */
export function isOurs(meta: ObjectMetadata | undefined, extra: Readonly<Record<string, string>>): boolean {
  const labels = meta?.labels ?? {};
  return (
    Object.entries(identityLabels(extra)).every(([k, v]) => labels[k] === v) &&
    labels[SANDBOX_LABEL] !== undefined
  );
}

function date(value: Date | string | undefined): Date | undefined {
  if (value === undefined) return undefined;
  const d = value instanceof Date ? value : new Date(value);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** The driver's description of a sandbox object. */
export function sandboxInfo(
  id: string,
  meta: ObjectMetadata | undefined,
  state: SandboxState,
  raw: unknown,
  expiresAt?: Date | undefined,
): DriverSandboxInfo {
  let metadata: Record<string, string> = {};
  try {
    const parsed = JSON.parse(meta?.annotations?.[METADATA_ANNOTATION] ?? "{}") as unknown;
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) {
      metadata = Object.fromEntries(
        Object.entries(parsed).filter(([, v]) => typeof v === "string"),
      ) as Record<string, string>;
    }
  } catch {
    // An annotation someone else edited into garbage: no metadata rather than a failure.
  }
  const info: DriverSandboxInfo = { id, state, metadata, raw };
  const created = date(meta?.creationTimestamp);
  if (created) info.createdAt = created;
  const expires = expiresAt ?? date(meta?.annotations?.[EXPIRES_ANNOTATION]);
  if (expires) info.expiresAt = expires;
  return info;
}
