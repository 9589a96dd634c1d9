/**
 * Removes credentials from text that may end up in an error message or a log line: bearer tokens,
 * `key=value` pairs whose key looks secret (API keys, tokens, passwords, signatures of signed URLs), URL
 * userinfo, and any literal secret the caller names (also in its URL-encoded form).
 */
export function redactSecrets(text: string, secrets: readonly (string | undefined)[] = []): string {
  let out = text;
  for (const secret of secrets) {
    if (!secret || secret.length < 4) continue;
    out = out.split(secret).join("[redacted]");
    const encoded = encodeURIComponent(secret);
    if (encoded !== secret) out = out.split(encoded).join("[redacted]");
  }
  return out
    .replace(/(bearer\s+)[A-Za-z0-9._~+/=-]{6,}/gi, "$1[redacted]")
    .replace(
      /((?:api[_-]?key|token|secret|password|passwd|authorization|access[_-]?key|signature|x-amz-signature|x-goog-signature|sig|credential)["']?\s*[:=]\s*["']?)[^\s"'&,;]{4,}/gi,
      "$1[redacted]",
    )
    .replace(/(\b[a-z][a-z0-9+.-]*:\/\/)[^/\s:@]+:[^/\s@]+@/gi, "$1[redacted]@");
}
