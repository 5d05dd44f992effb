"""The work directory of a tuning loop: its lock, its configuration, its state, every file written atomically.

A tuning loop must never lose work (a crash in iteration 9 of ``mert-moses.pl`` means starting over), so
everything it learns lives here as soon as it is learnt, and every file appears whole or not at all (a
temporary file and a rename, :func:`hypertune.formats.io.write_atomically`; a decoder's output directory
is renamed into place the same way). ``kill -9`` at any moment leaves a directory that ``--resume`` reads
back to the last finished step.

Layout (``NNN`` is the iteration, from 001)::

    DIR/lock                      the OS lock (fcntl.flock) held while a loop runs; holds its process id
    DIR/config.json               what the run is (decoder, references, tuner and its options, seed, ...)
    DIR/init.weights              the start weights ('name value' lines, exact)
    DIR/state.json                the history so far and how the run stands
    DIR/iteration-NNN/weights     the weights this iteration decodes with (a copy of the previous tuned ones)
    DIR/iteration-NNN/<config>    the same weights in the decoder's own form (--decoder-config), if any
    DIR/iteration-NNN/decoder.out the decoder's standard output; decoder.log its standard error
    DIR/iteration-NNN/output/     what the decoder wrote ({kbest} or {lattices}), renamed into place when it
                                  finished; output/decode.json says how long it took and what ran
    DIR/iteration-NNN/scores      with --scorer: the scorer's score file of output/kbest (one line per
                                  hypothesis), moved into place once checked; scorer.out, scorer.log its
                                  output and error; scores.unchecked a file it wrote that failed the check
    DIR/iteration-NNN/tuned.weights, tuner.json  the tuner's weights and its whole summary (JSON)
"""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from hypertune.errors import InputError, UsageError
from hypertune.formats.io import write_atomically

STATE_VERSION = 1


