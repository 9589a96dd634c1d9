/**
 * Serialises a value for `--json` output: dates as ISO strings, byte arrays as their length, bigints as
 * strings, two-space indentation, a trailing newline. `raw` provider objects may hold cycles; those print
 * as "[circular]" instead of throwing.
 */
export function toJson(value: unknown): string {
  const seen = new WeakSet<object>();
  const text = JSON.stringify(
    value,
    function replacer(this: unknown, key: string, current: unknown) {
      // JSON.stringify calls toJSON before the replacer: read the original to see the Date.
      const original = (this as Record<string, unknown> | undefined)?.[key];
      if (original instanceof Date) return Number.isNaN(original.getTime()) ? null : original.toISOString();
      if (typeof current === "bigint") return current.toString();
      if (current instanceof Uint8Array) return { bytes: current.byteLength };
      if (typeof current === "function" || typeof current === "symbol") return undefined;
      if (typeof current === "object" && current !== null) {
        if (seen.has(current)) return "[circular]";
        seen.add(current);
      }
      return current;
    },
    2,
  );
  return `${text ?? "null"}\n`;
}
