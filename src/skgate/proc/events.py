"""The Linux process-events connector: every fork, exec and exit, as the kernel reports it.

A scan of ``/proc`` samples the owned tree: a process that lives less than one scan
interval and is reaped by its own parent is never seen (C3 asks for the *exact*
ownership record). The process-events connector (netlink ``NETLINK_CONNECTOR``, group
``CN_IDX_PROC``) reports every fork, exec, exit, ``setsid`` and ``PR_SET_NAME`` on the
machine as it happens, including processes that live for microseconds.

Protocol (``linux/connector.h``, ``linux/cn_proc.h``), all native byte order::

    nlmsghdr  len:u32 type:u16 flags:u16 seq:u32 pid:u32          (16 bytes)
    cn_msg    idx:u32 val:u32 seq:u32 ack:u32 len:u16 flags:u16   (20 bytes)
    proc_event what:u32 cpu:u32 timestamp_ns:u64, then per ``what``:
      FORK  parent_pid parent_tgid child_pid child_tgid
      EXEC  pid tgid
      SID   pid tgid
      COMM  pid tgid comm[16]
      EXIT  pid tgid exit_code exit_signal [parent_pid parent_tgid]

The subscriber sends ``PROC_CN_MCAST_LISTEN`` (the 4-byte form every kernel since 2.6.15
accepts; the 8-byte filter form of 6.6 would be silently ignored by older kernels).
Before Linux 6.6 the subscription needs ``CAP_NET_ADMIN`` (the kernel answers EPERM);
since 6.6 any user of the initial user and pid namespaces may subscribe; inside another
namespace (a container) the kernel ignores the request and never answers. The answer is
awaited (one second at most), and any refusal raises :class:`EventsUnavailable` with the
reason: the runner then falls back to the scan.

Nothing here signals anything (C4: observing is read-only); this module only parses.
Identity by (pid, start time) is done by :mod:`skgate.proc.owned`, which knows the tree.
"""

from __future__ import annotations

# The C module itself: socket.py would add ~1.4 ms to every run's start-up converting
# its constants to enums (issue 29); the same socket type, calls and constants.
import _socket as socket
import array
import contextlib
import enum
import errno
import functools
import os
import struct
import time
from collections.abc import Collection, Container, Iterator

from skgate.model.frozen import record

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from skgate.proc.taskstats import ExitRecords

NETLINK_CONNECTOR = 11
CN_IDX_PROC = 1
CN_VAL_PROC = 1
PROC_CN_MCAST_LISTEN = 1
PROC_CN_MCAST_IGNORE = 2
NLMSG_DONE = 3
SO_RCVBUFFORCE = 33

#: Receive buffer asked for: the kernel drops events (``ENOBUFS``) when the runner falls
#: behind a burst; 16 MiB holds about 20,000 queued events (each skb costs ~768 bytes).
RCVBUF = 16 << 20

_NL = struct.Struct("=IHHII")
_CN = struct.Struct("=IIIIHH")
_HEAD = struct.Struct("=IIQ")  # what, cpu, timestamp_ns
_HDR = _NL.size + _CN.size  # 36: where proc_event starts
_DATA = _HDR + _HEAD.size  # 52: where the event data starts
_FOUR = struct.Struct("=IIII")
_TWO = struct.Struct("=II")
_COMM = struct.Struct("=II16s")
_SUBJECT = struct.Struct("=I")  # the second data word: the fork's parent, else the tgid
_SUBJECT_AT = _DATA + 4


class Kind(enum.IntEnum):
    """``enum what`` of ``struct proc_event`` (the subset skgate follows)."""

    NONE = 0
    FORK = 0x1
    EXEC = 0x2
    SID = 0x80
    COMM = 0x200
    EXIT = 0x80000000


_KINDS = {k.value: k for k in Kind}


class EventsUnavailable(Exception):
    """The connector cannot be used here; ``str()`` says why (one line)."""


