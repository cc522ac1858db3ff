"""The openb loader, the trace statistics and the checksummed download."""

from __future__ import annotations

import functools
import http.server
import re
import shutil
import threading
from pathlib import Path

import numpy as np
import pytest

from experiments import trace_stats
from fgdopt.stats import shape_class, trace_statistics
from fgdopt.traces import NODE_FILE, SHA256, VARIANTS, download, load_openb, read_pods, sha256_of


def test_default_trace_counts(openb_default):
    cluster, tasks = openb_default
    assert (cluster.n_nodes, cluster.total_gpus, len(tasks)) == (1213, 6212, 8152)
    assert len(set(zip(cluster.cpu_milli, cluster.memory_mib, cluster.gpu, cluster.model, strict=True))) == 15
    classes = shape_class(tasks.num_gpu, tasks.gpu_milli)
    assert (classes == "cpu-only").sum() == 1088
    assert np.isin(classes, ["sharing <=250", "sharing 251-500", "sharing 501-999"]).sum() == 3078
    assert np.isin(classes, ["whole-GPU (1)", "multi-GPU"]).sum() == 3986
    assert (classes == "multi-GPU").sum() == 75
    assert len(set(zip(tasks.cpu_milli, tasks.num_gpu, tasks.gpu_milli, strict=True))) == 91


def test_trace_statistics_table(openb_dir, openb_default):
    cluster, tasks = openb_default
    table = trace_statistics(cluster, tasks, read_pods("default", openb_dir)["pod_phase"].to_numpy())
    value = dict(zip(table["metric"], table["value"], strict=True))
    assert value["nodes"] == 1213 and value["GPUs"] == 6212 and value["node types"] == 15
    assert value["Running"] + value["Failed"] + value["Pending"] + value["Succeeded"] == 8152


def test_trace_stats_command(openb_dir, capsys):
    assert trace_stats.main(["--data-dir", str(openb_dir)]) == 0
    out = capsys.readouterr().out
    assert "| cluster   | nodes " in out and "1213" in out and "6212" in out
    assert trace_stats.main(["--data-dir", str(openb_dir), "--variant", "multigpu40", "--format", "csv"]) == 0
    out = capsys.readouterr().out                       # shapes only: no pod_phase rows (it was a KeyError)
    assert "cluster,nodes,1213" in out and "tasks,tasks," in out and "pod_phase" not in out


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_variant_loads(openb_dir, variant):
    cluster, tasks = load_openb(variant, openb_dir)
    assert cluster.total_gpus == 6212 and len(tasks) >= 7064  # cpu0 drops CPU-only tasks: 7064
    if variant.startswith("gpuspec") and variant != "gpuspec05":
        assert (tasks.gpu_spec != "").any()


def test_unknown_variant_and_missing_dir(tmp_path):
    with pytest.raises(ValueError, match="unknown openb variant 'nope'"):
        load_openb("nope", tmp_path)
    with pytest.raises(FileNotFoundError, match="python -m fgdopt.traces download"):
        load_openb("default", tmp_path)


def test_bad_trace_rows_are_named(openb_dir, tmp_path):
    shutil.copy(openb_dir / NODE_FILE, tmp_path / NODE_FILE)
    pods = (openb_dir / "openb_pod_list_default.csv").read_text().splitlines()
    header = pods[0].split(",")
    row = pods[3].split(",")
    row[header.index("gpu_milli")] = "1500"
    (tmp_path / "openb_pod_list_default.csv").write_text("\n".join([pods[0], pods[1], pods[2], ",".join(row)]))
    with pytest.raises(ValueError, match=r"task row 2: field 'gpu_milli' must lie in 0..1000"):
        load_openb("default", tmp_path)
    (tmp_path / "openb_pod_list_default.csv").write_text(pods[0] + ",extra\n" + pods[1] + ",1\n")
    with pytest.raises(ValueError, match=r"unknown column extra; the file needs "):
        load_openb("default", tmp_path)


NODE_HEADER = "sn,cpu_milli,memory_mib,gpu,model"
POD_HEADER = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time," \
    "scheduled_time"


