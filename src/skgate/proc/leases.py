"""Device leases: two skgate runs for the same device never overlap (C4).

One lock file per device under a lease root (``<root>/device-<id>.lock``), locked with
``flock(LOCK_EX | LOCK_NB)``. A set of devices is taken in ascending order and all or
nothing: when one device is busy, the ones already taken are released and the whole set
is polled again, so two runs asking for overlapping sets can neither deadlock nor hold a
device idle while they wait. Waiting is bounded by ``--lease-timeout``; on expiry the
attempt is blocked (recorded as not started), never forced.

A lease is held by open file descriptions in the runner (``O_CLOEXEC``: the workload
does not inherit the descriptor) and released by :meth:`LeaseSet.release`, which the
runner calls only after the whole owned tree is gone (C4), not when the leader exits.

Inheritance markers, for a runner started under another lease holder (for example a
rank parent that already holds the devices): ``SUPERKERNEL_DEVICE_LEASE_HELD=1``,
``SUPERKERNEL_DEVICE_IDS=0,1`` and ``SUPERKERNEL_DEVICE_LEASE_ROOT=<dir>``. All three
must be present and consistent, the asked devices must be among the held ones, and each
lock file must really be locked by someone; anything partial or conflicting fails closed.
skgate exports the same three markers to the workload for the devices it holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from skgate.model.events import Event, Preflight, PreflightStep
from skgate.model.frozen import record
from skgate.proc.observe import boot_id, self_stat

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

HELD_VAR = "SUPERKERNEL_DEVICE_LEASE_HELD"
IDS_VAR = "SUPERKERNEL_DEVICE_IDS"
ROOT_VAR = "SUPERKERNEL_DEVICE_LEASE_ROOT"
MARKERS = (HELD_VAR, IDS_VAR, ROOT_VAR)
#: Lease root override; default ``/tmp/skgate-leases-<uid>``.
LEASE_ROOT_VAR = "SKGATE_LEASE_ROOT"
SCHEMA_LEASE = "skgate.lease/1"
POLL_INTERVAL = 0.2

Emit = Callable[[Event], object]


def default_root(env: Mapping[str, str]) -> Path:
    configured = env.get(LEASE_ROOT_VAR)
    if configured:
        return Path(configured)
    return Path(f"/tmp/skgate-leases-{os.getuid()}")


def lock_path(root: Path, device: int) -> Path:
    return root / f"device-{device}.lock"


class LeaseSet:
    """Devices held by this process. ``release`` is idempotent. (A plain class, not a
    dataclass: one generated class less on every start-up, issue 29.)"""

    def __init__(
        self,
        root: Path,
        devices: tuple[int, ...],
        fds: dict[int, int] | None = None,
        inherited: bool = False,
    ) -> None:
        self.root = root
        self.devices = devices
        self.fds: dict[int, int] = {} if fds is None else fds
        self.inherited = inherited

    def release(self) -> None:
        for device in sorted(self.fds, reverse=True):
            fd = self.fds.pop(device)
            with contextlib.suppress(OSError):
                os.close(fd)  # closing the only description drops the flock

    @property
    def held(self) -> bool:
        return bool(self.fds)


@record
class LeaseOutcome:
    lease: LeaseSet | None
    controls: dict[str, Any]
    blocked: tuple[str, ...]
    env: dict[str, str]  # markers to export to the workload


def parse_ids(text: str) -> tuple[int, ...] | None:
    try:
        ids = tuple(sorted({int(x) for x in text.split(",") if x.strip() != ""}))
    except ValueError:
        return None
    if not ids or any(i < 0 for i in ids):
        return None
    return ids


def holder(root: Path, device: int) -> dict[str, Any] | None:
    """Who holds a device, from the record the holder wrote into the lock file."""
    try:
        data = json.loads(lock_path(root, device).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _try_lock(path: Path) -> int | None:
    # O_NOFOLLOW: a symlink planted in a shared /tmp never redirects the holder record.
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    except OSError:
        os.close(fd)
        raise
    return fd


def _write_holder(fd: int, devices: Iterable[int]) -> None:
    st = self_stat()
    record = {
        "schema": SCHEMA_LEASE,
        "pid": st.pid,
        "start_ticks": st.start_ticks,
        "boot_id": boot_id(),
        "devices": list(devices),
        "taken_at": time.time(),
    }
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(record) + "\n").encode(), 0)


def try_acquire(root: Path, devices: tuple[int, ...]) -> tuple[LeaseSet | None, int | None]:
    """Take every device, ascending, without blocking: (lease, None) or (None, busy device)."""
    lease = LeaseSet(root, devices)
    for device in sorted(devices):
        fd = _try_lock(lock_path(root, device))
        if fd is None:
            lease.release()  # all or nothing: never sit on part of a set while waiting
            return None, device
        lease.fds[device] = fd
    for fd in lease.fds.values():
        _write_holder(fd, devices)
    return lease, None


def is_locked(root: Path, device: int) -> bool:
    """True when someone holds ``device`` (checked by trying, and undoing, a lock)."""
    try:
        fd = _try_lock(lock_path(root, device))
    except OSError:
        return False
    if fd is None:
        return True
    os.close(fd)
    return False


def inherited_lease(
    devices: tuple[int, ...], env: Mapping[str, str]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    present = {name: env[name] for name in MARKERS if name in env}
    controls: dict[str, Any] = {"mode": "inherited", "markers": present}
    fix = f"unset {', '.join(MARKERS)} or set all three consistently"
    missing = [name for name in MARKERS if not env.get(name)]
    if missing:
        return controls, (
            f"partial device lease markers (missing {', '.join(missing)}): fail closed (C4); "
            + fix,
        )
    if env[HELD_VAR] != "1":
        return controls, (f"device lease marker {HELD_VAR}={env[HELD_VAR]!r} is not '1'; " + fix,)
    ids = parse_ids(env[IDS_VAR])
    if ids is None:
        return controls, (f"device lease marker {IDS_VAR}={env[IDS_VAR]!r} is not a list of ids",)
    root = Path(env[ROOT_VAR])
    controls.update({"devices": list(ids), "root": str(root)})
    configured = env.get(LEASE_ROOT_VAR)
    if configured and os.path.realpath(configured) != os.path.realpath(root):
        return controls, (
            f"{ROOT_VAR}={root} conflicts with {LEASE_ROOT_VAR}={configured}: fail closed (C4); "
            + fix,
        )
    extra = sorted(set(devices) - set(ids))
    if extra:
        return controls, (
            f"devices {extra} are not among the inherited lease {list(ids)}: fail closed (C4); "
            "ask only for held devices, or run outside the lease holder",
        )
    free = [d for d in ids if not is_locked(root, d)]
    controls["verified"] = not free
    if free:
        return controls, (
            f"inherited lease markers claim devices {free} under {root}, but nobody holds "
            "them: fail closed (C4); " + fix,
        )
    return controls, ()


def acquire(
    devices: Iterable[int],
    env: Mapping[str, str],
    *,
    timeout: float,
    emit: Emit | None = None,
    poll: float = POLL_INTERVAL,
    deadline: float | None = None,
) -> LeaseOutcome:
    """Lease ``devices`` (or verify an inherited lease) for the attempt about to launch."""
    wanted = tuple(sorted(set(devices)))
    if any(name in env for name in MARKERS):
        controls, blocked = inherited_lease(wanted, env)
        # The markers stay in the workload environment as they came (inheritance).
        return LeaseOutcome(None, controls, blocked, {})
    if not wanted:
        return LeaseOutcome(None, {"mode": "none", "devices": []}, (), {})
    root = default_root(env)
    controls = {"mode": "acquired", "devices": list(wanted), "root": str(root)}
    try:
        root.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return LeaseOutcome(
            None,
            controls,
            (f"lease root {root} cannot be created ({exc.strerror}); set {LEASE_ROOT_VAR}",),
            {},
        )
    if not env.get(LEASE_ROOT_VAR) and root.stat().st_uid != os.getuid():
        # The default root lives in /tmp: one made by someone else is not ours to trust.
        return LeaseOutcome(
            None,
            controls,
            (
                f"lease root {root} is owned by another user; set {LEASE_ROOT_VAR} to a private "
                "directory",
            ),
            {},
        )
    end = deadline if deadline is not None else time.monotonic() + timeout
    started = time.monotonic()
    waited_for: int | None = None
    while True:
        try:
            lease, busy = try_acquire(root, wanted)
        except OSError as exc:
            return LeaseOutcome(
                None, controls, (f"cannot lock in lease root {root} ({exc.strerror})",), {}
            )
        if lease is not None:
            waited = time.monotonic() - started
            controls.update({"waited_s": round(waited, 3), "taken_at": time.time()})
            if waited_for is not None and emit is not None:
                emit(
                    Preflight(
                        step=PreflightStep.LEASE_ACQUIRED.value,
                        details={"devices": list(wanted), "waited_s": waited},
                    )
                )
            markers = {HELD_VAR: "1", IDS_VAR: ",".join(map(str, wanted)), ROOT_VAR: str(root)}
            return LeaseOutcome(lease, controls, (), markers)
        assert busy is not None
        if waited_for != busy:
            waited_for = busy
            controls.setdefault("waits", []).append(
                {"device": busy, "holder": holder(root, busy), "t": time.time()}
            )
            if emit is not None:
                emit(
                    Preflight(
                        step=PreflightStep.LEASE_WAIT.value,
                        details={"device": busy, "holder": holder(root, busy), "timeout": timeout},
                    )
                )
        if time.monotonic() >= end:
            who = holder(root, busy)
            by = f" (held by pid {who.get('pid')})" if who else ""
            controls["waited_s"] = round(time.monotonic() - started, 3)
            return LeaseOutcome(
                None,
                controls,
                (
                    f"device {busy} is leased by another run{by}; waited "
                    f"{controls['waited_s']:g} s (--lease-timeout {timeout:g}); retry later "
                    "or choose another device (C4: runs on one device never overlap)",
                ),
                {},
            )
        time.sleep(min(poll, max(end - time.monotonic(), 0.0)))
