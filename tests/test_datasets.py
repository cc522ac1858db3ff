"""The one data set lookup (:mod:`fgdopt.datasets`): the environment variable, then the cache; a missing data set
in one line naming the variable and the download command; a file that is not the pinned one refused."""

from __future__ import annotations

import hashlib

import pytest

from fgdopt.datasets import ChecksumMismatch, DataNotFound, Dataset, find, folder, require, verify
from fgdopt.elastic.applications import POLLUX
from fgdopt.hetero.throughputs import GAVEL
from fgdopt.refsim import REFSIM
from fgdopt.synergy.profiles import SYNERGY
from fgdopt.traces import OPENB

BODY = b"a,b\n1,2\n"
DIGEST = hashlib.sha256(BODY).hexdigest()            # the pinned digest of the toy file
TOY = Dataset("toy", "FGDOPT_TOY", "sub/marker.csv", "the toy set", "python -m toy download",
              {"sub/marker.csv": DIGEST, "absent.csv": "0" * 64})


def test_the_variable_then_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("FGDOPT_TOY", raising=False)
    assert folder(TOY) == tmp_path / "home" / ".cache" / "fgdopt" / "toy"
    assert folder(TOY, tmp_path / "given") == tmp_path / "given"                 # a given path comes first
    monkeypatch.setenv("FGDOPT_TOY", str(tmp_path / "env"))
    assert folder(TOY) == tmp_path / "env" and find(TOY) is None                  # the variable, without the marker
    (tmp_path / "env" / "sub").mkdir(parents=True)
    (tmp_path / "env" / "sub" / "marker.csv").write_bytes(BODY)
    assert find(TOY) == require(TOY) == tmp_path / "env"


def test_a_missing_data_set_is_one_line_naming_the_variable_and_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("FGDOPT_TOY", str(tmp_path))
    with pytest.raises(DataNotFound) as err:
        require(TOY)
    message = str(err.value)
    assert "\n" not in message and message == (f"the toy set not found in {tmp_path} (no sub/marker.csv): set "
                                               "FGDOPT_TOY to its folder, or fetch it with `python -m toy download`")
    assert isinstance(err.value, FileNotFoundError)


def test_a_file_that_is_not_the_pinned_one_is_refused(tmp_path):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "marker.csv").write_bytes(BODY)
    assert verify(TOY, tmp_path) == 1                                              # the absent one is not checked
    (tmp_path / "sub" / "marker.csv").write_bytes(BODY + b"3,4\n")
    with pytest.raises(ChecksumMismatch, match=r"^\S+marker\.csv: SHA-256 [0-9a-f]{64}, not the pinned "
                                               f"{DIGEST} \\(toy: fetch it again with `python -m toy download`\\)$"):
        verify(TOY, tmp_path)


def test_every_data_set_of_the_package_is_declared_once_with_its_variable():
    sets = (OPENB, GAVEL, POLLUX, SYNERGY, REFSIM)
    assert [d.variable for d in sets] == ["FGDOPT_DATA", "FGDOPT_GAVEL", "FGDOPT_POLLUX", "FGDOPT_SYNERGY",
                                          "FGDOPT_REFSIM"]
    assert len({d.name for d in sets}) == 5 and all(d.command for d in sets)
    assert len(OPENB.sha256) == 26 and len(POLLUX.sha256) == 12 and len(REFSIM.sha256) == 2
