#!/usr/bin/env python3
"""Writes the seed corpus of each fuzz target (fuzz/corpus/<target>/seed-*) from the repository's
examples, data and the inputs written in the tests, plus the published-runs CSV cut into small files.

Run from the repository root: python3 fuzz/seed_corpus.py [published_runs.csv]
With PARATUNE=build/paratune in the environment, a few preset models are added (as `paratune model
NAME --json` prints them) to the model targets' seeds.
Seeds are rewritten; the other files of a corpus directory (inputs libFuzzer found, merged in by
scripts/fuzz.sh --merge) are kept.
"""
import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"


def cxx_strings(path):
    """The string literals of a C++ file, adjacent ones joined, escapes decoded."""
    text = path.read_text()
    out, i, current, last_end = [], 0, None, -1
    token = re.compile(r'R"([^(\s]*)\(|"|//[^\n]*|/\*.*?\*/|\'(?:\\.|[^\\\'])\'', re.S)
    while True:
        m = token.search(text, i)
        if not m:
            break
        if m.group(0).startswith(("//", "/*", "'")):
            i = m.end()
            continue
        if m.group(0).startswith("R"):
            close = ")" + m.group(1) + '"'
            end = text.index(close, m.end())
            value, i = text[m.end():end], end + len(close)
        else:
            j, chars = m.end(), []
            while text[j] != '"':
                if text[j] == "\\":
                    esc = text[j + 1]
                    if esc == "x":
                        hexdigits = re.match(r"[0-9a-fA-F]+", text[j + 2:]).group(0)
                        chars.append(chr(int(hexdigits, 16)))
                        j += 2 + len(hexdigits)
                        continue
                    chars.append({"n": "\n", "t": "\t", "r": "\r", "0": "\0"}.get(esc, esc))
                    j += 2
                else:
                    chars.append(text[j])
                    j += 1
            value, i = "".join(chars), j + 1
        if current is not None and text[last_end:m.start()].strip() == "":
            current += value  # "a" "b" is one literal
        else:
            if current is not None:
                out.append(current)
            current = value
        last_end = i
    if current is not None:
        out.append(current)
    return out


def strings_of(*patterns):
    for pattern in patterns:
        for path in sorted(ROOT.glob(pattern)):
            yield from cxx_strings(path)


