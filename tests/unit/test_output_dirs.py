"""Where `pipeline` and `chaos` write unless told: under the local cluster's data dir, else
in minikafka's per-user directory (saying why), never in the current directory; an explicit
directory is kept as given."""

from __future__ import annotations

from pathlib import Path

import pytest

from minikafka.cli.output_dirs import default_output_dir
from minikafka.cli.pipeline import _work_dir

WHAT = "pipeline output (Parquet, checkpoints)"


@pytest.fixture
def dirs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """(the data dir, $XDG_DATA_HOME), the current directory being another."""
    data_dir, xdg = tmp_path / "data", tmp_path / "xdg"
    monkeypatch.setenv("MINIKAFKA_DATA_DIR", str(data_dir))
    monkeypatch.setenv("XDG_DATA_HOME", str(xdg))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    return data_dir, xdg


def test_under_the_local_clusters_data_dir(dirs: tuple[Path, Path]) -> None:
    data_dir, _ = dirs
    data_dir.mkdir()
    (data_dir / "cluster.json").write_text("{}")
    assert default_output_dir("pipeline", WHAT, "--work-dir") == (
        data_dir / "pipeline",
        f"{WHAT} goes to {data_dir / 'pipeline'}, in the local cluster's data dir "
        "(--work-dir DIR: elsewhere)",
    )


def test_without_a_local_cluster_in_a_named_per_user_directory(dirs: tuple[Path, Path]) -> None:
    data_dir, xdg = dirs
    fallback = xdg / "minikafka" / "other-clusters" / "pipeline"
    assert default_output_dir("pipeline", WHAT, "--work-dir") == (
        fallback,
        f"no local cluster in {data_dir} (no cluster.json), so {WHAT} goes to {fallback} "
        "(--work-dir DIR: elsewhere)",
    )


def test_pipeline_says_where_its_output_goes_and_keeps_an_explicit_work_dir(
    dirs: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    _, xdg = dirs
    assert _work_dir(None) == xdg / "minikafka" / "other-clusters" / "pipeline"
    assert "no local cluster in" in capsys.readouterr().out
    assert _work_dir(Path("pipeline-out")) == Path("pipeline-out")
    assert capsys.readouterr().out == f"{WHAT} goes to pipeline-out\n"
