import { encodeBase64 } from "./e5-base64.js";
import type { EmulationContext } from "./emulation-context.js";

/** A shell script that consumes bytes, and the stdin that carries them when the exec takes stdin. */
export interface Payload {
  readonly script: string;
  readonly stdin?: Uint8Array | undefined;
}

/** Raw bytes per exec when they travel on stdin (no command-line bound applies to stdin). */
export const STDIN_PAYLOAD_BYTES: number = 8 * 1024 * 1024;

const encoder = new TextEncoder();

/**
 * Bytes fed to `sink` (a shell command reading its stdin, e.g. `cat >> "$f"`): raw on the exec's stdin
 * when it takes bytes, base64 on stdin decoded by `base64 -d` when it takes text only, else base64 inline on
 * the command line. Every form works with busybox and GNU userlands.
 */
export function feedTo(ctx: EmulationContext, sink: string, bytes: Uint8Array): Payload {
  if (ctx.execStdin === "bytes") return { script: sink, stdin: bytes };
  if (ctx.execStdin === "text")
    return { script: `base64 -d | ${sink}`, stdin: encoder.encode(encodeBase64(bytes)) };
  return { script: `printf %s '${encodeBase64(bytes)}' | base64 -d | ${sink}` };
}

/**
 * The most raw bytes one {@link feedTo} may carry when the rest of its command line takes `overhead` bytes
 * and the whole must stay within `budget` (the command-line bound minus what wrappers add); a multiple of
 * `align` (base64 needs multiples of 3 to stay unpadded between pieces; positional writes want blocks).
 */
export function payloadLimit(ctx: EmulationContext, budget: number, overhead: number, align = 3): number {
  if (ctx.execStdin !== "none") return STDIN_PAYLOAD_BYTES - (STDIN_PAYLOAD_BYTES % align);
  const inline = Math.floor(Math.max(0, budget - overhead - 48) / 4) * 3;
  return inline - (inline % align);
}
