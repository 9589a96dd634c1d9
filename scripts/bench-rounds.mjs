// Shared by the packages' bench/ scripts: runs variants of one operation in rounds, rotating which goes
// first, so that drift on a loaded machine (other engineers' jobs, caches, GC) hits every variant alike,
// and summarizes each variant by its median and spread. Benchmarks print ratios measured in the same run;
// they never assert timings.

/** Milliseconds `fn` takes (awaited). */
export async function timeOf(fn) {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** The q-quantile (0..1) of sorted numbers, interpolated. */
function quantile(sorted, q) {
  if (sorted.length === 0) return Number.NaN;
  const at = (sorted.length - 1) * q;
  const low = Math.floor(at);
  const high = Math.ceil(at);
  return sorted[low] + (sorted[high] - sorted[low]) * (at - low);
}

/** Median, quartiles and extremes of `values`. */
export function summarize(values) {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    n: sorted.length,
    median: quantile(sorted, 0.5),
    p25: quantile(sorted, 0.25),
    p75: quantile(sorted, 0.75),
    min: sorted[0],
    max: sorted[sorted.length - 1],
  };
}

/**
 * Runs every variant once per round, the starting variant rotating from round to round, after `warmup`
 * unmeasured rounds. `variants` maps a name to an async function returning a number (a measurement, e.g.
 * milliseconds) or nothing (then its duration is measured). Returns the samples per variant.
 */
export async function rotatedRounds(variants, { rounds, warmup = 1, onRound } = {}) {
  const names = Object.keys(variants);
  const samples = Object.fromEntries(names.map((name) => [name, []]));
  for (let round = -warmup; round < rounds; round++) {
    const start = ((round % names.length) + names.length) % names.length;
    for (let i = 0; i < names.length; i++) {
      const name = names[(start + i) % names.length];
      const began = performance.now();
      const value = await variants[name]();
      const measured = typeof value === "number" ? value : performance.now() - began;
      if (round >= 0) samples[name].push(measured);
    }
    if (round >= 0) onRound?.(round);
  }
  return samples;
}

const fixed = (value, digits = 1) => (Number.isFinite(value) ? value.toFixed(digits) : "-");

/**
 * Prints one markdown table: per row the median and interquartile range of `a` and `b`, and the ratio of
 * the medians (`b / a`), with a unit. `rows` are `{ name, a, b, unit, ratioName }` with `a`/`b` from
 * {@link summarize}.
 */
export function printComparison(title, aName, bName, rows) {
  console.log(`\n${title}\n`);
  console.log(`| measurement | ${aName} median (p25–p75) | ${bName} median (p25–p75) | ratio |`);
  console.log("|---|---:|---:|---:|");
  for (const row of rows) {
    const cell = (s) => `${fixed(s.median)} (${fixed(s.p25)}–${fixed(s.p75)}) ${row.unit}`;
    const ratio = row.ratio ?? row.b.median / row.a.median;
    console.log(
      `| ${row.name} | ${cell(row.a)} | ${cell(row.b)} | ${fixed(ratio, 3)} ${row.ratioName ?? ""} |`,
    );
  }
}
