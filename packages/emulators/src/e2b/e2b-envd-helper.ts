/**
 * The part of envd that must act inside the sandbox: a Python 3 program (E2B templates ship python3) run
 * through the backend's exec as `python3 -c <boot> <op> <json args>` (the source in an environment variable), so every file operation happens
 * in the sandbox's own filesystem with the kernel enforcing its view, never through a host path.
 *
 * It does what envd (e2b-dev/infra, packages/envd) does, as observed from its behaviour, not its code:
 * Stat/ListDir describe entries like Go's `os.Lstat` + `FileMode.String()` (a symlink carries its resolved
 * target and its target's type and mode), MakeDir/Move/uploads create missing parents owned by the
 * requesting user (envd runs as root and chowns), uploads truncate and then set `user.e2b.*` xattrs as the
 * file's metadata, and WatchDir is inotify with fsnotify's event mapping.
 *
 * Output protocol: one JSON line `{"ok": value}` or `{"err": {"code", "message"}}`; `read` follows its
 * `ok` line with base64 lines of the content, `watch` with one `{"ev": event}` line per event.
 */

/** The helper's source. Kept free of `${` so it can live in a template literal. */
export const ENVD_HELPER_SOURCE: string = String.raw`
import base64, ctypes, errno, json, os, pwd, grp, shutil, stat as S, struct, sys, tarfile, time
os.umask(0o022)
def out(v):
    sys.stdout.write(json.dumps(v) + "\n"); sys.stdout.flush()
def fail(code, msg):
    out({"err": {"code": code, "message": msg}}); sys.exit(0)
LETTERS = [(S.S_ISDIR, "d"), (S.S_ISLNK, "L"), (S.S_ISBLK, "D"), (S.S_ISCHR, "Dc"), (S.S_ISFIFO, "p"), (S.S_ISSOCK, "S")]
def gomode(m):
    s = ""
    for test, letter in LETTERS:
        if test(m):
            s += letter
    if m & S.S_ISUID: s += "u"
    if m & S.S_ISGID: s += "g"
    if m & S.S_ISVTX: s += "t"
    if s == "": s = "-"
    rwx = "rwxrwxrwx"
    return s + "".join(rwx[i] if m & (1 << (8 - i)) else "-" for i in range(9))
def ftype(m):
    if S.S_ISREG(m): return "FILE_TYPE_FILE"
    if S.S_ISDIR(m): return "FILE_TYPE_DIRECTORY"
    if S.S_ISLNK(m): return "FILE_TYPE_SYMLINK"
    return "FILE_TYPE_UNSPECIFIED"
def stamp(ns):
    sec, nano = divmod(ns, 1000000000)
    base = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
    return base + ("." + ("%09d" % nano) if nano else "") + "Z"
def owner(uid):
    try: return pwd.getpwuid(uid).pw_name
    except KeyError: return str(uid)
def group(gid):
    try: return grp.getgrgid(gid).gr_name
    except KeyError: return str(gid)
def metadata(path):
    try: names = os.listxattr(path)
    except OSError: return None
    md = {}
    for n in names:
        if not n.startswith("user.e2b."): continue
        try: md[n[9:]] = os.getxattr(path, n).decode("utf-8")
        except (OSError, UnicodeDecodeError): pass
    return md or None
def resolve(path):
    # Go's filepath.EvalSymlinks: the fully resolved path, or an error when a link dangles.
    real = os.path.realpath(path)
    os.stat(real)
    return real
def entry(path):
    st = os.lstat(path)
    e = {"name": os.path.basename(path), "path": path, "size": str(st.st_size),
         "permissions": gomode(st.st_mode), "owner": owner(st.st_uid), "group": group(st.st_gid),
         "modifiedTime": stamp(st.st_mtime_ns)}
    if S.S_ISLNK(st.st_mode):
        try:
            target = resolve(path)
        except OSError:
            target = path
        e["symlinkTarget"] = target
        try:
            ts = os.stat(target)
            e["type"] = ftype(ts.st_mode); e["mode"] = ts.st_mode & 0o777
        except OSError:
            e["type"] = "FILE_TYPE_UNSPECIFIED"; e["mode"] = 0
    else:
        e["type"] = ftype(st.st_mode); e["mode"] = st.st_mode & 0o777
    md = metadata(path)
    if md: e["metadata"] = md
    return e
def ensure_dirs(path, uid, gid):
    parts = []
    p = path
    while p not in ("/", ""):
        parts.append(p); p = os.path.dirname(p)
    for sub in reversed(parts):
        try:
            st = os.stat(sub)
        except FileNotFoundError:
            try: os.mkdir(sub, 0o755)
            except FileExistsError: continue
            except OSError as ex: raise RuntimeError("failed to create directory: %s" % ex)
            chown(sub, uid, gid)
            continue
        if not S.S_ISDIR(st.st_mode): raise RuntimeError("path is a file: %s" % sub)
def chown(path, uid, gid, fd=None):
    if os.geteuid() != 0 or uid is None: return
    try:
        if fd is None: os.chown(path, uid, gid, follow_symlinks=False)
        else: os.fchown(fd, uid, gid)
    except OSError as ex:
        raise RuntimeError("error changing file ownership: %s" % ex)
def walk(requested, root, depth, level, acc):
    try: names = sorted(os.listdir(root))
    except OSError as ex: fail("internal", "error reading directory %s: %s" % (root, ex))
    for name in names:
        real = os.path.join(root, name)
        try: e = entry(real)
        except FileNotFoundError: continue
        e["path"] = os.path.join(requested, name)
        acc.append(e)
        if level < depth and S.S_ISDIR(os.lstat(real).st_mode):
            walk(e["path"], real, depth, level + 1, acc)
def op_stat(a):
    try: out({"ok": entry(a["path"])})
    except FileNotFoundError as ex: fail("not_found", "file not found: %s" % ex)
    except OSError as ex: fail("internal", "error getting file info: %s" % ex)
def op_list(a):
    path = a["path"]
    try: root = resolve(path)
    except FileNotFoundError as ex: fail("not_found", "path not found: %s" % ex)
    except OSError as ex:
        if ex.errno == errno.ELOOP: fail("failed_precondition", "cyclic symlink or chain >255 links at %s" % json.dumps(path))
        fail("internal", "error resolving symlink: %s" % ex)
    if not os.path.isdir(root): fail("invalid_argument", "path is not a directory: %s" % root)
    acc = []
    walk(path, root, a["depth"], 1, acc)
    out({"ok": acc})
def op_mkdir(a):
    path = a["path"]
    try:
        st = os.stat(path)
        if S.S_ISDIR(st.st_mode): fail("already_exists", "directory already exists: %s" % path)
        fail("invalid_argument", "path already exists but it is not a directory: %s" % path)
    except FileNotFoundError: pass
    except OSError as ex: fail("internal", "error getting file info: %s" % ex)
    try: ensure_dirs(path, a.get("uid"), a.get("gid"))
    except RuntimeError as ex: fail("internal", str(ex))
    out({"ok": entry(path)})
def op_move(a):
    src, dst = a["source"], a["destination"]
    try: ensure_dirs(os.path.dirname(dst), a.get("uid"), a.get("gid"))
    except RuntimeError as ex: fail("internal", str(ex))
    try: os.rename(src, dst)
    except FileNotFoundError as ex: fail("not_found", "source file not found: %s" % ex)
    except OSError as ex: fail("internal", "error renaming: %s" % ex)
    out({"ok": entry(dst)})
def op_remove(a):
    path = a["path"]
    try:
        if os.path.isdir(path) and not os.path.islink(path): shutil.rmtree(path)
        else: os.unlink(path)
    except FileNotFoundError: pass
    except OSError as ex: fail("internal", "error removing file or directory: %s" % ex)
    out({"ok": {}})
def set_metadata(fd, md):
    try: existing = os.listxattr(fd)
    except OSError as ex:
        if ex.errno in (errno.ENOTSUP, errno.EOPNOTSUPP): return
        raise
    for n in existing:
        if n.startswith("user.e2b.") and n[9:] not in md: os.removexattr(fd, n)
    for k, v in md.items(): os.setxattr(fd, "user.e2b." + k, v.encode("utf-8"))
def op_write(a):
    path, uid, gid = a["path"], a.get("uid"), a.get("gid")
    try: ensure_dirs(os.path.dirname(path), uid, gid)
    except RuntimeError as ex: fail("internal", "error ensuring directories: %s" % ex)
    try:
        if os.path.isdir(path): fail("bad_request", "path is a directory: %s" % path)
    except OSError: pass
    try: fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666)
    except OSError as ex:
        if ex.errno == errno.ENOSPC: fail("insufficient_storage", "not enough inodes available: %s" % ex)
        fail("internal", "error opening file: %s" % ex)
    try:
        chown(path, uid, gid, fd)
        src = sys.stdin.buffer
        while True:
            chunk = src.read(1 << 20)
            if not chunk: break
            view = memoryview(chunk)
            while view:
                n = os.write(fd, view); view = view[n:]
        try: set_metadata(fd, a.get("metadata") or {})
        except OSError as ex:
            if ex.errno in (errno.ENOSPC, errno.EDQUOT): fail("insufficient_storage", "not enough space for file metadata: %s" % ex)
            fail("internal", "error writing file metadata: %s" % ex)
    except RuntimeError as ex: fail("internal", str(ex))
    except OSError as ex:
        if ex.errno == errno.ENOSPC: fail("insufficient_storage", "not enough disk space available")
        fail("internal", "error writing file: %s" % ex)
    finally: os.close(fd)
    e = {"path": path, "name": os.path.basename(path), "type": "file"}
    md = metadata(path)
    if md: e["metadata"] = md
    out({"ok": e})
def op_read(a):
    path = a["path"]
    try: st = os.stat(path)
    except FileNotFoundError: fail("not_found", "path '%s' does not exist" % path)
    except OSError as ex: fail("internal", "error checking if path exists '%s': %s" % (path, ex))
    if S.S_ISDIR(st.st_mode): fail("bad_request", "path '%s' is a directory" % path)
    try: f = open(path, "rb")
    except OSError as ex: fail("internal", "error opening file '%s': %s" % (path, ex))
    out({"ok": {"size": st.st_size}})
    with f:
        while True:
            chunk = f.read(3 * 16384)
            if not chunk: break
            sys.stdout.write(base64.b64encode(chunk).decode("ascii") + "\n")
    sys.stdout.flush()
def op_users(a):
    out({"ok": [[u.pw_name, u.pw_uid, u.pw_gid, u.pw_dir] for u in pwd.getpwall()]})
def op_sysinfo(a):
    info = {"cpus": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()}
    try:
        mem = {}
        with open("/proc/meminfo") as f:
            for line in f:
                k, v = line.split(":", 1); mem[k] = int(v.split()[0]) * 1024
        info["memTotal"] = mem.get("MemTotal", 0); info["memAvailable"] = mem.get("MemAvailable", 0)
        info["memCache"] = mem.get("Cached", 0)
    except (OSError, ValueError): pass
    try:
        vfs = os.statvfs(a.get("path") or "/")
        info["diskTotal"] = vfs.f_blocks * vfs.f_frsize; info["diskUsed"] = (vfs.f_blocks - vfs.f_bfree) * vfs.f_frsize
    except OSError: pass
    out({"ok": info})
def op_pack(a):
    # A gzip tarball of the given directories on stdout as base64 lines (lossy snapshots).
    out({"ok": "pack"})
    import io
    class B64:
        def __init__(self): self.buf = b""
        def write(self, data):
            self.buf += data
            n = len(self.buf) - len(self.buf) % 49152
            if n: sys.stdout.write(base64.b64encode(self.buf[:n]).decode("ascii") + "\n"); self.buf = self.buf[n:]
            return len(data)
        def flush(self): pass
        def close(self):
            if self.buf: sys.stdout.write(base64.b64encode(self.buf).decode("ascii") + "\n")
    sink = B64()
    with tarfile.open(fileobj=sink, mode="w|gz") as tar:
        for d in a["paths"]:
            if os.path.lexists(d): tar.add(d, arcname=d.lstrip("/"))
    sink.close(); sys.stdout.flush()
def op_unpack(a):
    with tarfile.open(fileobj=sys.stdin.buffer, mode="r|gz") as tar:
        for member in tar:
            tar.extract(member, "/", numeric_owner=True)
    out({"ok": {}})
IN_MODIFY, IN_ATTRIB, IN_MOVED_FROM, IN_MOVED_TO, IN_CREATE, IN_DELETE, IN_DELETE_SELF, IN_MOVE_SELF = 0x2, 0x4, 0x40, 0x80, 0x100, 0x200, 0x400, 0x800
IN_ISDIR, IN_IGNORED, IN_Q_OVERFLOW = 0x40000000, 0x8000, 0x4000
def op_watch(a):
    root, recursive, with_entry = a["path"], a.get("recursive", False), a.get("includeEntry", False)
    try: st = os.stat(root)
    except FileNotFoundError as ex: fail("not_found", "path %s not found: %s" % (root, ex))
    except OSError as ex: fail("internal", "error statting path %s: %s" % (root, ex))
    if not S.S_ISDIR(st.st_mode): fail("invalid_argument", "path %s not a directory" % root)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.inotify_init1(0)
    if fd < 0: fail("internal", "error creating watcher: %s" % os.strerror(ctypes.get_errno()))
    mask = IN_MODIFY | IN_ATTRIB | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_DELETE_SELF | IN_MOVE_SELF
    wds = {}
    def add(d):
        wd = libc.inotify_add_watch(fd, d.encode("utf-8", "surrogateescape"), mask)
        if wd >= 0: wds[wd] = d
        return wd
    if add(root) < 0: fail("internal", "error adding path %s to watcher: %s" % (root, os.strerror(ctypes.get_errno())))
    if recursive:
        for d, subdirs, _ in os.walk(root):
            for s in subdirs: add(os.path.join(d, s))
    out({"ok": "start"})
    def emit(kind, path):
        ev = {"name": os.path.relpath(path, root), "type": kind}
        if with_entry and kind in ("EVENT_TYPE_CREATE", "EVENT_TYPE_WRITE", "EVENT_TYPE_CHMOD"):
            try: ev["entry"] = entry(path)
            except OSError: pass
        sys.stdout.write(json.dumps({"ev": ev}) + "\n")
    while True:
        data = os.read(fd, 65536)
        i = 0
        while i + 16 <= len(data):
            wd, m, _cookie, ln = struct.unpack_from("iIII", data, i)
            name = data[i + 16:i + 16 + ln].rstrip(b"\0").decode("utf-8", "surrogateescape")
            i += 16 + ln
            base = wds.get(wd)
            if base is None: continue
            path = os.path.join(base, name) if name else base
            if m & IN_IGNORED:
                wds.pop(wd, None); continue
            if m & (IN_CREATE | IN_MOVED_TO):
                emit("EVENT_TYPE_CREATE", path)
                if recursive and m & IN_ISDIR:
                    add(path)
                    for d, subdirs, files in os.walk(path):
                        for s in subdirs:
                            add(os.path.join(d, s)); emit("EVENT_TYPE_CREATE", os.path.join(d, s))
                        for f in files: emit("EVENT_TYPE_CREATE", os.path.join(d, f))
            if m & (IN_MOVED_FROM | IN_MOVE_SELF): emit("EVENT_TYPE_RENAME", path)
            if m & IN_ATTRIB: emit("EVENT_TYPE_CHMOD", path)
            if m & IN_MODIFY: emit("EVENT_TYPE_WRITE", path)
            if m & (IN_DELETE | IN_DELETE_SELF): emit("EVENT_TYPE_REMOVE", path)
        sys.stdout.flush()
OPS = {"stat": op_stat, "list": op_list, "mkdir": op_mkdir, "move": op_move, "remove": op_remove,
       "write": op_write, "read": op_read, "users": op_users, "sysinfo": op_sysinfo, "watch": op_watch,
       "pack": op_pack, "unpack": op_unpack}
try:
    OPS[sys.argv[1]](json.loads(sys.argv[2]))
except KeyboardInterrupt:
    pass
except BrokenPipeError:
    pass
`;