@record
class ProcEvent:
    """One process event. ``pid``/``tgid`` is the subject (the child, for a fork)."""

    kind: Kind
    ts_ns: int  # CLOCK_MONOTONIC nanoseconds when the kernel sent it
    pid: int
    tgid: int
    parent_tgid: int = 0  # FORK only
    exit_code: int = 0  # EXIT only: a wait status ((code << 8) | signal)
    comm: str = ""  # COMM only

    @property
    def is_thread(self) -> bool:
        """A thread's event (pid != tgid): skgate follows processes, not threads."""
        return self.pid != self.tgid


def parse(buf: bytes) -> ProcEvent | None:
    """One netlink datagram to an event; None for anything that is not a followed one."""
    if len(buf) < _DATA:
        return None
    idx, val = struct.unpack_from("=II", buf, _NL.size)
    if idx != CN_IDX_PROC or val != CN_VAL_PROC:
        return None
    what, _cpu, ts = _HEAD.unpack_from(buf, _HDR)
    kind = _KINDS.get(what)
    try:
        if kind is Kind.FORK:
            _ppid, ptgid, cpid, ctgid = _FOUR.unpack_from(buf, _DATA)
            return ProcEvent(kind, ts, cpid, ctgid, parent_tgid=ptgid)
        if kind is Kind.EXIT:
            pid, tgid, code, _sig = _FOUR.unpack_from(buf, _DATA)
            return ProcEvent(kind, ts, pid, tgid, exit_code=code)
        if kind is Kind.EXEC or kind is Kind.SID:
            pid, tgid = _TWO.unpack_from(buf, _DATA)
            return ProcEvent(kind, ts, pid, tgid)
        if kind is Kind.COMM:
            pid, tgid, raw = _COMM.unpack_from(buf, _DATA)
            name = raw.split(b"\0", 1)[0].decode("utf-8", "backslashreplace")
            return ProcEvent(kind, ts, pid, tgid, comm=name)
    except struct.error:
        return None
    return None


#: ``SO_ATTACH_FILTER`` (``asm-generic/socket.h``).
SO_ATTACH_FILTER = 26
_INSN = struct.Struct("=HBBI")  # struct sock_filter: code, jt, jf, k
_LD_ABS, _TAX, _JEQ_K, _JEQ_X, _RET_K = 0x20, 0x07, 0x15, 0x1D, 0x06


def _be(value: int) -> int:
    """A native-order u32 as a classic-BPF absolute load reads it (network order)."""
    return int.from_bytes(struct.pack("=I", value), "big")


def _skip_threads(keep: int, drop: int) -> list[tuple[int, int, int, int]]:
    """The thread test: jump to instruction ``keep`` for a process's event, to ``drop``
    for a thread's (both counted from the start of the program)."""
    fork_child = _DATA + 8  # child_pid, then child_tgid
    return [
        (_LD_ABS, 0, 0, _HDR),  # 0: what
        (_JEQ_K, 0, 4, _be(Kind.FORK)),  # 1
        (_LD_ABS, 0, 0, fork_child),  # 2
        (_TAX, 0, 0, 0),  # 3
        (_LD_ABS, 0, 0, fork_child + 4),  # 4
        (_JEQ_X, keep - 6, drop - 6, 0),  # 5
        (_LD_ABS, 0, 0, _DATA),  # 6: pid
        (_TAX, 0, 0, 0),  # 7
        (_LD_ABS, 0, 0, _DATA + 4),  # 8: tgid
        (_JEQ_X, keep - 10, drop - 10, 0),  # 9
    ]


_KEEP, _DROP = (_RET_K, 0, 0, 0xFFFFFFFF), (_RET_K, 0, 0, 0)


def _program(prog: list[tuple[int, int, int, int]]) -> bytes:
    return b"".join(_INSN.pack(*insn) for insn in prog)


def thread_filter() -> bytes:
    """A classic BPF program that drops threads' events in the kernel (issue 29).

    The connector sends every event of the machine, threads' included, and skgate follows
    processes only (``ProcEvent.is_thread`` events are skipped by every consumer): a
    thread's event is one whose subject pid is not its tgid (for a fork, the child's).
    Both words are loaded the same way, so their equality does not depend on byte order.
    """
    return _program([*_skip_threads(10, 11), _KEEP, _DROP])


