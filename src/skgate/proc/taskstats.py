"""The kernel's exit records (taskstats): the name of a process that did not wait to be read.

A process that execs and exits within a few milliseconds is often gone before the runner
reads ``/proc/<pid>/stat`` and ``cmdline`` on its exec event (issue 28 s7: 191-199 of 200
``opc`` of 10 ms named; under load fewer). The process-events connector carries no name
at exec (``PROC_EVENT_COMM`` is sent only for ``prctl(PR_SET_NAME)`` and writes to
``/proc/<pid>/comm``, never for the name an exec sets), and a pidfd gives nothing to read
once the process has exited. The taskstats interface of generic netlink sends, for every
exiting task of the CPUs a listener registered, a ``struct taskstats`` with its name
(``ac_comm``, what the exec set), pid, parent, start time and exit code, before the parent
can reap it: a name that does not race the exit.

What it cannot give: argv. A name set only in argv (``exec -a opc sleep``: the kernel's
name is ``sleep``) lives in the process's memory, which no exit record keeps; such a
process is named only if its argv was read while it lived.

Registering a listener needs ``CAP_NET_ADMIN`` and the host's pid and user namespaces
(Linux ``kernel/taskstats.c``: ``GENL_ADMIN_PERM``, and ``add_del_listener`` refuses other
namespaces); elsewhere :func:`open_exit_records` says why not, and the manifest says so.
Read-only: nothing here signals or changes a process.

Layout of ``struct taskstats`` (``include/uapi/linux/taskstats.h``, version 1 onwards):
``ac_exitcode`` at byte 4, ``ac_comm[32]`` at 80, ``ac_pid``, ``ac_ppid``, ``ac_btime``
(u32 each) at 128.
"""

from __future__ import annotations

# The C module itself: socket.py would add ~1.4 ms to every run's start-up converting
# its constants to enums (issue 29); the same socket type, calls and constants.
import _socket as socket
import contextlib
import errno
import os
import struct
from collections.abc import Container

from skgate.model.frozen import record

NETLINK_GENERIC = 16
_NLMSG = struct.Struct("=IHHII")
_GENL = struct.Struct("=BBH")
_NLA = struct.Struct("=HH")
_NLMSG_ERROR = 2
_NLM_F_REQUEST, _NLM_F_ACK = 1, 4
_GENL_ID_CTRL, _CTRL_CMD_GETFAMILY = 0x10, 3
_CTRL_ATTR_FAMILY_ID, _CTRL_ATTR_FAMILY_NAME = 1, 2
_TASKSTATS_CMD_GET = 1
_CMD_ATTR_REGISTER_CPUMASK, _CMD_ATTR_DEREGISTER_CPUMASK = 3, 4
_TYPE_PID, _TYPE_STATS, _TYPE_AGGR_PID = 1, 3, 4
_COMM_AT, _COMM_LEN, _IDS_AT = 80, 32, 128
_IDS = struct.Struct("=III")
#: Exit records of the whole machine's registered CPUs queue here between two drains.
RCVBUF = 8 << 20
#: Where a one-message datagram of a per-task record keeps its pid: after the netlink
#: and genetlink headers (16 + 4), the ``AGGR_PID`` attribute's header (4) and the
#: nested ``PID`` attribute's header (4): ``(len, type)`` pairs at 20 and 24.
_HEADS = struct.Struct("=HHHHI")
_HEADS_AT = _NLMSG.size + _GENL.size


class ExitRecordsUnavailable(Exception):
    """Taskstats exit records cannot be had here; the message says why (one line)."""


@record
class ExitRecord:
    """One exited task, as the kernel recorded it at its exit."""

    pid: int
    ppid: int
    comm: str
    btime: int  # start, wall-clock seconds
    exit_code: int


def _nla(kind: int, payload: bytes) -> bytes:
    size = _NLA.size + len(payload)
    return _NLA.pack(size, kind) + payload + b"\0" * (-size % 4)


def _message(family: int, cmd: int, attrs: bytes, seq: int) -> bytes:
    body = _GENL.pack(cmd, 1, 0) + attrs
    flags = _NLM_F_REQUEST | _NLM_F_ACK
    return _NLMSG.pack(_NLMSG.size + len(body), family, flags, seq, 0) + body


def _attrs(buf: bytes) -> dict[int, bytes]:
    out: dict[int, bytes] = {}
    at = 0
    while at + _NLA.size <= len(buf):
        size, kind = _NLA.unpack_from(buf, at)
        if size < _NLA.size:
            break
        out.setdefault(kind & 0x3FFF, buf[at + _NLA.size : at + size])
        at += (size + 3) & ~3
    return out


def _messages(data: bytes) -> list[tuple[int, bytes]]:
    """(type, payload after the netlink header) of each message in one datagram."""
    out = []
    at = 0
    while at + _NLMSG.size <= len(data):
        size, kind, _flags, _seq, _pid = _NLMSG.unpack_from(data, at)
        if size < _NLMSG.size:
            break
        out.append((kind, data[at + _NLMSG.size : at + size]))
        at += (size + 3) & ~3
    return out