@pytest.mark.parametrize(("nodes", "pods", "match"), [
    # a header-only pod list: Workload.from_tasks failed in the studies, without naming the file
    (["n0,32000,65536,2,T4"], [], r"openb_pod_list_default.csv: no pods \(a header only\)"),
    # CPU-only nodes: every replay divided by a GPU capacity of 0 (ZeroDivisionError in experiments.openb)
    (["n0,32000,65536,0,CPU"], ["p0,4000,8192,1,500,,LS,Running,0,100,0"],
     r"openb_node_list_gpu_node.csv: no GPUs \(every node has gpu 0\)"),
    ([], ["p0,4000,8192,1,500,,LS,Running,0,100,0"], r"openb_node_list_gpu_node.csv: no GPUs \(no nodes\)"),
    # a bad value names its file, not only the row
    (["n0,32000,65536,2,T4", "n1,32000,-1,2,T4"], ["p0,4000,8192,1,500,,LS,Running,0,100,0"],
     r"openb_node_list_gpu_node.csv: node row 1: field 'memory_mib' is negative"),
])
def test_unusable_trace_files_are_named(tmp_path, nodes, pods, match):
    (tmp_path / NODE_FILE).write_text("\n".join([NODE_HEADER, *nodes]) + "\n")
    (tmp_path / "openb_pod_list_default.csv").write_text("\n".join([POD_HEADER, *pods]) + "\n")
    with pytest.raises(ValueError, match=match):
        load_openb("default", tmp_path)


@pytest.fixture
def http_server():
    """Serve a folder on 127.0.0.1; yields a function folder -> base URL."""
    servers = []

    def serve(folder: Path) -> str:
        handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
        handler.log_message = lambda *args: None
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield serve
    for server in servers:
        server.shutdown()
        server.server_close()


def test_download_from_local_server(openb_dir, http_server, tmp_path):
    base = http_server(openb_dir)
    files = [NODE_FILE, "openb_pod_list_default.csv"]
    dest = download(tmp_path / "cache", base_url=base, files=files, progress=False)
    for name in files:
        assert sha256_of(dest / name) == SHA256[name]
    assert load_openb("default", dest)[0].n_nodes == 1213
    # a second call finds the verified files and downloads nothing (the server is gone)
    download(dest, base_url="http://127.0.0.1:9", files=files, progress=False)


def test_download_rejects_bad_checksum(http_server, tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    (served / NODE_FILE).write_text("sn,cpu_milli,memory_mib,gpu,model\nx,1,1,1,T4\n")
    with pytest.raises(ValueError, match="checksum mismatch"):
        download(tmp_path / "cache", base_url=http_server(served), files=[NODE_FILE], progress=False)
    assert list((tmp_path / "cache").iterdir()) == []


def test_every_published_file_has_a_checksum():
    assert len(SHA256) == 26
    assert {f"openb_pod_list_{v}.csv" for v in VARIANTS} < set(SHA256)


def test_download_without_network_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    import urllib.error

    from fgdopt import traces

    def offline(url, timeout=None):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(traces.urllib.request, "urlopen", offline)
    assert traces.main(["download", "--dest", str(tmp_path)]) == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(f"python -m fgdopt.traces download: could not download {traces.BASE_URL}/openb_")
    assert "Temporary failure in name resolution" in line and "by hand" in line
    assert "FGDOPT_DATA" in line and str(tmp_path) in line
    assert list(tmp_path.iterdir()) == []                                   # no partial file left behind


def test_find_openb_takes_the_environment_then_the_cache(openb_dir, tmp_path, monkeypatch):
    import fgdopt.traces as traces

    monkeypatch.setenv("FGDOPT_DATA", str(openb_dir))
    assert traces.find_openb() == openb_dir                     # $FGDOPT_DATA holds the node list: taken first
    monkeypatch.setenv("FGDOPT_DATA", str(tmp_path))            # an empty $FGDOPT_DATA: nothing else is tried
    assert traces.find_openb() is None
    monkeypatch.delenv("FGDOPT_DATA")
    monkeypatch.setenv("HOME", str(tmp_path))                   # no variable: the download cache
    (tmp_path / ".cache" / "fgdopt" / "openb").mkdir(parents=True)
    assert traces.find_openb() is None
    shutil.copy(openb_dir / NODE_FILE, tmp_path / ".cache" / "fgdopt" / "openb" / NODE_FILE)
    assert traces.find_openb() == tmp_path / ".cache" / "fgdopt" / "openb"


def test_notebooks_look_for_the_trace_as_the_tests_do():
    # the openb_dir fixture (conftest) uses fgdopt.traces.find_openb; so does every notebook that loads the trace
    notebooks = Path(__file__).resolve().parents[1] / "notebooks"
    loading = [p for p in sorted(notebooks.glob("*.py")) if re.search(r"(load_openb|openb_jobs)\(", p.read_text())]
    assert {"01_fragmentation", "04_defragmentation_and_scale", "05_over_time"} <= {p.stem for p in loading}
    for path in loading:
        calls = [line for line in path.read_text().splitlines() if re.search(r"(load_openb|openb_jobs)\(", line)]
        assert calls and all("find_openb()" in line for line in calls), path.name
