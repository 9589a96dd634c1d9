/**
 * A wrong-state answer is InvalidState whatever status the engine gives it: Docker 20.10 answers an unpause
 * that raced a pause with 500 "is not paused", and resume (which looks again on InvalidState) failed on it.
 */
import { describe, expect, it } from "vitest";
import { toDockerError } from "./docker-errors.js";

describe("toDockerError", () => {
  it("maps a wrong-state answer to InvalidState under 409 and under 500", () => {
    for (const statusCode of [409, 500]) {
      const error = toDockerError(
        { statusCode, message: "(HTTP code 500) server error - Container 3e33 is not paused" },
        "unpause",
      );
      expect(error.code).toBe("InvalidState");
    }
  });

  it("keeps other 500s a retryable Provider error", () => {
    const error = toDockerError({ statusCode: 500, message: "(HTTP code 500) server error - boom" }, "start");
    expect(error).toMatchObject({ code: "Provider", retryable: true });
  });
});
