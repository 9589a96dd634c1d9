/** Options of {@link AsyncQueue}. */
export interface AsyncQueueOptions<T> {
  /**
   * Buffered size above which `ready()` asks the producer to wait (a promise that settles once the
   * consumer has taken the buffer down to half of it). Without it the queue never asks.
   */
  readonly highWaterMark?: number | undefined;
  /** The size of one item (default 1). */
  readonly sizeOf?: ((item: T) => number) | undefined;
  /**
   * Whether the producer is asked to wait before anyone iterates (default true). False for queues nobody
   * may ever read (a background process's stdout): they ask only while someone iterates.
   */
  readonly pauseBeforeIteration?: boolean | undefined;
}

/**
 * A push-based async iterable: producers `push` and `end`/`fail`, a consumer iterates. Items pushed before
 * iteration starts are kept, so nothing produced early is lost. With a high-water mark the queue is
 * bounded: `ready()` returns a promise while the buffer is full, and a producer that waits for it (drivers
 * pause their source) keeps memory within the mark whatever the consumer's speed.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private readonly waiters: { resolve(r: IteratorResult<T>): void; reject(e: unknown): void }[] = [];
  private drains: (() => void)[] = [];
  private done = false;
  private error: unknown;
  private failed = false;
  private buffering = true;
  private iterating = false;
  private size = 0;
  private readonly highWaterMark: number;
  private readonly sizeOf: (item: T) => number;
  private readonly pauseBeforeIteration: boolean;

  constructor(options: AsyncQueueOptions<T> = {}) {
    this.highWaterMark = options.highWaterMark ?? Number.POSITIVE_INFINITY;
    this.sizeOf = options.sizeOf ?? (() => 1);
    this.pauseBeforeIteration = options.pauseBeforeIteration ?? true;
  }

  /** Adds an item (see {@link ready} for whether the producer should wait before the next). */
  push(item: T): void {
    if (this.done) return;
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve({ value: item, done: false });
    else if (this.buffering) {
      this.items.push(item);
      this.size += this.sizeOf(item);
    }
  }

  /**
   * `undefined` when the producer may push more; a promise while the buffer is over the high-water mark,
   * settling once the consumer took it down to half of it (or left, or the queue ended).
   */
  ready(): Promise<void> | undefined {
    if (this.done || !this.buffering || this.size <= this.highWaterMark) return undefined;
    if (!(this.iterating || this.pauseBeforeIteration)) return undefined;
    return new Promise((resolve) => this.drains.push(resolve));
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    for (const waiter of this.waiters.splice(0)) waiter.resolve({ value: undefined, done: true });
    this.release();
  }

  fail(error: unknown): void {
    if (this.done) return;
    this.failed = true;
    this.error = error;
    this.done = true;
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
    this.release();
  }

  /** Drops buffered items and stops buffering (used when nobody will iterate). */
  discard(): void {
    this.buffering = false;
    this.items.length = 0;
    this.size = 0;
    this.release();
  }

  /** Lets every waiting producer go on. */
  private release(): void {
    const drains = this.drains;
    this.drains = [];
    for (const drain of drains) drain();
  }

  private take(): T {
    const item = this.items.shift()!;
    this.size -= this.sizeOf(item);
    if (this.size <= this.highWaterMark / 2) this.release();
    return item;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    this.iterating = true;
    return {
      next: (): Promise<IteratorResult<T>> => {
        if (this.items.length > 0) return Promise.resolve({ value: this.take(), done: false });
        if (this.failed) return Promise.reject(this.error);
        if (this.done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
      },
      return: (): Promise<IteratorResult<T>> => {
        // The consumer left: nothing more is kept for it, and no producer waits on it.
        this.discard();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
