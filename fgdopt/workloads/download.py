"""Where the raw files of each trace format are published, and a command that fetches them.

Usage::

    python -m fgdopt.workloads.download FORMAT --dest DIR
    python -m fgdopt.workloads.download --list

Every address is pinned (a commit of the GitHub repository, or the publisher's fixed file address). None of these
publishers gives a checksum, so none is checked; the command prints the SHA-256 of every file it fetched, to be
recorded with the results. openb's files have checksums: ``python -m fgdopt.traces download`` fetches and checks
them. The archives (``.tar.gz``, ``.gz``) are kept as fetched: unpack them, then convert
(``python -m experiments.convert --format FORMAT --input FILES --output DIR``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from fgdopt.traces import DownloadError, OneLineParser, check_dest, fetch_file, sha256_of

_CLUSTERDATA = "https://raw.githubusercontent.com/alibaba/clusterdata"
SOURCES: dict[str, tuple[tuple[str, str | None], ...]] = {
    "philly": (("https://media.githubusercontent.com/media/msr-fiddle/philly-traces/"
                "9425c49842ff332bf748967fd7ff0ab64112ad10/trace-data.tar.gz", None),),
    "helios": (("https://media.githubusercontent.com/media/S-Lab-System-Group/HeliosData/"
                "106713b0d0fc761c70073b4af018681656b60f48/data/Venus/cluster_log.csv", None),),
    "acme": tuple((f"https://media.githubusercontent.com/media/InternLM/AcmeTrace/"
                   f"6d6ac9cd15f3b01151ac6ba00ecddd9156f0dc73/data/job_trace/{name}", None)
                  for name in ("trace_seren.csv", "trace_kalos.csv")),
    "pai2020": tuple((f"https://aliopentrace.oss-cn-beijing.aliyuncs.com/v2020GPUTraces/{name}.tar.gz", None)
                     for name in ("pai_job_table", "pai_task_table", "pai_machine_spec")),
    "spot2026": tuple((f"{_CLUSTERDATA}/0d3dcd97c6e674634758c908c775e11b94c17575/cluster-trace-v2026-spot-gpu/"
                       f"{name}", None) for name in ("job_info_df.csv", "node_info_df.csv")),
    "swf": (("https://www.cs.huji.ac.il/labs/parallel/workload/l_kit_fh2/KIT-FH2-2016-1.swf.gz", None),),
}
"""Per format: the pinned addresses of its raw files, each with its SHA-256 where the publisher gives one."""


def download(fmt: str, dest: str | Path) -> list[tuple[Path, str]]:
    """Fetch the raw files of ``fmt`` into ``dest``; returns each file and its SHA-256.

    Raises
    ------
    ValueError : an unknown format. DownloadError : a file could not be fetched (nothing partial is left).
    """
    if fmt not in SOURCES:
        raise ValueError(f"unknown format {fmt!r}; choose one of {', '.join(SOURCES)} "
                         "(openb: python -m fgdopt.traces download)")
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    got = []
    for url, sha in SOURCES[fmt]:
        path = fetch_file(url, dest / url.rsplit("/", 1)[1], sha,
                          f"fetch it by hand from {url} into {dest}")
        got.append((path, sha256_of(path)))
    return got


def main(argv: list[str] | None = None) -> int:
    parser = OneLineParser(prog="python -m fgdopt.workloads.download", description=__doc__.split("\n\n")[0])
    parser.add_argument("format", nargs="?", help=f"one of {', '.join(SOURCES)}")
    parser.add_argument("--dest", default=".", help="target folder (default: the current folder)")
    parser.add_argument("--list", action="store_true", help="print every pinned address and stop")
    args = parser.parse_args(argv)
    if args.list:
        for fmt, files in SOURCES.items():
            for url, _ in files:
                print(f"{fmt:9} {url}")
        return 0
    if args.format not in SOURCES:
        parser.error(f"argument format: {args.format!r} is not one of {', '.join(SOURCES)}")
    check_dest(parser, args.dest)
    try:
        for path, sha in download(args.format, args.dest):
            print(f"{sha}  {path}")
    except DownloadError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
