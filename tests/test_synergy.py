"""Synergy (OSDI'22) on fgdopt: its profiles, its workload generator, its allocation on the engine.

Hand-worked numbers are derived in each test's docstring from Synergy's model files (``simulator/models/*.py`` at
commit 1bb2bed6, kept in ``fgdopt/data/synergy_profiles.json``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from fgdopt.synergy import profiles
from fgdopt.synergy.profiles import ProfileError, load_profiles


def test_committed_profiles_as_synergy_states_them():
    """``res18_1.py``: cpus 9, mem 62.5, speedup 2.4, iter_time 0.64, tput row 2 (3 cores) = [0.1, 1, 1, 1, 1]
    and row 6 (9 cores) = [0.1, 2.4, ...]; ``alexnet_1.py`` mem ``62.5*2`` = 125 and tput row 7 (12 cores)
    starts [0.1, 2, 2.94] (20.83, 62.5, 125 GB); ``gnmt_1.py`` mem ``int(62.5/3)`` = 20. 33 model files, 12 models."""
    table = load_profiles()
    assert len(table) == 33 and len(table.models) == 12
    res18 = table["res18"]
    assert (res18.cpus, res18.mem_gb, res18.speedup, res18.iter_time_s) == (9.0, 62.5, 2.4, 0.64)
    assert res18.tput[2].tolist() == [0.1, 1, 1, 1, 1] and res18.tput[6, 1] == 2.4
    alexnet = table["alexnet"]
    assert alexnet.mem_gb == 125.0 and alexnet.tput[7].tolist()[:3] == [0.1, 2, 2.94]
    assert table["gnmt"].mem_gb == 20.0
    assert table["alexnet_2"].tput.shape == (9, 4) and table["alexnet_2"].mem_levels_gb == (62.5, 125.0, 187.5, 250.0)
    with pytest.raises(ValueError):
        res18.tput[0, 0] = 1.0


def test_rate_reads_the_level_at_or_below():
    """``rate(model, gpus, cpus, mem)`` looks the per-GPU amounts up at the largest profiled level not above them:
    res18 on 1 GPU with 3 cores, 62.5 GB is the proportional share (1.0); 8 cores fall to the 6-core row (1.75);
    9 cores reach 2.4; 0.5 cores is below the 1-core row (0: cannot run); on 2 GPUs with 6 cores and 125 GB the
    per-GPU share is 3 cores, 62.5 GB again (1.0); 20 GB is below the 20.83 GB column (0)."""
    table = load_profiles()
    assert table.rate("res18", 1, 3, 62.5) == 1.0
    assert table.rate("res18", 1, 8, 62.5) == 1.75
    assert table.rate("res18", 1, 9, 500) == 2.4
    assert table.rate("res18", 1, 0.5, 62.5) == 0.0
    assert table.rate("res18", 2, 6, 125.0) == 1.0
    assert table.rate("res18", 1, 3, 20.0) == 0.0


def test_checkout_and_committed_copy_agree(tmp_path):
    """A checkout's model files parse to the same table as the committed JSON (written back from it, read again)."""
    table = load_profiles()
    out = profiles.write_json(table, tmp_path / "p.json", "MIT")
    again = load_profiles(out)
    assert again.models == table.models
    for key, p in table.profiles.items():
        assert again.profiles[key].to_json() == p.to_json()


def test_model_file_parsed_without_running_it(tmp_path):
    """A model file in Synergy's form is read by its AST: ``62.5*3`` = 187.5, ``int(62.5/3)`` = 20."""
    folder = tmp_path / "simulator" / "models"
    folder.mkdir(parents=True)
    rows = ",".join(["[0.1, 1, 1, 1, 1]"] * 9)
    (folder / "toy_1.py").write_text(
        "import numpy as np\nclass toy_1:\n    def update_stats(self):\n        self.cpus = 6\n"
        "        self.mem = 62.5*3\n        self.speed = int(62.5/3)\n        self.batch = 32\n"
        "        self.placement_penalty = 1\n        self.speedup = 1.5\n        self.iter_time = 0.5\n"
        f"        self.tput = np.array([{rows}])\n")
    table = load_profiles(tmp_path)
    toy = table["toy"]
    assert (toy.cpus, toy.mem_gb, toy.storage_mbps, toy.batch, toy.speedup) == (6.0, 187.5, 20.0, 32, 1.5)


@pytest.mark.parametrize("text, words", [
    ("def update_stats(:\n", "does not parse"),
    ("class x:\n    def update_stats(self):\n        self.cpus = 3\n", "does not set"),
    ("class x:\n    def update_stats(self):\n        self.cpus = open('x')\n", "cannot evaluate"),
])
def test_bad_model_file_is_one_line(tmp_path, text, words):
    (tmp_path / "bad_1.py").write_text(text)
    with pytest.raises(ProfileError, match=words) as info:
        load_profiles(tmp_path)
    assert "\n" not in str(info.value) and "bad_1.py" in str(info.value)


def test_bad_json_unknown_model_and_checksum(tmp_path):
    bad = tmp_path / "cut.json"
    bad.write_text('{"models": {"res18_1": {"name": "res18"')
    with pytest.raises(ProfileError, match="cut.json: does not parse"):
        load_profiles(bad)
    with pytest.raises(ProfileError, match="unknown Synergy model 'resnet9000'"):
        load_profiles()["resnet9000"]
    copy = tmp_path / "copy.json"
    doc = json.loads(profiles.DATA_FILE.read_text())
    doc["models"]["res18_1"]["speedup"] = 9.9
    copy.write_text(json.dumps(doc))
    with pytest.raises(ProfileError, match="checksum mismatch"):
        profiles.read_json(copy, sha256=profiles.SHA256)
    assert np.isclose(profiles.read_json(copy)["res18"].speedup, 9.9)
