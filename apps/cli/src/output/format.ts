/** Human byte size: `512 B`, `1.5 KiB`, `20.0 MiB`. */
export function formatBytes(bytes: number): string {
  if (!Number.isFinite(bytes)) return "?";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${units[unit]}`;
}

/** Human duration of a positive number of milliseconds: `850ms`, `12s`, `5m`, `3h`, `2d`. */
export function formatDuration(ms: number): string {
  const abs = Math.abs(ms);
  if (abs < 1000) return `${Math.round(abs)}ms`;
  // Round first, then pick the unit, so 59.9 minutes reads "1h", not "60m".
  const seconds = Math.round(abs / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.round(abs / 60_000);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.round(abs / 3_600_000);
  if (hours < 24) return `${hours}h`;
  return `${Math.round(abs / 86_400_000)}d`;
}

/** `5m ago` / `in 2h` relative to `now`; `-` when there is no date. */
export function formatRelative(date: Date | undefined, now: number = Date.now()): string {
  if (!date || Number.isNaN(date.getTime())) return "-";
  const delta = date.getTime() - now;
  return delta >= 0 ? `in ${formatDuration(delta)}` : `${formatDuration(delta)} ago`;
}

/** `k=v,k2=v2`, sorted by key; `-` when empty. */
export function formatLabels(labels: Readonly<Record<string, string>>): string {
  const keys = Object.keys(labels).sort();
  if (keys.length === 0) return "-";
  return keys.map((key) => `${key}=${labels[key]}`).join(",");
}
