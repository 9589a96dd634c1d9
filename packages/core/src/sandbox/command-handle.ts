import type { SandboxError } from "../errors/sandbox-error.js";
import { AsyncQueue } from "./async-queue.js";
import type { CommandHandle, ExecResult, KillOptions, OutputEvent } from "./sandbox-types.js";
import { Utf8StreamDecoder } from "./utf8-stream-decoder.js";

/** Where a running command delivers its output, and how its producer learns to pause (`ready`). */
export interface OutputSink {
  stdout(chunk: Uint8Array | string): void;
  stderr(chunk: Uint8Array | string): void;
  /** A promise while the iterator's buffer is full: the producer waits for it (back-pressure). */
  ready(): Promise<void> | undefined;
}

/**
 * Characters of output the iterator of one command holds before the command is paused: a slow `for await`
 * (or one that has not begun yet) slows the command down instead of growing memory.
 */
export const ITERATOR_HIGH_WATER_MARK: number = 4 * 1024 * 1024;

/** Options the handle needs from `RunOptions`. */
export interface HandleOptions {
  onStdout?: ((chunk: string) => void) | undefined;
  onStderr?: ((chunk: string) => void) | undefined;
  collectOutput?: boolean | undefined;
}

/**
 * The awaitable and async-iterable handle of `commands.run()`. Output is decoded as it arrives and goes
 * to the callbacks, to the iterator (buffered from the start, so a late `for await` misses nothing) and,
 * unless `collectOutput` is false, into the result. Once the handle is awaited and no iteration has begun by
 * the next turn, the iterator buffer is dropped so output is not kept twice. The iterator's buffer is
 * bounded ({@link ITERATOR_HIGH_WATER_MARK}): while it is full the command's output is paused at its source,
 * so with `collectOutput: false` memory stays bounded whatever the output size or the consumer's speed.
 */
export class RunningCommand implements CommandHandle {
  private readonly events = new AsyncQueue<OutputEvent>({
    highWaterMark: ITERATOR_HIGH_WATER_MARK,
    sizeOf: (event) => (event.type === "exit" ? 0 : event.data.length),
  });
  private readonly result: Promise<ExecResult>;
  private iterated = false;
  private stdoutText = "";
  private stderrText = "";

  constructor(
    options: HandleOptions,
    execute: (sink: OutputSink) => Promise<{ exitCode: number; signal?: string | undefined }>,
    private readonly onKill: (signal?: string, options?: KillOptions) => Promise<void>,
  ) {
    const collect = options.collectOutput ?? true;
    const out = new Utf8StreamDecoder();
    const err = new Utf8StreamDecoder();
    const deliver = (type: "stdout" | "stderr", text: string): void => {
      if (text === "") return;
      if (type === "stdout") {
        if (collect) this.stdoutText += text;
        options.onStdout?.(text);
      } else {
        if (collect) this.stderrText += text;
        options.onStderr?.(text);
      }
      this.events.push({ type, data: text });
    };
    const sink: OutputSink = {
      stdout: (chunk) => deliver("stdout", out.write(chunk)),
      stderr: (chunk) => deliver("stderr", err.write(chunk)),
      ready: () => this.events.ready(),
    };
    const started = performance.now();
    this.result = Promise.resolve()
      .then(() => execute(sink))
      .then(
        (exit) => {
          deliver("stdout", out.end());
          deliver("stderr", err.end());
          this.events.push({ type: "exit", exitCode: exit.exitCode, signal: exit.signal });
          this.events.end();
          const result: ExecResult = {
            stdout: this.stdoutText,
            stderr: this.stderrText,
            exitCode: exit.exitCode,
            durationMs: Math.round(performance.now() - started),
          };
          if (exit.signal !== undefined) result.signal = exit.signal;
          return result;
        },
        (error: SandboxError) => {
          this.events.fail(error);
          throw error;
        },
      );
    // An unobserved failure must not crash the process: the error is still delivered to whoever awaits.
    this.result.catch(() => {});
  }

  // biome-ignore lint/suspicious/noThenProperty: the handle is deliberately awaitable (PromiseLike).
  then<TResult1 = ExecResult, TResult2 = never>(
    onfulfilled?: ((value: ExecResult) => TResult1 | PromiseLike<TResult1>) | null,
    onrejected?: ((reason: unknown) => TResult2 | PromiseLike<TResult2>) | null,
  ): Promise<TResult1 | TResult2> {
    // Awaited but not iterated: stop keeping events for an iterator, unless one is asked for in this same
    // turn (as `Promise.all([handle, consume(handle)])` does).
    if (!this.iterated) {
      setTimeout(() => {
        if (!this.iterated) this.events.discard();
      }, 0);
    }
    return this.result.then(onfulfilled, onrejected);
  }

  [Symbol.asyncIterator](): AsyncIterator<OutputEvent> {
    this.iterated = true;
    return this.events[Symbol.asyncIterator]();
  }

  kill(signal?: string, options?: KillOptions): Promise<void> {
    return this.onKill(signal, options);
  }
}

/** A handle for a command that could not even start: awaiting or iterating it rejects with `error`. */
export function failedCommand(error: SandboxError): CommandHandle {
  return new RunningCommand(
    {},
    () => Promise.reject(error),
    () => Promise.resolve(),
  );
}
