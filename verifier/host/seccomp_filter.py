"""The seccomp filter every sandbox runs under, compiled with libseccomp (through `pyseccomp`) and loaded by
bubblewrap before the sandboxed program starts, so it holds for the program's whole life and every process it
forks.

The filter allows by default and refuses (EPERM) the system calls that would let code change what it is
confined by or reach past it: the mount family and the new mount API, namespaces (`unshare`, `setns`, `clone`
with a namespace flag; `clone3`, whose flags a filter cannot read, answers ENOSYS so the C library falls back
to `clone`), tracing and reading other processes (`ptrace`, `process_vm_*`, `perf_event_open`), kernel
programs and modules (`bpf`, `*_module`, `kexec_*`), keyrings, handles to files outside the view
(`open_by_handle_at`), io_uring (which runs system calls the filter never sees), and the kinds of memory a
resident-set limit cannot see (`memfd_create`, System V `shmget`). Where libseccomp is missing the sandbox runs
without this layer and says so (`isolation.layers()`).
"""

from __future__ import annotations

import errno
import functools
import os
import tempfile

DENIED = (
    # the filesystem view: mounts, old and new API
    "mount", "umount2", "pivot_root", "chroot", "fsopen", "fsconfig", "fsmount", "fspick", "move_mount",
    "open_tree", "mount_setattr",
    # namespaces
    "unshare", "setns",
    # other processes, the kernel's own state
    "ptrace", "process_vm_readv", "process_vm_writev", "perf_event_open", "bpf", "userfaultfd", "kcmp",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load", "reboot", "swapon",
    "swapoff", "acct", "syslog", "iopl", "ioperm", "quotactl", "quotactl_fd", "lookup_dcookie",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "sethostname", "setdomainname", "vhangup",
    "keyctl", "add_key", "request_key", "open_by_handle_at", "name_to_handle_at", "uselib",
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    # memory the resident-set meter cannot see
    "memfd_create", "shmget",
)  # fmt: skip
CLONE_NAMESPACE_FLAGS = (
    0x00020000,  # CLONE_NEWNS
    0x02000000,  # CLONE_NEWCGROUP
    0x04000000,  # CLONE_NEWUTS
    0x08000000,  # CLONE_NEWIPC
    0x10000000,  # CLONE_NEWUSER
    0x20000000,  # CLONE_NEWPID
    0x40000000,  # CLONE_NEWNET
)  # CLONE_NEWTIME exists only for unshare and clone3, both refused


@functools.cache
def program() -> bytes | str:
    """The filter as a BPF program (bytes) for bubblewrap's `--seccomp`, or why it cannot be built here."""
    try:
        import pyseccomp as seccomp
    except (ImportError, RuntimeError, OSError) as exc:  # pyseccomp raises RuntimeError without libseccomp
        return f"libseccomp is not usable from Python ({type(exc).__name__}: {exc}); `pip install pyseccomp`"
    try:
        rules = seccomp.SyscallFilter(seccomp.ALLOW)
        for name in DENIED:
            try:
                rules.add_rule(seccomp.ERRNO(errno.EPERM), name)
            except (OSError, ValueError, RuntimeError):  # a call this architecture does not have
                continue
        rules.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
        for flag in CLONE_NAMESPACE_FLAGS:
            rules.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
        with tempfile.TemporaryFile() as out:
            rules.export_bpf(out)
            out.seek(0)
            return out.read()
    except (OSError, ValueError, RuntimeError) as exc:
        return f"libseccomp could not build the filter: {exc}"


def open_program() -> int:
    """A readable descriptor holding the compiled filter, for one sandbox start (the caller closes it)."""
    compiled = program()
    if isinstance(compiled, str):
        raise RuntimeError(compiled)
    read, write = os.pipe()
    try:
        os.write(write, compiled)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read
