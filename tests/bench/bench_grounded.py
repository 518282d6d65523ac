"""Code questions on the local model: the agent before and after grounding, the researcher, the
code-question orchestrator, and a bare loop, on the easy and the harder development sets.

Sets (a question counts as right when every `expect` string is in the answer, case-insensitive;
an answer starting with "Not found" counts as not found; anything else is wrong-but-confident):
- easy:  tests/bench/eval/agent_eventsourcing.json ("which file / class / method ...")
- hard:  tests/bench/eval/agent_eventsourcing_hard.json (values read from code, two-hop
         relations, message texts; answers checked by hand, see each question's "where")
- h11:   tests/bench/eval/agent_h11_heldout.json (the same kinds over the h11 package, held
         out: written before any system ran on it; no rule is fitted to it)

Systems, all against the same llama.cpp server, in one run:
- after:        `Client().submit(q, root=pkg, grounded=True)`: the grounded ReAct agent (find_definition,
                quoted evidence, the verify step)
- before:       the same agent with `grounded=False`, no patches and the tools it had before
                (search_files, read_file): its old prompt, no evidence check
- researcher:   `kind="researcher"`, root the package (plan, loop, report)
- orchestrator: `kind="orchestrator"` over a folder holding a copy of the package
- bare:         the openai client in a plain loop with its own prompt, its own JSON reading and
                its own two tools (grep and read, written here): no Chorus code at all

    .venv/bin/python tests/bench/bench_grounded.py [--set easy|hard|both|h11] [--systems after,before,bare]
        [--questions N | --pick 3,7] [--max-iterations 10] [--out FILE.md]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

SETS = {  # name -> (questions, the installed package they are about)
    "easy": (ROOT / "tests" / "bench" / "eval" / "agent_eventsourcing.json", "eventsourcing"),
    "hard": (ROOT / "tests" / "bench" / "eval" / "agent_eventsourcing_hard.json", "eventsourcing"),
    "h11": (ROOT / "tests" / "bench" / "eval" / "agent_h11_heldout.json", "h11"),  # patches all_names_shown and only_where came from it
    "uvicorn": (ROOT / "tests" / "bench" / "eval" / "agent_uvicorn_heldout.json", "uvicorn"),  # patch head_phrase came from it
    "tenacity": (ROOT / "tests" / "bench" / "eval" / "agent_tenacity_heldout.json", "tenacity"),  # patch new_name came from it
    "pluggy": (ROOT / "tests" / "bench" / "eval" / "agent_pluggy_heldout.json", "pluggy"),  # patch new_name measured on it
    # not the installed version (or not installed), so their wheels are fetched (`corpus`)
    "packaging": (ROOT / "tests" / "bench" / "eval" / "agent_packaging_heldout.json", "packaging==25.0"),  # patches private_names, kind_words, names_one and restated came from it
    "itsdangerous": (ROOT / "tests" / "bench" / "eval" / "agent_itsdangerous_heldout.json", "itsdangerous==2.2.0"),  # today's patches measured on it
    "dateutil": (ROOT / "tests" / "bench" / "eval" / "agent_dateutil_heldout.json", "python-dateutil==2.9.0.post0"),  # today's patches and the deleted experiment 6 measured on it; experiment 7 came from it
    "attrs": (ROOT / "tests" / "bench" / "eval" / "agent_attrs_heldout.json", "attrs==25.3.0"),  # today's patches and the deleted experiments 6 and 7 measured on it; experiment 8 came from it
    "structlog": (ROOT / "tests" / "bench" / "eval" / "agent_structlog_heldout.json", "structlog==25.4.0"),
}
SYSTEMS = ("after", "before", "researcher", "orchestrator", "bare")


def corpus(package: str) -> Path:
    """The source folder of an installed package, or for `name==version` that release's wheel
    from PyPI, unpacked once under ~/.cache/chorus/heldout."""
    import importlib

    if "==" not in package:
        return Path(importlib.import_module(package).__file__).parent
    name, version = package.split("==")
    base = Path.home() / ".cache" / "chorus" / "heldout" / f"{name}-{version}"
    if not any(base.glob("*/__init__.py")):
        import subprocess
        import zipfile

        wheels = base / "wheels"
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
                        "-d", str(wheels), package], check=True)
        with zipfile.ZipFile(next(wheels.glob("*.whl"))) as wheel:
            wheel.extractall(base)
    # the wheel's package folder (python-dateutil's is dateutil)
    return next(p.parent for p in sorted(base.glob("*/__init__.py")))


def verdict(answer: str, expect: list[str]) -> str:
    text = answer.strip()
    stated = re.search(r"^## Answer\s*\n(?P<a>.*?)(?=^## |\Z)", text, re.M | re.S)
    if stated:  # a researcher's report that states its answer is judged by that answer alone
        text = stated["a"].strip()
    if not text or re.match(r"^\W*not found", text, re.I):
        return "not found"
    return "right" if all(e.lower() in text.lower() for e in expect) else "wrong"


# -- the bare loop: none of Chorus's code -------------------------------------------------------

BARE_SYSTEM = """You answer a question about the Python source files in a folder by calling tools.
Tools:
- grep: {"tool": "grep", "pattern": "<a regular expression>"} lists matching lines as path:line: text
- read: {"tool": "read", "path": "<path>", "start": <line>, "end": <line>} shows those lines
When you know the answer: {"answer": "<the answer>"}
Reply with one JSON object only."""


def bare_grep(root: Path, pattern: str, limit: int = 30) -> str:
    try:
        rx = re.compile(pattern, re.I)
    except re.error:
        rx = re.compile(re.escape(pattern), re.I)
    hits = []
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = Path(dirpath) / name
            for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if rx.search(line):
                    hits.append(f"{path.relative_to(root)}:{n}: {line.strip()[:160]}")
                    if len(hits) >= limit:
                        return "\n".join(hits) + "\n(more not shown)"
    return "\n".join(hits) or "no match"


def bare_read(root: Path, path: str, start: int = 1, end: int = 0) -> str:
    target = (root / path).resolve()
    if not target.is_file() or root.resolve() not in target.parents:
        return f"no file {path}"
    lines = target.read_text(errors="replace").splitlines()
    start = max(1, int(start or 1))
    end = int(end or 0) or start + 40
    return "\n".join(f"{n}: {lines[n - 1]}" for n in range(start, min(end, len(lines)) + 1)) or "no lines there"


def bare_loop(base_url: str, model: str, question: str, root: Path, max_iterations: int) -> tuple[str, int]:
    from openai import OpenAI

    client = OpenAI(base_url=base_url, api_key="not-needed", max_retries=0, timeout=600)
    messages = [{"role": "system", "content": BARE_SYSTEM}, {"role": "user", "content": f"Question: {question}"}]
    for call in range(1, max_iterations + 1):
        if call == max_iterations:
            messages.append({"role": "user", "content": 'Answer now: {"answer": "..."}'})
        reply = client.chat.completions.create(
            model=model, messages=messages, temperature=0.0, max_tokens=400, response_format={"type": "json_object"}
        )
        content = reply.choices[0].message.content or ""
        messages.append({"role": "assistant", "content": content})
        try:
            step = json.loads(content[content.index("{") : content.rindex("}") + 1])
        except ValueError:
            messages.append({"role": "user", "content": "That was not one JSON object. Try again."})
            continue
        if not isinstance(step, dict):
            continue
        if "answer" in step:
            return str(step["answer"]), call
        tool = step.get("tool")
        if tool == "grep":
            result = bare_grep(root, str(step.get("pattern", "")))
        elif tool == "read":
            try:
                result = bare_read(root, str(step.get("path", "")), step.get("start", 1), step.get("end", 0))
            except (TypeError, ValueError):
                result = "start and end must be line numbers"
        else:
            result = "unknown tool; use grep or read, or answer"
        messages.append({"role": "user", "content": f"Result:\n{result[:3000]}"})
    return "", max_iterations


# -- the run -----------------------------------------------------------------------------------------


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--set", choices=("easy", "hard", "both", *(s for s in SETS if s not in ("easy", "hard"))), default="both")
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--questions", type=int, default=0, help="only the first N questions of each set")
    ap.add_argument("--pick", default="", help="only these questions of each set, by number (1-based): e.g. 3,7")
    ap.add_argument("--max-iterations", type=int, default=10)
    ap.add_argument("--out", type=Path, help="also write the tables (markdown) here")
    ap.add_argument("--json", type=Path, help="also write every answer (JSON) here")
    args = ap.parse_args()
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        ap.error(f"unknown systems: {', '.join(sorted(unknown))}; choose from {', '.join(SYSTEMS)}")

    from actors import Client
    from actors.agent.policy import unwrap_answer
    from actors.runtime.llm.local_server import LocalLlamaServer
    from actors.runtime.settings import Settings

    data = Path(tempfile.mkdtemp(prefix="chorus-bench-"))
    base = Settings.from_env()
    server = LocalLlamaServer(base)
    server.start()
    settings = base.model_copy(
        update={"data_dir": data, "store_url": f"sqlite:///{data / 'chorus.db'}",
                "llm_base_url": server.base_url, "llm_structured": "json_object"}
    )  # fmt: skip
    print(f"Chorus runs are recorded in {settings.store_url}", flush=True)
    names = ["easy", "hard"] if args.set == "both" else [args.set]
    results: list[dict] = []
    with Client(settings=settings) as chorus:

        def submit(q: str, system: str, pkg: Path, repos: Path):
            it = args.max_iterations
            if system == "after":  # every current patch (actors/agent/patches.py), as new grounded runs
                return chorus.submit(q, root=pkg, max_iterations=it, grounded=True)
            if system == "before":
                return chorus.submit(q, root=pkg, max_iterations=it, grounded=False, tools=["search_files", "read_file"],
                                     patches=[])  # its prompt before grounding (not the plain agent's files_prompt)
            if system == "researcher":
                return chorus.submit(q, kind="researcher", repo=str(pkg), max_iterations=it)
            return chorus.submit(q, kind="orchestrator", root=repos, max_iterations=it)

        for set_name in names:
            path, package = SETS[set_name]
            pkg = corpus(package)
            repos = data / f"repos-{pkg.name}"  # the orchestrator's folder of repositories: a copy
            if not repos.exists():
                shutil.copytree(pkg, repos / pkg.name, ignore=shutil.ignore_patterns("__pycache__"))
            questions = json.loads(path.read_text())["questions"]
            if args.questions:
                questions = questions[: args.questions]
            if args.pick:
                questions = [questions[int(n) - 1] for n in args.pick.split(",") if 0 < int(n) <= len(questions)]
            for i, q in enumerate(questions):
                order = systems if i % 2 == 0 else list(reversed(systems))  # llama.cpp's prefix cache favours the second
                for system in order:
                    t = time.perf_counter()
                    if system == "bare":
                        answer, calls = bare_loop(server.base_url, settings.llm_model, q["q"], pkg, args.max_iterations)
                    else:
                        run = submit(q["q"], system, pkg, repos)
                        run.wait()
                        answer = unwrap_answer(run.result.answer or "") if run.result.ok else ""
                        calls = sum(1 for r in chorus.events(run.run_id) if r.event.type_name == "LlmCompleted")
                    seconds = time.perf_counter() - t
                    v = verdict(answer, q["expect"])
                    results.append({"set": set_name, "q": q["q"], "kind": q.get("kind", ""), "system": system,
                                    "verdict": v, "calls": calls, "seconds": seconds, "answer": answer})
                    print(f"[{set_name}] {system:<12} {v:<9} {calls:>2} calls {seconds:6.1f}s  {q['q'][:70]}", flush=True)
    server.stop()

    out = []
    for set_name in names:
        rows = [r for r in results if r["set"] == set_name]
        total = len({r["q"] for r in rows})
        out += [f"### {set_name} set ({total} questions, max {args.max_iterations} iterations, temperature 0)", "",
                "| system | right | wrong (confident) | not found | median s | median LLM calls |", "|---|---|---|---|---|---|"]
        for system in systems:
            mine = [r for r in rows if r["system"] == system]
            if not mine:
                continue
            count = {v: sum(r["verdict"] == v for r in mine) for v in ("right", "wrong", "not found")}
            out.append(
                f"| {system} | {count['right']}/{len(mine)} | {count['wrong']} | {count['not found']} | "
                f"{statistics.median(r['seconds'] for r in mine):.0f} | {statistics.median(r['calls'] for r in mine):g} |"
            )
        out.append("")
    table = "\n".join(out)
    print(table)
    if args.out:
        args.out.write_text(table + "\n")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
