import { expect } from "vitest";
import { SandboxError } from "../src/errors/sandbox-error.js";

/** The SandboxError `promise` rejects with; fails the test when it resolves or throws anything else. */
export const rejectionOf = (promise: PromiseLike<unknown>): Promise<SandboxError> =>
  Promise.resolve(promise).then(
    (value) => expect.unreachable(`expected a rejection, got ${String(value)}`),
    (error: unknown) =>
      SandboxError.isInstance(error) ? error : expect.unreachable(`not a SandboxError: ${String(error)}`),
  );
