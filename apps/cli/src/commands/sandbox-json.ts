import type { SandboxInfo } from "@sbox/core";

function isoOrNull(date: Date | undefined): string | null {
  return date instanceof Date && !Number.isNaN(date.getTime()) ? date.toISOString() : null;
}

/** The JSON shape of a sandbox in `--json` output: stable keys, dates as ISO strings, `raw` last. */
export function infoToJson(info: SandboxInfo): Record<string, unknown> {
  return {
    id: info.id,
    provider: info.provider,
    state: info.state,
    metadata: info.metadata,
    createdAt: isoOrNull(info.createdAt),
    expiresAt: isoOrNull(info.expiresAt),
    raw: info.raw ?? null,
  };
}
