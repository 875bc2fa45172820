"""The runner's seccomp filter (`paravt.tools.sandbox.runner` installs it after its rlimits).

The syscalls to refuse are the isolation policy's (`isolation.SECCOMP_DENIED`, sent in the
runner's config); here only their numbers per architecture (AUDIT_ARCH value) and the classic BPF
program. Standard library only: the runner imports this module before it drops privileges."""

from __future__ import annotations

_SECCOMP_ARCH = {
    "x86_64": (
        0xC000003E,
        {
            "unshare": 272,
            "setns": 308,
            "mount": 165,
            "umount2": 166,
            "pivot_root": 155,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "clone": 56,
            "clone3": 435,
            "seccomp": 317,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "unshare": 97,
            "setns": 268,
            "mount": 40,
            "umount2": 39,
            "pivot_root": 41,
            "open_tree": 428,
            "move_mount": 429,
            "fsopen": 430,
            "fsconfig": 431,
            "fsmount": 432,
            "fspick": 433,
            "mount_setattr": 442,
            "clone": 220,
            "clone3": 435,
            "seccomp": 277,
        },
    ),
}
_CLONE_NEW_ANY = 0x7E020080  # CLONE_NEW{NS,CGROUP,UTS,IPC,USER,PID,NET,TIME}


def seccomp_program(
    arch: int, nr: dict[str, int], deny: list[str]
) -> list[tuple[int, int, int, int]]:
    """Classic BPF: EPERM for the ``deny`` syscalls (the policy's choice,
    `isolation.SECCOMP_DENIED`) and clone with CLONE_NEW* flags, ENOSYS for clone3 (libc then falls
    back to clone, whose flags
    are checkable), EPERM for any other ABI."""
    ld, jeq, jset, jge, ret = 0x20, 0x15, 0x45, 0x35, 0x06
    allow, eperm, enosys = 0x7FFF0000, 0x00050000 | 1, 0x00050000 | 38
    denied = [nr[k] for k in deny]
    # layout: 0 ld arch | 1 jeq arch | 2 ret eperm | 3 ld nr | 4 jge x32 | denied… | clone |
    #         clone3 | ret allow | ld flags | jset | ret allow | ret eperm | ret enosys
    n = len(denied)
    tail = 5 + n + 2  # index of "ret allow" after the syscall checks
    deny_at, enosys_at = tail + 4, tail + 5
    prog = [
        (ld, 0, 0, 4),
        (jeq, 1, 0, arch),
        (ret, 0, 0, eperm),
        (ld, 0, 0, 0),
        (jge, deny_at - 5, 0, 0x40000000),
    ]
    for i, number in enumerate(denied):
        prog.append((jeq, deny_at - (5 + i) - 1, 0, number))
    prog.append((jeq, tail + 1 - (5 + n) - 1, 0, nr["clone"]))  # → ld flags
    prog.append((jeq, enosys_at - (6 + n) - 1, 0, nr["clone3"]))
    prog += [
        (ret, 0, 0, allow),
        (ld, 0, 0, 16),
        (jset, 1, 0, _CLONE_NEW_ANY),
        (ret, 0, 0, allow),
        (ret, 0, 0, eperm),
        (ret, 0, 0, enosys),
    ]
    return prog


def install_seccomp(deny: list[str]) -> bool:
    """Install the filter on every thread of this process (and so on all its descendants)."""
    import ctypes
    import platform

    spec = _SECCOMP_ARCH.get(platform.machine())
    if spec is None:
        return False
    arch, nr = spec
    prog = seccomp_program(arch, nr, deny)

    class SockFilter(ctypes.Structure):
        _fields_ = [
            ("code", ctypes.c_ushort),
            ("jt", ctypes.c_ubyte),
            ("jf", ctypes.c_ubyte),
            ("k", ctypes.c_uint),
        ]

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.POINTER(SockFilter))]

    filters = (SockFilter * len(prog))(*(SockFilter(*ins) for ins in prog))
    fprog = SockFprog(len(prog), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        return False
    # seccomp(SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_TSYNC, &fprog)
    return libc.syscall(nr["seccomp"], 1, 1, ctypes.byref(fprog)) == 0
