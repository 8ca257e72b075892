#!/usr/bin/env python3
"""Writes data/frameworks/*.schema.json, the part of the frameworks' facts (data/frameworks/*.json,
SOURCES.md says where they come from) that paratune's launch checker needs at run time, compiled in:
every Megatron-LM flag (action, type, choices, nargs), every torchtitan TOML key (type, choices) and
every DeepSpeed ds_config key (type, choices), with the pinned versions. Run by hand when the facts
change; the outputs are committed, so building paratune does not need this script.

    python3 scripts/framework_schemas.py [FACTS_DIR]     # default: data/frameworks
"""
import json
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCE = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "data" / "frameworks"
OUT = ROOT / "data" / "frameworks"


def megatron():
    d = json.loads((SOURCE / "megatron-lm.json").read_text())
    meta = d["meta"]
    flags = {}
    for option in d["options"]:
        entry = {
            "action": option["action"],
            "type": option["type"],
            "choices": option["choices"],
            "nargs": option["nargs"],
            "deprecated": option["help_mentions_deprecated"],
        }
        for flag in option["flags"]:
            flags[flag] = entry
    diff = d["diff_vs_core_v0.19.0"]
    # The pinned commit is Megatron-LM main at package version 0.20.0 (dev); core_v0.19.0 differs
    # by the flags listed in the diff.
    return {
        "framework": "megatron",
        "versions": {
            "0.20.0-dev": {"commit": meta["commit"], "date": meta["commit_date"], "default": True},
            "core_v0.19.0": {
                "commit": diff["other_commit"],
                "absent": diff["only_in_this_commit"],
                "extra": diff["only_in_core_v0.19.0"],
                "changed": diff["changed"],
            },
        },
        "flags": flags,
    }


def torchtitan():
    d = json.loads((SOURCE / "torchtitan.json").read_text())
    meta = d["meta"]
    keys = {}
    for section in d["sections"]:
        for field in section["fields"]:
            keys[f"{section['section']}.{field['key']}"] = {
                "toml_type": field["toml_type"],
                "choices": field["choices"],
                "nullable": field["nullable"],
            }
    return {
        "framework": "torchtitan",
        "versions": {meta["release_tag"]: {"commit": meta["commit"], "date": meta["commit_date"], "default": True}},
        "keys": keys,
        "models": d["models"],
        "model_converters": d["model_converters"],
        "pipeline_schedules": d["pipeline_schedules"],
    }


def deepspeed():
    d = json.loads((SOURCE / "deepspeed.json").read_text())
    meta = d["meta"]
    keys = {}
    for entry in d["top_level"]:
        keys[entry["key"]] = {"type": entry["type"], "choices": entry.get("choices")}
    for name, section in d["sections"].items():
        keys[name] = {"type": "section", "choices": None}
        for entry in section["keys"]:
            keys[f"{name}.{entry['key']}"] = {"type": entry["type"], "choices": entry.get("choices")}
    for name in ("zero_optimization", "zero_optimization.offload_param", "zero_optimization.offload_optimizer"):
        keys[name] = {"type": "section", "choices": None}
        for field in d[name]["fields"]:
            keys[f"{name}.{field['key']}"] = {"type": field["type"], "choices": field.get("choices")}
            for alias in field.get("aliases", []) or []:
                keys[f"{name}.{alias}"] = {"type": field["type"], "choices": field.get("choices")}
    return {
        "framework": "deepspeed",
        "versions": {meta["version_txt"]: {"commit": meta["commit"], "date": meta["commit_date"], "default": True}},
        "keys": keys,
        "launcher_flags": d["launcher"]["flags"],
    }


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    for name, build in (("megatron-lm", megatron), ("torchtitan", torchtitan), ("deepspeed", deepspeed)):
        path = OUT / f"{name}.schema.json"
        path.write_text(json.dumps(build(), indent=1, sort_keys=True) + "\n")
        print(f"wrote {path} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