class WorkDir:
    """One tuning run's directory (see the module docstring). Paths are joined to ``path`` as given, so the
    directory may be moved between a run and its ``--resume``: nothing written depends on where it is."""

    def __init__(self, path: str) -> None:
        self.path = path

    def file(self, *parts: str) -> str:
        return os.path.join(self.path, *parts)

    def iteration(self, i: int, *parts: str) -> str:
        """A path inside iteration ``i``'s folder (``iteration-003``: sorted listings read in order)."""
        return os.path.join(self.path, f"iteration-{i:03d}", *parts)

    # ------------------------------------------------------------------ the lock
    @contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the directory's lock (``fcntl.flock`` on ``DIR/lock``) while the body runs. The operating
        system drops it when the process ends, however it ends, so a killed run leaves no stale lock; a
        second loop on the same directory is refused at once, naming the process that holds it."""
        try:
            os.makedirs(self.path, exist_ok=True)
        except OSError as error:
            raise InputError(f"cannot create the work directory ({error.strerror})", self.path) from None
        fd = os.open(self.file("lock"), os.O_RDWR | os.O_CREAT, 0o644)  # not inherited by the decoder
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as error:
                if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise
                holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "another process"
                raise UsageError(
                    f"{self.path}: the work directory is in use by another 'hypertune tune' (process {holder}); "
                    "wait for it to finish or choose another --workdir"
                ) from None
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
            yield
        finally:
            os.close(fd)  # closing the descriptor releases the lock

    # ------------------------------------------------------------------ JSON files
    def read_json(self, *parts: str) -> Any:
        """A JSON file of the directory, or ``None`` if it is not there (an atomic write is whole or absent,
        so a file that does not parse was damaged by something else: an error naming it)."""
        path = self.file(*parts)
        try:
            with open(path, encoding="utf-8") as handle:
                return json.load(handle)
        except FileNotFoundError:
            return None
        except json.JSONDecodeError as error:
            raise InputError(f"damaged ({error.msg}); remove it to redo that step", path, error.lineno) from None

    def write_json(self, value: Any, *parts: str) -> None:
        """Write ``value`` as JSON, atomically."""
        write_atomically(self.file(*parts), json.dumps(value, indent=1, sort_keys=False) + "\n")

    # ------------------------------------------------------------------ configuration
    def check_config(self, config: dict[str, Any], resume: bool) -> bool:
        """Make the directory this configuration's: a new or empty directory gets ``config.json``; one of the
        same configuration continues under ``--resume`` (True is returned) and is refused without it; one of
        another configuration is refused with the settings that differ, so two runs are never mixed."""
        stored = self.read_json("config.json")
        if stored is None:
            leftovers = [n for n in os.listdir(self.path) if n not in ("lock",) and not n.startswith(".")]
            if leftovers:
                shown = ", ".join(sorted(leftovers)[:3])
                raise UsageError(
                    f"{self.path}: the work directory is not empty and holds no tuning run ({shown}); choose an empty "
                    "or new --workdir"
                )
            self.write_json(config, "config.json")
            return False
        if stored != config:
            differ = sorted(k for k in set(stored) | set(config) if stored.get(k) != config.get(k))
            raise UsageError(
                f"{self.path}: the work directory holds a run of another configuration (it differs in: "
                f"{', '.join(differ)}); resume it with the same options or choose another --workdir"
            )
        if not resume:
            raise UsageError(
                f"{self.path}: the work directory holds a tuning run already; add --resume to continue it, or choose "
                "another --workdir"
            )
        return True

    def tidy(self) -> None:
        """Remove what a killed run can leave half-made: temporary files of atomic writes (``.hypertune-*``,
        never renamed into place) and folders being discarded. Called with the lock held, so nothing of a
        live run is touched; half-made decoder output folders go when their step is redone (:meth:`staging`)."""
        for root, folders, files in os.walk(self.path):
            for name in files:
                if name.startswith(".hypertune-"):
                    os.unlink(os.path.join(root, name))
            for name in [f for f in folders if ".discarded-" in f]:
                shutil.rmtree(os.path.join(root, name), ignore_errors=True)
                folders.remove(name)

    def staging(self, *parts: str) -> str:
        """A fresh folder for a decoder to write into, next to ``parts`` (``.output.partial-PID``) after
        discarding every earlier attempt's: a decoder orphaned by a killed run (a shell's child outlives
        the shell) may still be writing into its own folder, never into this one."""
        folder = os.path.dirname(self.file(*parts))
        os.makedirs(folder, exist_ok=True)
        self.clear_staging(*parts)
        path = os.path.join(folder, f".{os.path.basename(parts[-1])}.partial-{os.getpid()}")
        os.makedirs(path)
        return path

    def clear_staging(self, *parts: str) -> None:
        """Discard every staging folder of ``parts`` (:meth:`staging`): the attempts a killed run left."""
        folder = os.path.dirname(self.file(*parts))
        prefix = f".{os.path.basename(parts[-1])}.partial"
        for name in os.listdir(folder) if os.path.isdir(folder) else []:
            if name.startswith(prefix):
                self.discard(os.path.relpath(os.path.join(folder, name), self.path))

    def discard(self, *parts: str) -> None:
        """Remove a half-made file or folder (a decoder's output that never finished): it is renamed out of
        the way first, so a decoder still writing there (orphaned by a ``kill -9``) cannot refill it."""
        path = self.file(*parts)
        if not os.path.lexists(path):
            return
        trash = f"{path}.discarded-{os.getpid()}"
        os.replace(path, trash)
        if os.path.isdir(trash) and not os.path.islink(trash):
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.unlink(trash)


def fingerprint_file(path: str) -> str:
    """The SHA-256 of a file's bytes: a configuration names its references and decoder config by content,
    not by path, so moving files (or the work directory) does not make a run a different one."""
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except OSError as error:
        raise InputError(f"cannot read it ({error.strerror})", path) from None
    return digest.hexdigest()