_PAIR = struct.Struct("=HBBIHBBI")
_SUBJECT_HEAD = _program(
    [
        *_skip_threads(11, 10),
        _DROP,  # 10
        (_LD_ABS, 0, 0, _HDR),  # 11: what: only a fork or an exec rings (see Doorbell)
        (_JEQ_K, 2, 0, _be(Kind.FORK)),  # 12
        (_JEQ_K, 1, 0, _be(Kind.EXEC)),  # 13
        _DROP,  # 14
        (_LD_ABS, 0, 0, _SUBJECT_AT),  # 15: the subject, compared with each tgid
    ]
)
_DROP_BYTES = _program([_DROP])

#: The most processes a doorbell's program lists (two instructions each, under the
#: kernel's 4096); a larger tree's doorbell rings for every fork and exec of the host.
DOORBELL_MAX = 1500


def subject_filter(tgids: Collection[int]) -> bytes:
    """A classic BPF program keeping the process events whose subject is one of ``tgids``
    (the word :attr:`Connector.stream`'s ``interest`` reads: a fork's parent, else the
    tgid) and that ring (a fork or an exec), threads' events dropped; every process's
    fork and exec when there are too many."""
    if len(tgids) > DOORBELL_MAX:
        return _SUBJECT_HEAD + _program([_KEEP])  # every process's fork and exec
    return b"".join((_SUBJECT_HEAD, *map(_subject_check, tgids), _DROP_BYTES))


@functools.lru_cache(maxsize=2 * DOORBELL_MAX)
def _subject_check(tgid: int) -> bytes:
    """``jeq #tgid, 0, 1`` then ``ret keep`` (htonl is _be for a u32). Kept per tgid: a
    tree's program is rebuilt at each fork, from mostly the same processes (issue 29)."""
    return _PAIR.pack(_JEQ_K, 0, 1, socket.htonl(tgid), _RET_K, 0, 0, 0xFFFFFFFF)


