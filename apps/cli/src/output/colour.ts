/** ANSI styling functions; every one is the identity when colour is off. */
export interface Colours {
  readonly enabled: boolean;
  red(text: string): string;
  green(text: string): string;
  yellow(text: string): string;
  blue(text: string): string;
  cyan(text: string): string;
  dim(text: string): string;
  bold(text: string): string;
}

/** The part of a stream colour detection looks at. */
export interface MaybeTty {
  readonly isTTY?: boolean | undefined;
}

/**
 * Colour only on a terminal, never when `NO_COLOR` is set to anything non-empty (https://no-color.org),
 * never for `TERM=dumb`; `FORCE_COLOR` (non-empty, not "0") turns it on even for pipes.
 */
export function colourEnabled(stream: MaybeTty, env: Readonly<Record<string, string | undefined>>): boolean {
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== "") return false;
  if (env.FORCE_COLOR !== undefined && env.FORCE_COLOR !== "" && env.FORCE_COLOR !== "0") return true;
  if (env.TERM === "dumb") return false;
  return stream.isTTY === true;
}

function style(enabled: boolean, open: number, close: number): (text: string) => string {
  if (!enabled) return (text) => text;
  return (text) => `\x1b[${open}m${text}\x1b[${close}m`;
}

/** Styling functions for one output stream. */
export function createColours(enabled: boolean): Colours {
  return {
    enabled,
    red: style(enabled, 31, 39),
    green: style(enabled, 32, 39),
    yellow: style(enabled, 33, 39),
    blue: style(enabled, 34, 39),
    cyan: style(enabled, 36, 39),
    dim: style(enabled, 2, 22),
    bold: style(enabled, 1, 22),
  };
}

const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;

/** Removes ANSI escape sequences, for measuring the visible width of styled text. */
export function stripAnsi(text: string): string {
  return text.replace(ANSI, "");
}
