import type { Sandbox } from "@sbox/core";
import type { RecordRuntime } from "./sandbox-record.js";

/**
 * The preview URLs of a sandbox that came back from stop or pause, asked of the provider again: a
 * provider may give a resumed sandbox new addresses (Docker publishes its ports on new host ports), so a
 * URL kept from before would point at nothing. A port that cannot be exposed any more is dropped rather
 * than kept stale; `getUrl` then tries again when it is asked for.
 */
export async function refreshUrls(
  sandbox: Sandbox,
  urls: Readonly<Record<string, string>> | undefined,
): Promise<Record<string, string> | undefined> {
  if (urls === undefined) return undefined;
  const fresh: Record<string, string> = {};
  for (const key of Object.keys(urls)) {
    if (!sandbox.ports) break;
    try {
      fresh[key] = (await sandbox.ports.expose(Number(key))).url;
    } catch {
      // Left out: a stale URL is worse than none.
    }
  }
  return fresh;
}

/** `runtime` with its URLs asked of the provider again (see {@link refreshUrls}). */
export async function withFreshUrls(sandbox: Sandbox, runtime: RecordRuntime): Promise<RecordRuntime> {
  const urls = await refreshUrls(sandbox, runtime.urls);
  return urls === undefined ? runtime : { ...runtime, urls };
}
