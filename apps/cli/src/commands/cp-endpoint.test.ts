import { describe, expect, it } from "vitest";
import { parseCopyEndpoint } from "./cp-endpoint.js";

describe("parseCopyEndpoint", () => {
  it("reads sandbox paths with and without a provider prefix", () => {
    expect(parseCopyEndpoint("abc123:/workspace")).toEqual({
      kind: "sandbox",
      id: "abc123",
      path: "/workspace",
    });
    expect(parseCopyEndpoint("local:abc123:/a:b c")).toEqual({
      kind: "sandbox",
      id: "local:abc123",
      path: "/a:b c",
    });
    expect(parseCopyEndpoint("docker:9f_x.y-z:relative/p")).toEqual({
      kind: "sandbox",
      id: "docker:9f_x.y-z",
      path: "relative/p",
    });
    expect(parseCopyEndpoint("local:abc:/new\nline")).toEqual({
      kind: "sandbox",
      id: "local:abc",
      path: "/new\nline",
    });
  });

  it("treats explicit host paths as host paths even with a colon", () => {
    for (const path of ["/tmp/a:b", "./a:b", "../x:y", ".", "plain-file", "dir/with/slash"]) {
      expect(parseCopyEndpoint(path)).toEqual({ kind: "host", path });
    }
  });

  it("reads - as stdio and rejects empty paths", () => {
    expect(parseCopyEndpoint("-")).toEqual({ kind: "stdio" });
    expect(() => parseCopyEndpoint("")).toThrow(/empty path/);
    expect(() => parseCopyEndpoint("local:abc:")).toThrow(/missing the path/);
  });
});