def _attach(sock: socket.socket, program: bytes) -> bool:
    """Attach a classic BPF program; False where the kernel refuses it."""
    code = array.array("B", program)
    address, _ = code.buffer_info()
    # struct sock_fprog {unsigned short len; struct sock_filter *filter;}, native layout:
    # the kernel copies the program during the call.
    prog = struct.pack("@HP", len(code) // _INSN.size, address)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, prog)
    except OSError:
        return False
    return True


def _drop_threads(sock: socket.socket) -> bool:
    """Attach :func:`thread_filter`; False where the kernel refuses (nothing is lost
    then: the consumers skip threads' events themselves)."""
    return _attach(sock, thread_filter())


def _control(op: int, seq: int = 0) -> bytes:
    payload = struct.pack("=I", op)
    cn = _CN.pack(CN_IDX_PROC, CN_VAL_PROC, seq, 0, len(payload), 0) + payload
    return _NL.pack(_NL.size + len(cn), NLMSG_DONE, 0, 0, 0) + cn


class Doorbell:
    """A second subscription to the same events that only wakes the loop (issue 29).

    The full socket (:class:`Connector`) hears every process of the host; reading it at
    each foreign event costs the runner a wake each. The doorbell's kernel filter
    (:func:`subject_filter`) keeps only the events about the owned tree's processes (as
    :meth:`ring_for` last said), so the loop listens to it, and reads the full socket,
    in full and in order, when it rings, and at a slow pace otherwise
    (skgate.proc.eventpace). Nothing is read from the doorbell: the record (C3) comes
    from the full socket only, which no filter narrows but the thread test.

    Only forks and execs ring: a new program's argv must be read while it runs (C3),
    and a child must join the filter before its exec. The other events carry all that
    is recorded of them (a ``setsid``'s new group is its pid, a rename its name, an
    exit's name comes with the kernel's exit record) and are read at the next read of
    the full socket, one wake for many. The end of the tree wakes the loop by other
    ways: its last process is always the runner's child (SIGCHLD), and the leader's
    pidfd and the cgroup's ``populated`` also say so. Signals never depend on events
    (C4: the group is read from ``/proc``).

    The race, and why nothing is lost (C3): a child forked by an owned process is added
    to the filter only once its fork was read; its exec may come first. After each change
    of the filter the full socket is read once more (:meth:`OwnedTree.drain`): an event
    the old filter dropped was queued on the full socket before the new one was attached,
    because the kernel delivers a multicast to the newest subscriber first
    (``net/netlink/af_netlink.c``: ``sk_add_bind_node`` adds at the head of
    ``mc_list``, which ``netlink_broadcast`` walks in order) and the doorbell subscribes
    before the full socket. Were that order ever different, such an event is still read,
    at the next paced read of the full socket: late, never lost.
    """

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._tgids: frozenset[int] | None = None  # None: rings for every process event

    def fileno(self) -> int:
        return self._sock.fileno()

    def ring_for(self, tgids: Collection[int]) -> bool:
        """Ring only for events about ``tgids`` from now on; True when the filter changed
        (then read the full socket once more: see the class doc), False when it did not
        need to, or the kernel refused the new one."""
        wanted = frozenset(tgids)
        have = self._tgids
        # A process gone stays in the program until half of it is gone: attaching costs
        # ~0.1 ms of kernel time, and a reused pid only rings once too often.
        if have is not None and wanted <= have and len(have) <= 2 * len(wanted) + 8:
            return False
        if not _attach(self._sock, subject_filter(wanted)):
            return False  # refused: the old filter stays; what it misses is read at the paced reads
        self._tgids = wanted
        return True

    def clear(self, limit: int = 4096) -> None:
        """Take what rang (before the full socket is read: a later event rings again)."""
        recv = self._sock.recv
        for _ in range(limit):
            try:
                recv(64)
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno not in (errno.ENOBUFS, errno.EINTR):
                    raise

    def close(self) -> None:
        self._sock.close()


def _open_doorbell() -> Doorbell | None:
    """A doorbell, before the full socket subscribes (see :class:`Doorbell`); None where
    the kernel refuses one (the full socket is then listened to, as before)."""
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
    except (OSError, AttributeError):
        return None
    try:
        sock.bind((0, CN_IDX_PROC))
        if not _drop_threads(sock):
            raise OSError(errno.EINVAL, "no socket filter")
        sock.setblocking(False)
    except OSError:
        sock.close()
        return None
    return Doorbell(sock)


class Connector:
    """A subscribed, non-blocking connector socket. Use :func:`open_connector`."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        #: Times the kernel reported dropped events (ENOBUFS): the record is then not exact.
        self.overruns = 0
        self.received = 0
        #: The kernel's exit records (skgate.proc.taskstats), read with the events where
        #: they can be had: the name of a process gone before it could be read (C3).
        #: Opened and closed by skgate.proc.sources.Sources, which owns them.
        self.exit_records: ExitRecords | None = None
        #: What wakes the loop for the owned tree's events, where the kernel allows one.
        self.doorbell: Doorbell | None = None
        # The event clock is CLOCK_MONOTONIC; /proc start times count CLOCK_BOOTTIME ticks.
        self.boottime_offset_ns = time.clock_gettime_ns(time.CLOCK_BOOTTIME) - (
            time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        )

    def fileno(self) -> int:
        return self._sock.fileno()

    def read(self, limit: int = 4096) -> list[ProcEvent]:
        """Every followed event queued now (at most ``limit``), never blocking."""
        return list(self.stream(limit))

    def stream(
        self, limit: int = 4096, interest: Container[int] | None = None
    ) -> Iterator[ProcEvent]:
        """The queued events one by one (at most ``limit`` datagrams), never blocking.

        ``interest``: only events about these tgids (for a fork: whose parent is one of
        them) are parsed; the machine's other events are skipped at the cost of one
        ``unpack`` (the connector reports every process on the host). It is consulted
        as each event is read, so a consumer that adds a forked child to it before
        asking for the next event also gets that child's exec and exit.
        """
        recv = self._sock.recv
        subject = _SUBJECT.unpack_from
        for _ in range(limit):
            try:
                buf = recv(256)
            except BlockingIOError:
                break
            except OSError as exc:
                if exc.errno == errno.ENOBUFS:
                    self.overruns += 1  # the queue overflowed: some events are gone
                    continue
                if exc.errno == errno.EINTR:
                    continue
                raise
            self.received += 1
            if (
                interest is not None
                and len(buf) >= _SUBJECT_AT + 4
                and subject(buf, _SUBJECT_AT)[0] not in interest
            ):
                continue
            ev = parse(buf)
            if ev is not None:
                yield ev

    def take_ring(self) -> None:
        """The doorbell rang: take its ring before the full socket is read (an event
        queued after this rings again). A ring left by a read made for another reason
        only wakes the loop once more."""
        if self.doorbell is not None:
            self.doorbell.clear()

    def start_ticks(self, ev: ProcEvent, hz: int) -> int:
        """The event's time in ``/proc/<pid>/stat`` start-time units (boot clock ticks)."""
        return (ev.ts_ns + self.boottime_offset_ns) * hz // 1_000_000_000

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.send(_control(PROC_CN_MCAST_IGNORE))
        self._sock.close()
        if self.doorbell is not None:
            self.doorbell.close()


def open_connector(rcvbuf: int = RCVBUF, doorbell: bool = False) -> Connector:
    """Subscribe to process events; :class:`EventsUnavailable` (with why) if impossible.

    Subscribe *before* the launch: the kernel queues events from this moment, so the
    leader's first fork is never missed, whatever the runner does meanwhile. With
    ``doorbell``, a :class:`Doorbell` subscribes first, where the kernel allows it.
    """
    bell = _open_doorbell() if doorbell else None
    try:
        conn = _open_full(rcvbuf)
    except EventsUnavailable:
        if bell is not None:
            bell.close()
        raise
    conn.doorbell = bell
    return conn


def _open_full(rcvbuf: int) -> Connector:
    try:
        sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_CONNECTOR)
    except (OSError, AttributeError) as exc:
        raise EventsUnavailable(f"no netlink connector socket ({_why(exc)})") from None
    try:
        sock.bind((0, CN_IDX_PROC))
        try:
            sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, rcvbuf)
        except OSError:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        seq = (os.getpid() << 8 | (time.monotonic_ns() & 0xFF)) & 0xFFFFFFFF
        sock.send(_control(PROC_CN_MCAST_LISTEN, seq))
        err = _await_ack(sock, seq)
        _drop_threads(sock)  # after the answer: the filter reads event fields only
        sock.setblocking(False)
    except OSError as exc:
        sock.close()
        raise EventsUnavailable(
            f"the process-events connector refused the subscription ({_why(exc)}); it "
            "needs root or CAP_NET_ADMIN"
        ) from None
    if err:
        # An unprivileged socket may join the group and even receive events while some
        # privileged listener exists; that is luck, not a subscription: refuse it.
        sock.close()
        raise EventsUnavailable(
            f"the process-events connector refused the subscription "
            f"({errno.errorcode.get(err, err)}); it needs root or CAP_NET_ADMIN"
        )
    return Connector(sock)