def seeds():
    s = {t: [] for t in ["model_yaml", "model_json", "cluster_file", "cluster_arg", "parallel_config", "tune_space",
                         "hpo_space", "trial_output", "published_runs", "calibration", "hardware_profile"]}
    examples = ROOT / "examples"
    for f in sorted(examples.glob("*.yaml")):
        text = f.read_text()
        s["cluster_file" if re.search(r"^gpu:", text, re.M) else "model_yaml"].append(text)
    s["tune_space"].append((examples / "tune" / "space.yaml").read_text())
    s["hpo_space"].append((examples / "tune" / "cnn_hpo.yaml").read_text())
    s["hpo_space"].append((examples / "tune" / "space.yaml").read_text())
    s["calibration"].append((ROOT / "data" / "calibration.json").read_text())
    for f in sorted((ROOT / "bench" / "results").glob("profile_*.json")) + sorted((ROOT / "data" / "profiles").glob("*.json")):
        s["hardware_profile"].append(f.read_text())

    for text in strings_of("tests/spec/*_test.cc", "tests/cli/*_test.cc", "tests/plan/*_test.cc",
                          "tests/launch/framework_support_test.cc"):
        stripped = text.lstrip()
        if "model_type" in text or (stripped.startswith("{") and "num_layers" in text):
            s["model_json"].append(text)
        elif re.search(r"^(num_layers|hidden_size|name):", text, re.M):
            s["model_yaml"].append(text)
        elif re.search(r"^gpu:", text, re.M):
            s["cluster_file"].append(text)
        elif re.fullmatch(r"[a-z0-9_]+=[^\s]*(,[a-z0-9_]+=[^\s]*)*", text):
            s["parallel_config"].append(text)
        elif re.fullmatch(r"[a-z0-9.-]+(:\d+|x\d+)?", text) and any(k in text for k in ("dgx", "h100", "a100", "b200", "gb200", "h200", "rtx")):
            s["cluster_arg"].append(text)
    for text in strings_of("tests/tune/*_test.cc", "tests/hpo/*_test.cc", "tests/cli/tune_cli_test.cc"):
        if "parameters" in text and ("\n" in text or text.lstrip().startswith("{")):
            typed = "type:" in text or '"type"' in text or "when" in text
            s["hpo_space"].append(text)
            if not typed:
                s["tune_space"].append(text)
    protocol = [t for t in strings_of("tests/trial/*.cc") if "@paratune" in t or "iteration" in t or "memory (MB)" in t
                or "memory" in t.lower()]
    s["trial_output"].append("\n".join(protocol) + "\n")
    for line in protocol:
        s["trial_output"].append(line + "\n")
    s["trial_output"].append("regex:step (?:\\d+) took ([0-9.]+) s\nstep 1 took 0.5 s\nstep 2 took 0.25 s\n")
    s["trial_output"].append("regex:t=([0-9.]+) at (\\d+)\nt=0.5 at 42\n")
    for preset in ["dgx-h100", "dgx-h100:16", "h100x128", "a100-80gbx64", "gb200-nvl72:2", "b200x16", "dgx-a100:4",
                   "workstation-rtx-3080", "h200x8", "rtx-a5000x2"]:
        s["cluster_arg"].append(preset)
    for config in ["dp=8,tp=8,pp=4,mbs=1,zero=1,recompute=selective,vpp=2,stage_layers=10/12/12/10",
                   "dp=2,tp=2,pp=2,vpp=2,zero=1", "dp=1,tp=8,pp=1,sp=true,recompute=full,recompute_layers=4",
                   "tp=2,pp=4,dp=1,recompute=full,recompute_layers=2/4/4/0", "dp=4,cp=2,ep=2,etp=1,ep_overlap=true",
                   "dp=8,tp=1,pp=4,vpp=2,account_embedding=true,account_loss=true,schedule=interleaved-1f1b",
                   "dp=32,tp=2,zero=3,op=8,grad_sync=end,overlap_p2p=false,tp_comm_overlap=true", "4x2,2x4"]:
        s["parallel_config"].append(config)

    if os.environ.get("PARATUNE"):
        for preset in ["gpt2", "bert-base", "llama3.1-405b", "mixtral-8x22b", "qwen3-30b-a3b", "deepseek-v3"]:
            printed = subprocess.run([os.environ["PARATUNE"], "model", preset, "--json"], check=True,
                                     capture_output=True, text=True).stdout
            model = json.dumps(json.loads(printed)["model"], indent=1)
            s["model_json"].append(model)
            s["model_yaml"].append(model)

    runs = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT.parent / "shared" / "calibration" / "published_runs.csv"
    if runs.exists():
        import csv, io
        rows = list(csv.reader(io.StringIO(runs.read_text(), newline="")))
        header, by_source = rows[0], {}
        for row in rows[1:]:
            by_source.setdefault(row[1], []).append(row)
        for source, source_rows in sorted(by_source.items()):
            buf = io.StringIO()
            csv.writer(buf, lineterminator="\n").writerows([header] + source_rows[:3])
            s["published_runs"].append(buf.getvalue())
    return s


def main():
    for target, texts in seeds().items():
        directory = CORPUS / target
        directory.mkdir(parents=True, exist_ok=True)
        for old in directory.glob("seed-*"):
            old.unlink()
        for text in dict.fromkeys(texts):  # unique, in order
            data = text.encode("utf-8", "surrogateescape") if isinstance(text, str) else text
            (directory / f"seed-{hashlib.sha1(data).hexdigest()[:12]}").write_bytes(data)
        print(f"{target}: {len(list(directory.glob('seed-*')))} seeds")


if __name__ == "__main__":
    main()
