"""Writes the small trace fixtures of tests/test_convert.py (run from the repository root:
``python tests/data/traces/make_fixtures.py``). Each has a few hand-made rows first (a gang, an uneven gang, a
CPU-only job, rows to drop) and then regular rows ``i = 0..19``: job ``r<i>`` with ``(1, 2, 4, 8)[i % 4]`` GPUs on
one node, submitted at ``100 + 30 i`` s and running ``60 (i + 1)`` s (times relative to the first hand-made row,
submitted at 0). The schemas are the traces' published ones (each converter's docstring)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).parent
T0 = datetime(2020, 4, 1, tzinfo=UTC)
REGULAR = [(f"r{i}", (1, 2, 4, 8)[i % 4], 100 + 30 * i, 60 * (i + 1)) for i in range(20)]


def stamp(s: float, zone: str = "") -> str:
    return (T0 + timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S") + zone


def helios() -> None:
    head = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue"
    rows = [("j0", 16, 32, 2, stamp(0), 3600), ("j1", 1, 4, 1, stamp(10), 60), ("j2", 0, 2, 1, stamp(60), 0),
            ("j3", 12, 24, 2, stamp(70), 7200), ("j4", 3, 6, 2, stamp(80), 30), ("j5", 1, 4, 1, "", 100),
            ("j6", 1, 4, 1, stamp(90), "")]
    rows += [(n, g, 4 * g, 1, stamp(s), d) for n, g, s, d in REGULAR]
    lines = [head] + [f"{n},u{k % 3},vc1,{g},{c},{nn},COMPLETED,{s},{s},{s},{d},0"
                      for k, (n, g, c, nn, s, d) in enumerate(rows)]
    (HERE / "helios" / "cluster_log.csv").write_text("\n".join(lines) + "\n")


def acme() -> None:
    head = ("job_id,user,node_num,gpu_num,cpu_num,mem_per_pod_GB,shared_mem_per_pod,type,state,submit_time,"
            "start_time,end_time,fail_time,stop_time,duration,queue,gpu_time")
    rows = [("a0", 4, 32, 512, 800, stamp(0, "+00:00"), 1000), ("a1", 1, 8, 128, 100, stamp(5, "+00:00"), 50),
            ("a2", 1, 0, 16, 10, stamp(6, "+00:00"), 20), ("a3", 1, 8, 64, 100, "", 20)]
    rows += [(n, 1, g, 16 * g, 20 * g, stamp(s, "+00:00"), d) for n, g, s, d in REGULAR]
    lines = [head] + [f"{n},u{k % 2},{nn},{g},{c},{m},0,Pretrain,COMPLETED,{s},{s},{s},,,{d},0,0"
                      for k, (n, nn, g, c, m, s, d) in enumerate(rows)]
    (HERE / "acme" / "trace_kalos.csv").write_text("\n".join(lines) + "\n")


def philly() -> None:
    def job(jid, submit, start, end, detail, user="u0"):
        attempts = [] if start is None else [{"start_time": stamp(start - 5), "end_time": stamp(start),
                                              "detail": detail[:1]},
                                             {"start_time": stamp(start), "end_time": end if end == "None" else
                                              stamp(end), "detail": detail}]
        return {"status": "Pass", "vc": "vc1", "jobid": jid, "attempts": attempts, "submitted_time": stamp(submit),
                "user": user}

    gpus = [f"gpu{k}" for k in range(8)]
    jobs = [job("p0", 0, 20, 3620, [{"ip": "m0", "gpus": gpus}, {"ip": "m1", "gpus": gpus}]),
            job("p1", 10, 12, 72, [{"ip": "m2", "gpus": gpus[:1]}]),
            job("p2", 30, 40, 100, [{"ip": "m0", "gpus": gpus[:4]}, {"ip": "m1", "gpus": gpus[:2]}]),
            job("p3", 50, None, None, []), job("p4", 60, 70, "None", [{"ip": "m2", "gpus": gpus[:1]}])]
    jobs += [job(n, s, s + 10, s + 10 + d, [{"ip": "m2", "gpus": gpus[:g]}]) for n, g, s, d in REGULAR]
    (HERE / "philly" / "cluster_job_log").write_text(json.dumps(jobs, indent=1) + "\n")
    (HERE / "philly" / "cluster_machine_list").write_text(
        "machineId,number of GPUs,single GPU mem\nm0,8, 24GB\nm1,8, 24GB\nm2,2, 12GB\nm3,8, 24GB\n")


def pai2020() -> None:
    # tasks: job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type
    tasks = [("J0", "worker", 4, 1000, 4600, 600, 29.3, 100, "V100"), ("J0", "ps", 1, 1000, 4600, 800, 10, "", ""),
             ("J1", "worker", 1, 1010, 1070, 400, 15, 50, "T4"), ("J2", "worker", 2, 1020, 1050, 800, 60, 250, "MISC"),
             ("J3", "worker", 1, 1030, "", 100, 1, 100, "T4")]
    tasks += [(f"R{i}", "worker", 1, 1100 + 30 * i, 1100 + 30 * i + d, 100 * g, 8 * g, 100 * g, "V100")
              for i, (_, g, _, d) in enumerate(REGULAR)]
    lines = [f"{j},{t},{n},Terminated,{s},{e},{c},{m},{g},{ty}" for j, t, n, s, e, c, m, g, ty in tasks]
    (HERE / "pai2020" / "pai_task_table.csv").write_text("\n".join(lines) + "\n")
    names = sorted({t[0] for t in tasks})
    (HERE / "pai2020" / "pai_job_table.csv").write_text(
        "\n".join(f"{j},inst{k},user{k % 4},Terminated,1000,5000" for k, j in enumerate(names)) + "\n")
    (HERE / "pai2020" / "pai_machine_spec.csv").write_text(
        "m0,V100,96,512,8\nm1,V100,96,512,8\nm2,T4,64,256,2\nm3,CPU,96,512,\n")


def spot2026() -> None:
    head = "job_name,organization,gpu_model,cpu_request,gpu_request,worker_num,submit_time,duration,job_type"
    rows = [("s0", "org0", "A100-SXM4-80GB", 15, 1, 94, 0, 7200, "HP"),
            ("s1", "org1", "A10", 4, 1, 1, 15, 600, "Spot"), ("s2", "org1", "A10", 2, 0.5, 3, 20, 60, "Spot"),
            ("s3", "org0", "A10", 2, 1, 1, "", 60, "Spot")]
    rows += [(n, "org2", "A10", 2 * g, g, 1, s, d, "Spot" if i % 2 else "HP")
             for i, (n, g, s, d) in enumerate(REGULAR)]
    (HERE / "spot2026" / "job_info_df.csv").write_text(
        "\n".join([head] + [",".join(map(str, r)) for r in rows]) + "\n")
    (HERE / "spot2026" / "node_info_df.csv").write_text(
        "gpu_model,gpu_capacity_num,cpu_num,node_name\nGPU-series-1,4,192,0\nGPU-series-1,1,192,1\nA10,1,128,2\n"
        "A100-SXM4-80GB,8,128,3\n")


def swf() -> None:
    rows = [(1, 0, 5, 3600, 16, 16, 4096, 7), (2, 10, 0, 60, 1, 1, -1, 8), (3, 20, 1, 120, 12, 12, 1024, 7),
            (4, 30, -1, -1, 4, 4, -1, 8), (5, 40, 0, 30, -1, 2, -1, 9)]
    rows += [(6 + i, s, 0, d, g, g, -1, 7) for i, (_, g, s, d) in enumerate(REGULAR)]
    lines = ["; Version: 2.2", "; Computer: a GPU cluster written as processors", "; MaxProcs: 64"]
    lines += [f"{j} {s} {w} {r} {p} -1 -1 {q} -1 {m} 1 {u} 1 -1 -1 -1 -1 -1" for j, s, w, r, p, q, m, u in rows]
    (HERE / "swf" / "gpus.swf").write_text("\n".join(lines) + "\n")


def openb() -> None:
    head = ("name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
            "scheduled_time")
    rows = [("o0", 8000, 30000, 1, 500, "", "LS", "Running", 0, 400, 10), ("o1", 4000, 0, 2, 1000, "V100M16", "BE",
            "Succeeded", 20, 90, 30), ("o2", 1000, 0, 0, 0, "", "BE", "Pending", 30, "", "")]
    rows += [(n, 4000, 1024, g, 1000, "", "LS", "Succeeded", s, s + d + 5, s + 5) for n, g, s, d in REGULAR]
    (HERE / "openb" / "openb_pod_list_fixture.csv").write_text(
        "\n".join([head] + [",".join(map(str, r)) for r in rows]) + "\n")
    (HERE / "openb" / "openb_node_list_gpu_node.csv").write_text(
        "sn,cpu_milli,memory_mib,gpu,model\nn0,96000,786432,8,V100M16\nn1,64000,262144,2,T4\n")


if __name__ == "__main__":
    for fmt in (helios, acme, philly, pai2020, spot2026, swf, openb):
        (HERE / fmt.__name__).mkdir(exist_ok=True)
        fmt()