def _await_ack(sock: socket.socket, seq: int, timeout: float = 1.0) -> int:
    """The kernel's answer to our LISTEN request: 0, or the errno it refused with.

    The answer is a ``PROC_EVENT_NONE`` message with ``ack`` one more than ours (0).
    It goes to the whole group and recent kernels overwrite its sequence number, so
    ordinary events are skipped and the first answer is taken: one from another
    process subscribing in the same millisecond could be taken instead (rare, and then
    the socket is the same kind of socket, on the same host).
    """
    deadline = time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            raise OSError(errno.ETIMEDOUT, "no answer to the subscription")
        sock.settimeout(left)
        try:
            buf = sock.recv(256)
        except TimeoutError:
            raise OSError(errno.ETIMEDOUT, "no answer to the subscription") from None
        if len(buf) < _DATA + 4:
            continue
        _idx, _val, got_seq, ack = struct.unpack_from("=IIII", buf, _NL.size)
        what = struct.unpack_from("=I", buf, _HDR)[0]
        if what == Kind.NONE and ack == 1 and got_seq in (seq, got_seq):
            return int(struct.unpack_from("=I", buf, _DATA)[0])


def probe() -> str | None:
    """None when the connector can be opened here, else the one-line reason."""
    try:
        open_connector(rcvbuf=0).close()
    except EventsUnavailable as exc:
        return str(exc)
    return None


def _why(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.errno is not None:
        return f"{errno.errorcode.get(exc.errno, exc.errno)}: {os.strerror(exc.errno)}"
    return str(exc)
