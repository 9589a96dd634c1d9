/** Marker before the generated block in README.md. */
export const BLOCK_START = "<!-- conformance-matrix:start -->";
/** Marker after the generated block. */
export const BLOCK_END = "<!-- conformance-matrix:end -->";

/**
 * Replaces the text between the markers with `content`; returns undefined when the markers are missing or
 * out of order (the caller reports it instead of guessing where the block belongs).
 */
export function replaceBlock(document: string, content: string): string | undefined {
  const start = document.indexOf(BLOCK_START);
  const end = document.indexOf(BLOCK_END);
  if (start < 0 || end < 0 || end < start) return undefined;
  return `${document.slice(0, start + BLOCK_START.length)}\n${content.trimEnd()}\n${document.slice(end)}`;
}
