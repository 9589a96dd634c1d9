/**
 * Where container engines keep a container's filesystem on the host: a path below one of these prefixes is
 * the sandbox path that follows it (`/var/lib/docker/overlay2/<id>/merged/tmp/x` is the sandbox's `/tmp/x`).
 * Each pattern matches the host part only, up to the point where the sandbox's own root begins.
 */
const ENGINE_ROOTS: readonly RegExp[] = [
  // overlay2, overlay and fuse-overlayfs layers: <root>/<driver>/<layer id>[-init]/{merged,diff,work}
  /(?:\/[^\s"'`:;,()<>]+)?\/(?:overlay2?|fuse-overlayfs)\/[0-9a-zA-Z]{12,}(?:-init)?\/(?:merged|diff|work)(?=\/|\b)/g,
  // containerd snapshotters: .../io.containerd.snapshotter.v1.<name>/snapshots/<n>/fs
  /(?:\/[^\s"'`:;,()<>]+)?\/io\.containerd\.snapshotter\.v1\.[\w-]+\/snapshots\/\d+\/fs(?=\/|\b)/g,
  // a task's rootfs: .../io.containerd.runtime.v2.task/<namespace>/<id>/rootfs
  /(?:\/[^\s"'`:;,()<>]+)?\/io\.containerd\.runtime\.v[12]\.task\/[\w.-]+\/[0-9a-zA-Z]{12,}\/rootfs(?=\/|\b)/g,
  // aufs, btrfs, zfs, devicemapper and vfs graph drivers
  /(?:\/[^\s"'`:;,()<>]+)?\/(?:aufs\/mnt|btrfs\/subvolumes|zfs\/graph|vfs\/dir)\/[0-9a-zA-Z]{12,}(?:-init)?(?=\/|\b)/g,
  /(?:\/[^\s"'`:;,()<>]+)?\/devicemapper\/mnt\/[0-9a-zA-Z]{12,}\/rootfs(?=\/|\b)/g,
];

/** Whatever is left of an engine's data root (`/var/lib/docker/...`) is not the user's business either. */
const DATA_ROOTS = /\/var\/lib\/(?:docker|containerd|containers)(?:\/[^\s"'`:;,()<>]*)?/g;

/**
 * Removes host paths of a container engine's storage from `text`, leaving the sandbox path the user gave:
 * `open /var/lib/docker/overlay2/3f…/merged/tmp/a: file name too long` becomes
 * `open /tmp/a: file name too long`. Any other path under an engine's data root becomes `[host path]`.
 */
export function scrubHostPaths(text: string): string {
  let out = text;
  for (const pattern of ENGINE_ROOTS) {
    out = out.replace(pattern, (_match, offset: number, whole: string) =>
      // A layer root with nothing after it is the sandbox's `/`.
      whole[offset + _match.length] === "/" ? "" : "/",
    );
  }
  return out.replace(DATA_ROOTS, "[host path]");
}
