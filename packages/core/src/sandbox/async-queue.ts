/**
 * A push-based async iterable: producers `push` and `end`/`fail`, a consumer iterates. Items pushed before
 * iteration starts are kept, so nothing produced early is lost.
 */
export class AsyncQueue<T> implements AsyncIterable<T> {
  private readonly items: T[] = [];
  private readonly waiters: { resolve(r: IteratorResult<T>): void; reject(e: unknown): void }[] = [];
  private done = false;
  private error: unknown;
  private failed = false;
  private buffering = true;

  push(item: T): void {
    if (this.done) return;
    const waiter = this.waiters.shift();
    if (waiter) waiter.resolve({ value: item, done: false });
    else if (this.buffering) this.items.push(item);
  }

  end(): void {
    if (this.done) return;
    this.done = true;
    for (const waiter of this.waiters.splice(0)) waiter.resolve({ value: undefined, done: true });
  }

  fail(error: unknown): void {
    if (this.done) return;
    this.failed = true;
    this.error = error;
    this.done = true;
    for (const waiter of this.waiters.splice(0)) waiter.reject(error);
  }

  /** Drops buffered items and stops buffering (used when nobody will iterate). */
  discard(): void {
    this.buffering = false;
    this.items.length = 0;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: (): Promise<IteratorResult<T>> => {
        if (this.items.length > 0) return Promise.resolve({ value: this.items.shift()!, done: false });
        if (this.failed) return Promise.reject(this.error);
        if (this.done) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve, reject) => this.waiters.push({ resolve, reject }));
      },
      return: (): Promise<IteratorResult<T>> => {
        this.items.length = 0;
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
