"""The pages say the same thing as each other and as the committed files (fast, no processes).

Facts are found by pattern in every page, not looked up at known places, so a page added
later that states one of them differently fails here too:

- which GPUs the CUDA path ran on: every sentence about the CUDA path, tests or rows that
  names a GPU names exactly the GPUs of the committed CUDA runs (docs/benchmarks/cuda-*),
  and no page says it never ran on a GPU;
- the README's two commands: quoted verbatim on the landing page and in the quickstart,
  and every quoted `pip install torch==... && python -m ...` is one of them;
- counts and measured times quoted in prose (the suite's tests, its CUDA tests, the
  sender-program tests, the dead-worker measurement): one value across all pages;
- benchmark figures: the machine a page says a run was made on, the ratios to TorchRL
  and to a queue of state_dicts, the ms figures quoted beside the 1 GB model, and every
  table of send latencies whose columns are the benchmark's systems, against the
  committed results.json.

A contradiction in a page this test's author may not edit is listed in KNOWN, with the
fix, and expected to fail (strictly: once fixed, remove it from KNOWN).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "docs" / "benchmarks"

# Contradictions in pages owned elsewhere, reported with their fix: (page, check) -> why.
KNOWN: dict[tuple[str, str], str] = {}


# ---- the pages ----------------------------------------------------------------------------

def _pages() -> list[Path]:
    docs = [p for p in sorted((ROOT / "docs").rglob("*.md")) if "spec" not in p.relative_to(ROOT / "docs").parts]
    return docs + sorted((ROOT / "spec").glob("*.md")) + [ROOT / "README.md", ROOT / "interop" / "numpy" / "README.md"]


PAGES = [p for p in _pages() if p.exists()]
FENCE = re.compile(r"^[ \t]*(```+|~~~+)(.*)$")


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def code_blocks(text: str) -> list[tuple[str, str]]:
    """(language, body) of each fenced block."""
    out, lines, i = [], text.splitlines(), 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence, lang, body = m[1], m[2].strip().lower(), []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i])
            i += 1
        out.append((lang, "\n".join(body)))
        i += 1
    return out


def prose(text: str) -> str:
    """The page without its fenced blocks, HTML comments and tags (tags' text kept)."""
    out, inside, fence = [], False, ""
    for line in text.splitlines():
        m = FENCE.match(line)
        if m and (not inside or line.strip().startswith(fence)):
            inside, fence = (not inside), m[1]
            out.append("")
            continue
        out.append("" if inside else line)
    text = "\n".join(out)
    text = re.sub(r"<!--.*?-->", " ", text, flags=re.S)
    return re.sub(r"</?[a-zA-Z][^>]*>", " ", text)


def blocks(text: str) -> list[str]:
    """Paragraphs, list items and table rows of the prose, each on one line."""
    out: list[str] = []
    for para in re.split(r"\n\s*\n", prose(text)):
        item: list[str] = []
        for line in para.splitlines():
            if re.match(r"\s*([-*+]|\d+\.)\s", line) or line.lstrip().startswith("|"):
                if item:
                    out.append(" ".join(item))
                item = [line.strip()]
            else:
                item.append(line.strip())
        if item:
            out.append(" ".join(item))
    return [re.sub(r"\s+", " ", b).strip() for b in out if b.strip()]


def sentences(block: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.;:!?])\s+(?=[A-Z(`*])", block) if s.strip()]


def _unlink(text: str) -> str:
    """Markdown links as their text, emphasis marks dropped."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return text.replace("**", "").replace("`", "")


TEXTS = {_rel(p): p.read_text(encoding="utf-8") for p in PAGES}
BLOCKS = {page: [_unlink(b) for b in blocks(text)] for page, text in TEXTS.items()}


def _expect(page: str, check: str) -> None:
    """Mark the running test as an expected failure when (page, check) is a known, reported contradiction."""
    if (page, check) in KNOWN:
        pytest.xfail(f"known, reported: {page}: {KNOWN[(page, check)]}")


# ---- the committed runs -------------------------------------------------------------------

@dataclass(frozen=True)
class Run:
    name: str
    machine: dict
    p50_ms: dict  # (device, layout, params, receivers, system) -> ms, or None where it failed or was not run
    layouts: dict  # layout name -> tensors

    def gpu(self) -> str | None:
        return _gpu_model(self.machine.get("gpu") or "")


def _load(name: str) -> Run:
    data = json.loads((BENCH / name / "results.json").read_text(encoding="utf-8"))
    p50 = {(c["device"], c["layout"], int(c["params"]), c["receivers"], c["system"]):
           None if c["p50"] is None else c["p50"] * 1e3 for c in data["cases"]}
    return Run(name, data["machine"], p50, data["config"]["layouts"])


GPU_NAME = re.compile(r"\b(?:NVIDIA\s+)?((?:H|A|B|L|V)\d{2,3}|T4|RTX\s?\d{4})\b")


def _gpu_model(text: str) -> str | None:
    m = GPU_NAME.search(text)
    return m[1].replace(" ", "") if m else None


RUNS = {p.parent.name: _load(p.parent.name) for p in sorted(BENCH.glob("*/results.json"))}
LATEST = RUNS["latest"]
GPU_RUNS = {run.gpu(): run for run in RUNS.values() if run.gpu()}
def test_the_committed_runs_are_found():
    assert "latest" in RUNS and GPU_RUNS, f"docs/benchmarks/: latest and CUDA runs expected, found {sorted(RUNS)}"


# ---- numbers at the precision a page gives them --------------------------------------------

NUMBER = r"\d[\d,]*(?:\.\d+)?"


def agrees(quoted: str, value: float | None) -> bool:
    """A figure as quoted ("52.8", "1,836", "0.20") is `value` rounded to the digits it shows."""
    if value is None:
        return False
    digits = quoted.replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return abs(float(digits) - value) <= 0.5 * 10 ** -decimals + 1e-9


# ---- 1. which GPUs the CUDA path ran on ----------------------------------------------------

CUDA_STATUS = re.compile(r"CUDA (?:path|tests|rows|bench)", re.I)
NEVER_ON_A_GPU = re.compile(
    r"not (?:yet )?(?:been )?run on a GPU|never (?:been )?run on a GPU|CUDA path is untested"
    r"|CUDA as specified but not", re.I)


def gpu_claims_wrong(page: str) -> list[str]:
    ran = set(GPU_RUNS)
    wrong = []
    for block in BLOCKS[page]:
        for s in sentences(block):
            if NEVER_ON_A_GPU.search(s):
                wrong.append(f"says the CUDA path never ran on a GPU, but it ran on {sorted(ran)}: {s[:160]}")
            named = {g.replace(" ", "") for g in GPU_NAME.findall(s)}
            if named and CUDA_STATUS.search(s) and named != ran:
                wrong.append(f"names {sorted(named)} where the committed CUDA runs are on {sorted(ran)}: {s[:160]}")
            for g in named - ran:
                if "NVIDIA" in s:
                    wrong.append(f"names the GPU {g}, of which no run is committed: {s[:160]}")
    return wrong


CHECKS = {"gpus": gpu_claims_wrong}


@pytest.mark.parametrize("page", sorted(TEXTS))
def test_pages_name_the_gpus_of_the_committed_cuda_runs(page):
    wrong = gpu_claims_wrong(page)
    if wrong:
        _expect(page, "gpus")
    assert not wrong, f"{page}:\n  " + "\n  ".join(wrong)


@pytest.mark.parametrize("page, check", sorted(KNOWN))
def test_a_known_contradiction_is_still_there(page, check):
    assert CHECKS[check](page), f"{page} no longer contradicts ({check}): take it off KNOWN in this file"


# ---- 2. the README's two commands ----------------------------------------------------------

def _readme_commands() -> dict[str, str]:
    cmds = {}
    for lang, body in code_blocks(TEXTS["README.md"]):
        line = body.strip()
        if lang in ("bash", "sh", "console") and "&&" in line:
            cmds["demo" if "weightsync demo" in line else "tests" if "pytest" in line else line] = line
    return cmds


README_COMMANDS = _readme_commands()


def test_the_readme_has_its_two_commands():
    assert set(README_COMMANDS) == {"demo", "tests"}, README_COMMANDS


@pytest.mark.parametrize("page", ["docs/index.md", "docs/quickstart.md"])
def test_landing_page_and_quickstart_quote_the_readme_commands_verbatim(page):
    quoted = {body.strip() for lang, body in code_blocks(TEXTS[page]) if lang in ("bash", "sh", "console")}
    missing = [cmd for cmd in README_COMMANDS.values() if cmd not in quoted]
    assert not missing, f"{page} does not quote the README's command(s) {missing}"


@pytest.mark.parametrize("page", sorted(TEXTS))
def test_every_quoted_demo_or_test_command_is_the_readmes(page):
    pin = re.search(r"torch==(\S+)", README_COMMANDS["tests"])[1]
    wrong = []
    for lang, body in code_blocks(TEXTS[page]):
        if lang not in ("bash", "sh", "console"):
            continue
        for line in body.splitlines():
            line = line.strip()
            for other in re.findall(r"torch==(\S+)", line):
                if other != pin:
                    wrong.append(f"pins torch=={other}, the README torch=={pin}: {line}")
            if line.startswith("pip install") and "&&" in line and re.search(r"weightsync demo|-m pytest$", line):
                if line not in README_COMMANDS.values():
                    wrong.append(f"quotes a demo or test command unlike the README's: {line}")
    assert not wrong, f"{page}:\n  " + "\n  ".join(wrong)


# ---- 3. counts and measured times quoted in more than one place -----------------------------

# Each fact: patterns whose first non-empty group is its value; every page that states it states one value.
FACTS = {
    "tests in the conformance suite's default profile": [r"(?:suite|default profile)[^.]{0,80}?\bruns (\d[\d,]*) tests"],
    "CUDA tests in the conformance suite": [r"\((\d+) of them CUDA tests", r"its (\d+) CUDA tests"],
    "sender-program tests in the suite": [r"sender-program tests \(`?--sender-cmd`?, (\d+) tests\)",
                                          r"the (\d+) sender-program tests"],
    "seconds weightsync took to name a killed TorchRL worker": [
        r"dead worker is named in (\d+\.\d+) s", r"ReceiverDiedError`? naming worker \d+ in (\d+\.\d+) s"],
    "seconds TorchRL's scheme was still blocked on a killed worker": [
        r"still blocked after (\d+) s", r"still blocked when the (\d+) s ran out"],
}


@pytest.mark.parametrize("fact", sorted(FACTS))
def test_a_count_or_time_quoted_on_several_pages_is_one_value(fact):
    said: dict[str, set[str]] = {}
    for page, text in TEXTS.items():
        flat = re.sub(r"\s+", " ", prose(text))
        for pattern in FACTS[fact]:
            for m in re.finditer(pattern, flat):
                said.setdefault(m[1].replace(",", ""), set()).add(page)
    assert len(said) <= 1, f"{fact}: pages disagree: " + "; ".join(f"{v} in {sorted(p)}" for v, p in said.items())


def test_the_landing_pages_measured_figures_are_found_by_these_checks():
    """A rephrased landing page must still be checked: each of its figures matches a pattern here."""
    flat = re.sub(r"\s+", " ", _unlink(prose(TEXTS["docs/index.md"])))
    assert re.search(FACTS["seconds weightsync took to name a killed TorchRL worker"][0], flat)
    assert re.search(FACTS["seconds TorchRL's scheme was still blocked on a killed worker"][0], flat)
    assert RATIO.search(flat) and GB_MS.search(flat) and MACHINE_CPU.search(flat)


# ---- 4. benchmark figures against the committed results.json --------------------------------

WS = "weightsync push zero-copy"
RATIO = re.compile(rf"(?P<a>{NUMBER})\s*(?:×|x|times)\s+faster than (?P<base>TorchRL|a queue)"
                   rf"|took (?P<b>{NUMBER}) times weightsync's zero-copy send"
                   rf"|\((?P<c>{NUMBER})x weightsync zero-copy\)")
GB_MS = re.compile(rf"(?<!about )(?<!~)\b({NUMBER}) ms\b")
MACHINE_CPU = re.compile(r"AMD EPYC|Intel\(R\) Xeon")


def _run_of(sentence: str) -> Run:
    gpu = _gpu_model(sentence)
    return GPU_RUNS.get(gpu, LATEST) if gpu else LATEST


def _ratios(run: Run, baseline: str, case: dict) -> list[float]:
    """baseline / weightsync zero-copy for every committed case that fits what the text says of it."""
    out = []
    for (dev, layout, params, n, system), value in run.p50_ms.items():
        if any(case.get(k, v) != v for k, v in (("layout", layout), ("params", params), ("receivers", n))):
            continue
        if system == baseline and value is not None:
            ws = run.p50_ms.get((dev, layout, params, n, WS))
            if ws:
                out.append(value / ws)
    return out


@pytest.mark.parametrize("page", sorted(TEXTS))
def test_ratios_to_torchrl_and_a_queue_are_those_of_a_committed_case(page):
    wrong = []
    for block in BLOCKS[page]:
        for sentence in sentences(block):
            for m in RATIO.finditer(sentence):
                quoted = m["a"] or m["b"] or m["c"]
                baseline = "queue" if m["base"] == "a queue" else "torchrl"
                case = _case(sentence, LATEST.layouts)  # the sentence's case; the model's size may be the paragraph's
                if "1 GB" in block:
                    case.setdefault("params", 500_000_000)
                if not any(agrees(quoted, r) for r in _ratios(_run_of(block), baseline, case)):
                    wrong.append(f"{quoted}x against {baseline}: no committed case {case} has that ratio: {block[:160]}")
    assert not wrong, f"{page}:\n  " + "\n  ".join(wrong)


@pytest.mark.parametrize("page", sorted(TEXTS))
def test_ms_figures_quoted_beside_the_1_gb_model_are_committed_p50s(page):
    """In a paragraph or item about the 1 GB model (5e8 bf16 parameters), each "N ms" not said to be "about" N
    is the p50 of a 5e8-parameter case of the run it names (a GPU's, or the latest)."""
    wrong = []
    for block in BLOCKS[page]:
        if "1 GB" not in block or block.startswith("|"):
            continue
        run = _run_of(block)
        values = [v for (_, _, params, _, _), v in run.p50_ms.items() if params == 500_000_000 and v is not None]
        for m in GB_MS.finditer(block):
            if not any(agrees(m[1], v) for v in values):
                wrong.append(f"{m[1]} ms is no p50 of the 1 GB cases of run {run.name}: {block[:160]}")
    assert not wrong, f"{page}:\n  " + "\n  ".join(wrong)


@pytest.mark.parametrize("page", sorted(TEXTS))
def test_the_machine_a_page_names_for_a_committed_run_is_that_runs(page):
    wrong = []
    for block in BLOCKS[page]:
        for s in sentences(block):
            gpu = _gpu_model(s)
            if gpu in GPU_RUNS:
                run = GPU_RUNS[gpu]
            elif MACHINE_CPU.search(s) and ("AMD EPYC" in s) == ("AMD EPYC" in LATEST.machine["cpu"]):
                run = LATEST
            else:
                continue
            for m in re.finditer(r"(\d+)[ -]cores?\b", s):
                if int(m[1]) != run.machine["cores"]:
                    wrong.append(f"{m[0]}, where run {run.name} had {run.machine['cores']}: {s[:160]}")
            for m in re.finditer(r"\btorch (\d+\.\d+(?:\.\d+)?)", s):
                if not run.machine["torch"].startswith(m[1]):
                    wrong.append(f"torch {m[1]}, where run {run.name} had {run.machine['torch']}: {s[:160]}")
            for m in re.finditer(r"\bTorchRL (\d+\.\d+(?:\.\d+)?)", s):
                if run.machine.get("torchrl") and not run.machine["torchrl"].startswith(m[1]):
                    wrong.append(f"TorchRL {m[1]}, where run {run.name} had {run.machine['torchrl']}: {s[:160]}")
    assert not wrong, f"{page}:\n  " + "\n  ".join(wrong)


# Tables of send latencies: a column per system, a row per case.
COLUMNS = [  # (pattern on the header cell, system, or "fastest" for the fastest weightsync variant)
    (r"fastest weightsync", "fastest"),
    (r"zero-copy workers|^zero-copy$", WS),
    (r"copying workers|^weightsync push$", "weightsync push"),
    (r"torchrl", "torchrl"),
    (r"queue", "queue"),
    (r"plain copy|^copy$", "copy"),
]
LAYOUT_WORDS = {"dense": "llm", "experts": "moe", "mixture of experts": "moe"}


def _case(text: str, layouts: dict) -> dict:
    """What a row label or the paragraph before a table says of the case: params, layout, workers."""
    case: dict = {}
    if m := re.search(r"(\d)e(\d+)\s*(?:bf16\s+|float32\s+)?param", text):
        case["params"] = int(m[1]) * 10 ** int(m[2])
    for word, layout in LAYOUT_WORDS.items():
        if re.search(rf"\b{word}\b", text, re.I):
            case["layout"] = layout
    if "layout" not in case and (m := re.search(r"(\d[\d,]*) tensors", text)):
        by_count = {n: name for name, n in layouts.items()}
        case["layout"] = by_count.get(int(m[1].replace(",", "")))
    if m := re.search(r"\b(\d+) (?:zero-copy |copying )?workers?\b", text):
        case["receivers"] = int(m[1])
    return case


def _cells(row: str) -> list[str]:
    return [c.strip() for c in row.strip().strip("|").split("|")]


def tables(text: str) -> list[tuple[str, list[str], list[list[str]]]]:
    """(its section's text before it, header, rows) of each Markdown table in the prose."""
    out, lines = [], prose(text).splitlines()
    i = 0
    while i < len(lines):
        if lines[i].lstrip().startswith("|") and i + 1 < len(lines) and re.match(r"\s*\|[\s:|-]+\|\s*$", lines[i + 1]):
            j, before = i - 1, []  # the section's text before the table, its other tables left out
            while j >= 0 and not lines[j].startswith("#"):
                if lines[j].strip() and not lines[j].lstrip().startswith("|"):
                    before.insert(0, lines[j].strip())
                j -= 1
            rows, k = [], i + 2
            while k < len(lines) and lines[k].lstrip().startswith("|"):
                rows.append(_cells(lines[k]))
                k += 1
            out.append((_unlink(" ".join(before)), _cells(lines[i]), rows))
            i = k
        else:
            i += 1
    return out


def _expected(run: Run, case: dict, system: str, packed: bool) -> float | None:
    key = ("cpu" if run is LATEST else "cuda", case["layout"], case["params"], case["receivers"])
    if packed:
        system = "weightsync push zero-copy packed"
    if system == "fastest":
        found = [v for (d, lay, p, n, s), v in run.p50_ms.items() if (d, lay, p, n) == key and v is not None
                 and s.startswith("weightsync") and "tcp" not in s]
        return min(found) if found else None
    return run.p50_ms.get((*key, system))


@pytest.mark.parametrize("page", [p for p in sorted(TEXTS) if "/benchmarks/" not in p])
def test_latency_tables_quote_the_committed_p50s(page):
    wrong, checked = [], 0
    for before, header, rows in tables(TEXTS[page]):
        systems = {}
        for col, cell in enumerate(header):
            for pattern, system in COLUMNS:
                if re.search(pattern, _unlink(cell).strip(), re.I):
                    systems[col] = system
                    break
        if len(set(systems.values())) < 2:
            continue
        run, context = _run_of(before), _case(before, LATEST.layouts)
        workers_col = next((c for c, h in enumerate(header) if re.fullmatch(r"workers|receivers", h.strip(), re.I)), None)
        for row in rows:
            case = {**context, **_case(_unlink(row[0]), run.layouts)}
            if workers_col is not None:
                case["receivers"] = int(row[workers_col])
            if not {"params", "layout", "receivers"} <= case.keys():
                wrong.append(f"a row whose case this test cannot tell (params, tensors, workers): {row[0]}")
                continue
            for col, system in systems.items():
                cell = _unlink(row[col])
                figures = re.findall(rf"({NUMBER})(?:\s*ms)?(\s*packed)?", re.sub(r"\(packed\)", "", cell))
                if not figures:
                    if _expected(run, case, system, False) is not None:
                        wrong.append(f"{row[0]} / {header[col]}: '{cell}', but the committed run measured one")
                    continue
                for number, packed in figures:
                    value = _expected(run, case, system, bool(packed.strip()))
                    if "(packed)" in cell and system != "fastest":
                        value = _expected(run, case, system, True)
                    checked += 1
                    if not agrees(number, value):
                        wrong.append(f"{row[0]} / {header[col]}: {number}, the committed run ({run.name}) has "
                                     f"{value if value is None else round(value, 3)}")
    assert not wrong, f"{page}:\n  " + "\n  ".join(wrong)


# ---- 5. a site that needs no network ---------------------------------------------------------

def _yaml_list(text: str, key: str) -> list[str]:
    """The items of a top-level list in mkdocs.yml, read without a YAML package (the fast layer has none)."""
    m = re.search(rf"^{key}:\s*\n((?:[ \t]+-[^\n]*\n|[ \t]*#[^\n]*\n)*)", text, re.M)
    items = re.findall(r"^[ \t]+-\s*(.+?)\s*(?:#.*)?$", m[1], re.M) if m else []
    return [i.strip("'\"") for i in items]


REMOTE = re.compile(r"^(https?:)?//", re.I)


def test_the_site_loads_no_remote_script_font_or_image():
    text = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    scripts, styles = _yaml_list(text, "extra_javascript"), _yaml_list(text, "extra_css")
    assert not [s for s in scripts + styles if REMOTE.match(s)], f"remote scripts or styles: {scripts + styles}"
    for local in scripts + styles:
        assert (ROOT / "docs" / local).is_file(), f"extra_javascript/extra_css names {local}, not under docs/"
    theme = re.search(r"^theme:\s*\n((?:[ \t]+[^\n]*\n)*)", text, re.M)
    assert theme and re.search(r"^[ \t]+font:\s*false\b", theme[1], re.M), (
        "theme.font loads Google Fonts: set `font: false`")
    uses_mermaid = any("```mermaid" in text for text in TEXTS.values())
    assert not uses_mermaid or any(Path(s).name.startswith("mermaid") for s in scripts), (
        "pages draw mermaid diagrams, but no local mermaid script is loaded: the theme would fetch it from a CDN")
    for page, page_text in TEXTS.items():
        for m in re.finditer(r"<script[^>]*\bsrc=[\"']?(?:https?:)?//|!\[[^\]]*\]\((?:https?:)?//|<img[^>]*\bsrc=[\"']?"
                             r"(?:https?:)?//", page_text):
            pytest.fail(f"{page} loads from the network: {m[0]}")


def test_the_built_config_loads_no_remote_script():
    """The same, as MkDocs reads the config (where the docs extra is installed)."""
    config_module = pytest.importorskip("mkdocs.config")
    config = config_module.load_config(str(ROOT / "mkdocs.yml"))
    scripts = [str(getattr(s, "path", s)) for s in config["extra_javascript"]]
    assert scripts and not [s for s in scripts + list(config["extra_css"]) if REMOTE.match(str(s))], scripts
    assert config["theme"]["font"] is False


def test_the_vendored_mermaid_carries_its_licence():
    for script in (ROOT / "docs" / "assets" / "vendor").glob("mermaid-*/mermaid.min.js"):
        assert (script.parent / "LICENSE").is_file(), f"{script.parent}: no LICENSE beside the vendored script"
