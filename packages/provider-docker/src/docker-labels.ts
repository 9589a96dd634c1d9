/**
 * The labels that make a container an sbox sandbox. `list` and `connect` only see containers carrying
 * `sbox.managed=true` and `sbox.provider=docker` (plus the provider's own extra labels), so containers of
 * other tools on the same engine are never touched.
 */

/** Marks every container, image and volume sbox made. */
export const LABEL_MANAGED = "sbox.managed";
/** The provider that made the container. */
export const LABEL_PROVIDER = "sbox.provider";
/** The human-readable name from `spec.name` (the container name is the sandbox id). */
export const LABEL_NAME = "sbox.name";
/** Prefix of one label per metadata key: `sbox.meta.<key>=<value>`. */
export const LABEL_META_PREFIX = "sbox.meta.";
/**
 * JSON list of the metadata keys this container really has. Images made by `commit` carry the labels of
 * their container and Docker merges image labels into a new container's labels; this list (always set,
 * so it overrides an inherited one) tells our own keys from inherited ones.
 */
export const LABEL_META_KEYS = "sbox.meta-keys";
/** Expiry set at create time (ISO 8601), or empty. Later changes live in {@link EXPIRY_FILE}. */
export const LABEL_EXPIRES_AT = "sbox.expires-at";
/** On images: the sandbox a snapshot was taken from. */
export const LABEL_SNAPSHOT_OF = "sbox.snapshot-of";
/** On images: the snapshot's name. */
export const LABEL_SNAPSHOT_NAME = "sbox.snapshot-name";
/** On images made only to fork from: removed with the last fork. */
export const LABEL_FORK_IMAGE = "sbox.fork-image";
/** On containers: the sandbox this one was forked from. */
export const LABEL_FORKED_FROM = "sbox.forked-from";

/**
 * Where `setTimeout` keeps a changed expiry. Container labels cannot change after create, so the newest
 * expiry is a file in the container's filesystem, read and written through the archive API (works on
 * running, paused and stopped containers alike). A root process inside the sandbox can change it.
 */
export const EXPIRY_FILE = "/.sbox-expires-at";

/** The provider's value of `sbox.provider`. */
export const DOCKER_PROVIDER_NAME = "docker";

/** The labels of a new container. */
export function sandboxLabels(input: {
  extra: Readonly<Record<string, string>>;
  metadata: Readonly<Record<string, string>>;
  name?: string | undefined;
  expiresAt?: Date | undefined;
}): Record<string, string> {
  const labels: Record<string, string> = { ...input.extra };
  labels[LABEL_MANAGED] = "true";
  labels[LABEL_PROVIDER] = DOCKER_PROVIDER_NAME;
  labels[LABEL_NAME] = input.name ?? "";
  labels[LABEL_EXPIRES_AT] = input.expiresAt ? input.expiresAt.toISOString() : "";
  labels[LABEL_FORKED_FROM] = "";
  const keys = Object.keys(input.metadata);
  labels[LABEL_META_KEYS] = JSON.stringify(keys);
  for (const key of keys) labels[`${LABEL_META_PREFIX}${key}`] = input.metadata[key] ?? "";
  return labels;
}

/** The metadata recorded in a container's labels (inherited image labels are ignored). */
export function metadataOf(
  labels: Readonly<Record<string, string>> | null | undefined,
): Record<string, string> {
  const metadata: Record<string, string> = {};
  if (!labels) return metadata;
  let keys: unknown;
  try {
    keys = JSON.parse(labels[LABEL_META_KEYS] ?? "[]");
  } catch {
    keys = [];
  }
  if (!Array.isArray(keys)) return metadata;
  for (const key of keys) {
    if (typeof key !== "string") continue;
    const value = labels[`${LABEL_META_PREFIX}${key}`];
    if (value !== undefined) metadata[key] = value;
  }
  return metadata;
}

/** True when the labels mark a container as one of ours (and carry the provider's extra labels). */
export function isOurs(
  labels: Readonly<Record<string, string>> | null | undefined,
  extra: Readonly<Record<string, string>>,
): boolean {
  if (labels?.[LABEL_MANAGED] !== "true" || labels[LABEL_PROVIDER] !== DOCKER_PROVIDER_NAME) return false;
  return Object.entries(extra).every(([key, value]) => labels[key] === value);
}

/** Docker label filters (`key=value`) selecting our containers. */
export function labelFilters(extra: Readonly<Record<string, string>>): string[] {
  return [
    `${LABEL_MANAGED}=true`,
    `${LABEL_PROVIDER}=${DOCKER_PROVIDER_NAME}`,
    ...Object.entries(extra).map(([k, v]) => `${k}=${v}`),
  ];
}

/** Parses an ISO expiry; undefined when empty or invalid. */
export function parseExpiry(value: string | undefined): Date | undefined {
  if (!value) return undefined;
  const at = new Date(value.trim());
  return Number.isNaN(at.getTime()) ? undefined : at;
}
