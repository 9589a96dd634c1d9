import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { USERLANDS } from "../../test/sh-driver.js";
import { createTestBed, type TestBed } from "./e5-test-context.js";
import { emulatedMetrics, parseMetrics } from "./e8-metrics.js";

const call = () => ({ signal: AbortSignal.timeout(60_000) });
const text = (b: Uint8Array) => new TextDecoder().decode(b);

describe.each(USERLANDS)("E8 metrics over %s", (userland) => {
  let bed: TestBed;

  beforeAll(async () => {
    bed = await createTestBed({ userland });
  });
  afterAll(() => bed.cleanup());

  it("reports numbers read inside the sandbox, consistent with /proc and df", async () => {
    const before = Date.now();
    const metrics = await emulatedMetrics(bed.ctx)(bed.sandbox, call());
    expect(metrics.at).toBeInstanceOf(Date);
    expect(metrics.at.getTime()).toBeGreaterThanOrEqual(before);
    const memTotalKb = Number(
      /MemTotal:\s+(\d+)/.exec(text((await bed.sh("cat /proc/meminfo")).stdout))?.[1],
    );
    expect(metrics.memoryBytes).toBeGreaterThan(0);
    expect(metrics.memoryLimitBytes).toBeGreaterThan(0);
    expect(metrics.memoryLimitBytes).toBeLessThanOrEqual(memTotalKb * 1024);
    expect(metrics.cpuPercent).toBeGreaterThanOrEqual(0);
    expect(Number.isFinite(metrics.cpuPercent)).toBe(true);
    const dfUsedKb = Number(text((await bed.sh("df -P -k . | awk 'NR==2 {print $3}'")).stdout).trim());
    // Other processes write to the same disk meanwhile: the same order of magnitude is what can be asserted.
    expect(metrics.diskBytes).toBeGreaterThan(dfUsedKb * 1024 * 0.5);
    expect(metrics.diskBytes).toBeLessThan(dfUsedKb * 1024 * 1.5);
  });

  it("sees CPU use while a busy loop runs", async () => {
    // Spins until the stop file appears, so it lasts exactly as long as the measurement.
    const busy = bed.sh("rm -f stop; while [ ! -e stop ]; do :; done");
    await new Promise((resolve) => setTimeout(resolve, 100));
    const metrics = await emulatedMetrics(bed.ctx)(bed.sandbox, call()).finally(() => bed.sh("touch stop"));
    await busy;
    expect(metrics.cpuPercent).toBeGreaterThan(0);
  });
});

describe("parseMetrics", () => {
  const at = new Date(0);

  it("uses cgroup v2 values and the nanosecond clock", () => {
    const m = parseMetrics(
      [
        "cpu_usec1=1000000",
        "clock_ns1=5000000000",
        "cpu_usec2=1075000",
        "clock_ns2=5150000000",
        "mem_current=104857600",
        "mem_max=536870912",
        "mem_total_kb=2097152",
        "mem_available_kb=1048576",
        "disk_used_kb=10",
      ].join("\n"),
      at,
    );
    expect(m).toEqual({
      at,
      cpuPercent: 50,
      memoryBytes: 104857600,
      memoryLimitBytes: 536870912,
      diskBytes: 10240,
    });
  });

  it("treats an unlimited cgroup as the machine's memory and falls back to /proc/stat for CPU", () => {
    const m = parseMetrics(
      [
        "cpu_usec1=",
        "clock_ns1=%N",
        "stat1=100 0 100 800 0 0 0 0 0 0",
        "cpu_usec2=",
        "clock_ns2=%N",
        "stat2=150 0 150 900 0 0 0 0 0 0",
        "ncpu=2",
        "mem_current=1000",
        "mem_max=max",
        "mem_total_kb=4",
      ].join("\n"),
      at,
    );
    expect(m).toEqual({ at, cpuPercent: 100, memoryBytes: 1000, memoryLimitBytes: 4096 });
  });

  it("omits what could not be read instead of inventing it", () => {
    expect(parseMetrics("cpu_usec1=\nmem_current=\nmem_max=\ndisk_used_kb=\nmem_total_kb=\n", at)).toEqual({
      at,
    });
    expect(parseMetrics("mem_max=9223372036854771712\n", at)).toEqual({ at });
  });

  it("uses MemTotal - MemAvailable without a cgroup", () => {
    expect(parseMetrics("mem_total_kb=100\nmem_available_kb=40\n", at)).toEqual({
      at,
      memoryBytes: 60 * 1024,
      memoryLimitBytes: 100 * 1024,
    });
  });
});