def parse(data: bytes, family: int) -> list[ExitRecord]:
    """The per-task exit records in one datagram (thread-group totals are skipped)."""
    records = []
    for kind, payload in _messages(data):
        if kind != family or len(payload) < _GENL.size:
            continue
        aggr = _attrs(payload[_GENL.size :]).get(_TYPE_AGGR_PID)
        if aggr is None:
            continue
        inner = _attrs(aggr)
        stats = inner.get(_TYPE_STATS, b"")
        if _TYPE_PID not in inner or len(stats) < _IDS_AT + _IDS.size:
            continue
        pid, ppid, btime = _IDS.unpack_from(stats, _IDS_AT)
        raw = stats[_COMM_AT : _COMM_AT + _COMM_LEN].split(b"\0", 1)[0]
        code = struct.unpack_from("=I", stats, 4)[0]
        records.append(ExitRecord(pid, ppid, raw.decode("utf-8", "replace"), btime, code))
    return records


def _cpumask() -> bytes:
    """Every possible CPU (a task may exit on any of them)."""
    try:
        with open("/sys/devices/system/cpu/possible", encoding="ascii") as fh:
            text = fh.read().strip()
    except OSError:
        text = f"0-{max(0, (os.cpu_count() or 1) - 1)}"
    return text.encode("ascii") + b"\0"


class ExitRecords:
    """A registered listener; read it with :meth:`drain`, end it with :meth:`close`."""

    def __init__(self, sock: socket.socket, family: int, mask: bytes) -> None:
        self._sock = sock
        self._family = family
        self._mask = mask
        self.overruns = 0

    def fileno(self) -> int:
        return self._sock.fileno()

    def drain(self, limit: int = 65536, interest: Container[int] | None = None) -> list[ExitRecord]:
        """Every record queued now (never blocks).

        ``interest``: only records of these pids are parsed (issue 29: the listener hears
        every exit of the machine; a foreign one costs a ``recv`` and one ``unpack``, not
        a parse). A datagram of another layout is parsed whole, then filtered."""
        got: list[ExitRecord] = []
        recv, heads = self._sock.recv, _HEADS.unpack_from
        for _ in range(limit):
            try:
                data = recv(65536, socket.MSG_DONTWAIT)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.ENOBUFS:
                    self.overruns += 1  # the kernel dropped some: names may be missing
                    continue
                break
            if interest is not None and len(data) >= _HEADS_AT + _HEADS.size:
                size, kind = _NLMSG.unpack_from(data)[:2]
                outer, otype, inner, itype, pid = heads(data, _HEADS_AT)
                if (
                    (size, kind) == (len(data), self._family)  # one message, a record
                    and otype & 0x3FFF == _TYPE_AGGR_PID
                    and (inner, itype & 0x3FFF) == (_NLA.size + 4, _TYPE_PID)
                    and outer >= inner
                    and pid not in interest
                ):
                    continue
            records = parse(data, self._family)
            got.extend(r for r in records if interest is None or r.pid in interest)
        return got

    def close(self) -> None:
        with contextlib.suppress(OSError):
            msg = _message(
                self._family,
                _TASKSTATS_CMD_GET,
                _nla(_CMD_ATTR_DEREGISTER_CPUMASK, self._mask),
                3,
            )
            self._sock.send(msg)
        self._sock.close()


def _ask(sock: socket.socket, msg: bytes) -> bytes:
    sock.send(msg)
    sock.settimeout(2.0)
    try:
        for _ in range(64):
            for kind, payload in _messages(sock.recv(65536)):
                if kind == _NLMSG_ERROR:
                    code = -struct.unpack_from("=i", payload)[0]
                    if code:
                        raise ExitRecordsUnavailable(
                            f"taskstats refused the listener ({os.strerror(code)}: it needs "
                            "CAP_NET_ADMIN in the host's pid and user namespaces)"
                        )
                    return b""
                return payload
    finally:
        sock.settimeout(None)
    raise ExitRecordsUnavailable("taskstats did not answer")


def open_exit_records(rcvbuf: int = RCVBUF) -> ExitRecords:
    """Register for exit records; :class:`ExitRecordsUnavailable` (with why) if refused."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW | socket.SOCK_CLOEXEC, 16)
    except OSError as exc:
        raise ExitRecordsUnavailable(f"no generic netlink socket ({exc.strerror})") from None
    try:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.bind((0, 0))
        name = _nla(_CTRL_ATTR_FAMILY_NAME, b"TASKSTATS\0")
        reply = _ask(sock, _message(_GENL_ID_CTRL, _CTRL_CMD_GETFAMILY, name, 1))
        family_attr = _attrs(reply[_GENL.size :]).get(_CTRL_ATTR_FAMILY_ID)
        if family_attr is None:
            raise ExitRecordsUnavailable("the kernel has no taskstats (CONFIG_TASKSTATS)")
        family = struct.unpack_from("=H", family_attr)[0]
        mask = _cpumask()
        _ask(sock, _message(family, _TASKSTATS_CMD_GET, _nla(_CMD_ATTR_REGISTER_CPUMASK, mask), 2))
    except ExitRecordsUnavailable as exc:
        sock.close()
        if "No such file" in str(exc):
            raise ExitRecordsUnavailable("the kernel has no taskstats (CONFIG_TASKSTATS)") from None
        raise
    except OSError as exc:
        sock.close()
        raise ExitRecordsUnavailable(f"taskstats unavailable ({exc.strerror})") from None
    return ExitRecords(sock, family, mask)
