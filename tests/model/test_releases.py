"""Issue 27: the release table, row by row, as read in the torch-npu wheels.

Each assertion is one fact of ``docs/cann-static-compile.md`` (wheel, file, line); the
conformance suite (tests/realcode) runs the wheels' own code against the same rows.
"""

from __future__ import annotations

import pytest

from skgate.model.releases import (
    RELEASES,
    JobsRule,
    jobs_explained,
    release_for,
    release_of_root,
    unseen_failure_note,
)

NEW_ROOT = "static_kernel_compile_outputs/ts<%Y%m%d%H%M%S%f>_pid<pid>_outputs"


def test_2_7_row() -> None:
    r = release_for("2.7.1.post2")
    assert r is not None and r.series == "2.7"
    # l.267, l.273-274: no ts/pid prefixes; l.27: the start line names no directory.
    assert r.output_root == "aclnn_static_shape_kernel_outputs/<%Y%m%d%H%M%S%f>_<pid>_outputs"
    assert r.outputs_dirname == "aclnn_static_shape_kernel_outputs"
    assert r.start_line == "Starting static kernel compilation"
    assert r.jobs is JobsRule.CPUS_PER_LOCAL_RANK  # l.284-298
    # l.72 and l.103: logger.warning, below the default ERROR level.
    assert not r.compiler_failures_visible and not r.install_failures_visible
    assert r.caches == () and r.private_install is None and not r.survives_sigterm


def test_2_9_row() -> None:
    r = release_for("2.9.0.post2")
    assert r is not None and r.series == "2.9" and r.output_root == NEW_ROOT
    assert r.jobs is JobsRule.CPUS  # l.629-639
    assert r.compiler_failures_visible  # l.321 warnings.warn
    assert "even with -f true" in r.compiler_output_captured  # l.317 capture_output=True
    assert not r.install_failures_visible  # l.438 logger.warning
    # use_cache_compile only: no static_kernel_cache in 2.9.
    assert len(r.caches) == 1 and r.caches[0].startswith("use_cache_compile")
    assert r.private_install is None and not r.survives_sigterm


@pytest.mark.parametrize("version", ["2.11.0.post3", "2.14.0"])
def test_2_11_and_2_14_rows(version: str) -> None:
    r = release_for(version)
    assert r is not None and r.output_root == NEW_ROOT and r.jobs is JobsRule.CPUS
    assert r.compiler_failures_visible and r.install_failures_visible  # l.589, l.760
    assert any(c.startswith("static_kernel_cache") for c in r.caches)
    assert any(c.startswith("use_cache_compile") for c in r.caches)
    assert r.private_install is not None and "static_kernel_install" in r.private_install
    assert r.survives_sigterm  # npugraph_ex/__init__.py: SIG_IGN, then kill self


def test_versions_outside_the_table_are_never_guessed() -> None:
    for v in ("2.8.0", "2.10.1", "3.0.0", "", None, "banana"):
        assert release_for(v) is None
    assert {r.series for r in RELEASES} == {"2.7", "2.9", "2.11", "2.14"}
    assert release_for("2.14.0rc1") is not None and release_for("2.7") is not None


def test_only_the_2_7_layout_shows_its_release() -> None:
    r = release_of_root("/w/aclnn_static_shape_kernel_outputs/20261203000000000001_41_outputs")
    assert r is not None and r.series == "2.7"
    assert (
        release_of_root("/w/static_kernel_compile_outputs/ts20261203000000000001_pid41_outputs")
        is None
    )


def test_words_of_a_row() -> None:
    r27, r14 = release_for("2.7.1"), release_for("2.14.0")
    assert r27 is not None and r14 is not None
    assert "cpu_count() // LOCAL_WORLD_SIZE" in jobs_explained(r27, 1)
    assert "LOCAL_WORLD_SIZE" not in jobs_explained(r14, 2)
    note = unseen_failure_note(r27)
    assert note is not None and "below the default level" in note
    assert unseen_failure_note(r14) is None
