"""``python3 -m paratune.profile --plan PLAN.json --out PROFILE.json``: measures on this node's hardware
exactly what a profile plan lists (GEMMs, attention, element-wise passes, memory bandwidth, launch and
synchronisation overhead, collectives, one training step) and writes the hardware profile (docs/profile.md).

Needs only PyTorch and the standard library: nothing here uses paratune's C++ extension. This file reads
and checks the plan and the command line (no PyTorch needed for that, so a bad plan is a clear error even
where PyTorch is missing) and writes the profile; the measurements are in _profile_kernels.py and the
training step in _profile_step.py.

Several processes: under ``torchrun`` (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR/PORT in the environment),
or ``--nproc N`` for N local processes (torch.multiprocessing on a free loopback port). Only rank 0 writes.

Exit codes: 0 written; 1 a failure while measuring, or no PyTorch; 2 a bad plan or command line.
"""

import argparse
import json
import os
import sys
import tempfile

PLAN_FORMAT = "paratune-profile-plan"
PROFILE_FORMAT = "paratune-hardware-profile"
VERSION = 1

PRECISIONS = ("bf16", "fp16", "fp8")
GEMM_DTYPES = ("bf16", "fp16", "fp32", "fp8")
ELEMENTWISE_KINDS = ("rmsnorm", "swiglu", "permute", "add")
COLLECTIVE_OPS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv")


class PlanError(Exception):
    """Bad input (the plan, --out, a flag): printed as one line, exit code 2."""


# --- the plan's fields: name -> (rule as the error states it, test) ------------------------------------------

def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


# Upper bounds as the profile's reader (src/cost/hardware_profile.cc) has them: counts and lengths fit in a
# 32-bit integer, sizes (GEMM dimensions, rows and columns, bytes) are exact in a double. Without them a
# size of 10**30 reached PyTorch and ended the whole measurement with a TypeError.
INT32_MAX = 2**31 - 1
SIZE_MAX = 2**53
POSITIVE = ("must be a positive integer (at most 2147483647)", lambda v: _is_int(v) and 0 < v <= INT32_MAX)
SIZE = ("must be a positive integer (at most 2^53)", lambda v: _is_int(v) and 0 < v <= SIZE_MAX)
NON_NEGATIVE = ("must be an integer >= 0 (at most 2147483647)", lambda v: _is_int(v) and 0 <= v <= INT32_MAX)
AT_LEAST_ONE = ("must be an integer >= 1 (at most 2147483647)", lambda v: _is_int(v) and 1 <= v <= INT32_MAX)
BOOLEAN = ("must be true or false", lambda v: isinstance(v, bool))
TEXT = ("must be a string", lambda v: isinstance(v, str))
ID = ("must be a non-empty string", lambda v: isinstance(v, str) and v != "")
LIST = ("must be a list (empty for none)", lambda v: isinstance(v, list))


def _one_of(values):
    return ("must be one of " + ", ".join(values), lambda v: isinstance(v, str) and v in values)


GEMM_FIELDS = {"id": ID, "m": SIZE, "n": SIZE, "k": SIZE, "dtype": _one_of(GEMM_DTYPES),
               "count": POSITIVE}
ATTENTION_FIELDS = {"id": ID, "batch": POSITIVE, "seq_len": POSITIVE, "heads": POSITIVE, "kv_heads": POSITIVE,
                    "head_dim": POSITIVE, "causal": BOOLEAN}
ELEMENTWISE_FIELDS = {"id": ID, "kind": _one_of(ELEMENTWISE_KINDS), "rows": SIZE, "cols": SIZE}
COLLECTIVE_FIELDS = {"id": ID, "op": _one_of(COLLECTIVE_OPS), "ranks": POSITIVE, "bytes": SIZE}
STEP_FIELDS = {"layers": POSITIVE, "hidden_size": POSITIVE, "ffn_hidden_size": POSITIVE, "heads": POSITIVE,
               "kv_heads": POSITIVE, "head_dim": POSITIVE, "vocab_size": POSITIVE, "seq_len": POSITIVE, "micro_batch": POSITIVE,
               "gated_mlp": BOOLEAN, "moe": None, "steps": POSITIVE}  # moe: null or MOE_FIELDS
MOE_FIELDS = {"experts": POSITIVE, "top_k": POSITIVE, "expert_ffn_hidden_size": POSITIVE,
              "shared_experts": NON_NEGATIVE}
TOP_FIELDS = {"format": None, "version": None, "model": TEXT, "model_fingerprint": TEXT, "gpu": TEXT,
              "precision": _one_of(PRECISIONS), "warmup": NON_NEGATIVE, "repetitions": AT_LEAST_ONE,
              "gemms": LIST, "attention": LIST, "elementwise": LIST, "memory_bandwidth_bytes": SIZE,
              "collectives": LIST, "step": None,  # step: null or STEP_FIELDS
              # what the plan was written for (said, not used): --quick, its sequence length, the configurations
              "quick": BOOLEAN, "seq_len": POSITIVE, "configs": LIST}
# Fields a plan may leave out.
OPTIONAL_FIELDS = {"quick", "seq_len", "configs", "count", "head_dim"}
SECTIONS = {"gemms": GEMM_FIELDS, "attention": ATTENTION_FIELDS, "elementwise": ELEMENTWISE_FIELDS,
            "collectives": COLLECTIVE_FIELDS}

_MISSING = object()


def _show(value):
    if value is _MISSING:
        return "missing"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


class _Checker:
    def __init__(self, path):
        self.path = path

    def fail(self, where, field, value, rule):
        raise PlanError(f"{self.path}: {where}{field}: {_show(value)}: {rule}")

    def object(self, obj, fields, where, what):
        """Every field present with the right type and no other; `where` prefixes the messages."""
        if not isinstance(obj, dict):
            raise PlanError(f"{self.path}: {where.rstrip(': ') or 'the plan'}: {_show(obj)}: must be an object "
                            f"(a {what})")
        for key, value in obj.items():
            if key not in fields:
                raise PlanError(f"{self.path}: {where}{key}: not a field of a {what} (its fields: "
                                f"{', '.join(fields)})")
        for key, rule in fields.items():
            value = obj.get(key, _MISSING)
            if value is _MISSING and key in OPTIONAL_FIELDS:
                continue
            if rule is None:
                if value is _MISSING:
                    self.fail(where, key, value, "must be given")
                continue
            if value is _MISSING or not rule[1](value):
                self.fail(where, key, value, rule[0])


def _no_duplicate_keys(path):
    def hook(pairs):
        seen = {}
        for key, value in pairs:
            if key in seen:
                raise PlanError(f"{path}: field {json.dumps(key)} is given twice in one object")
            seen[key] = value
        return seen
    return hook


def read_plan(path):
    """The plan at `path`, checked against the format (docs/profile.md); PlanError naming the file, the field
    (with the entry's id), the value and the rule otherwise."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise PlanError(f"{path}: cannot read the plan: {getattr(e, 'strerror', None) or e}") from None
    try:
        plan = json.loads(text, object_pairs_hook=_no_duplicate_keys(path),
                          parse_constant=lambda c: _reject_constant(path, c))
    except json.JSONDecodeError as e:
        raise PlanError(f"{path}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None
    check = _Checker(path)
    if not isinstance(plan, dict):
        raise PlanError(f"{path}: {_show(plan)}: a plan must be a JSON object")
    if plan.get("format", _MISSING) != PLAN_FORMAT:
        check.fail("", "format", plan.get("format", _MISSING), f"must be {json.dumps(PLAN_FORMAT)} (a profile plan, "
                   "written by `paratune profile`)")
    if not _is_int(plan.get("version")) or plan["version"] != VERSION:
        check.fail("", "version", plan.get("version", _MISSING), f"must be {VERSION} (the plan version this "
                   "measurer reads)")
    check.object(plan, TOP_FIELDS, "", "profile plan")
    for section, fields in SECTIONS.items():
        ids = set()
        for i, entry in enumerate(plan[section]):
            where = f"{section}[{i}]: "
            if isinstance(entry, dict) and ID[1](entry.get("id")):
                where = f"{section}[{i}] (id {json.dumps(entry['id'])}): "
            check.object(entry, fields, where, f"{section} entry")
            if entry["id"] in ids:
                check.fail(where, "id", entry["id"], f"must be unique among the {section} entries")
            ids.add(entry["id"])
            _check_entry(check, section, entry, where)
    if plan["step"] is not None:
        _check_step(check, plan["step"])
    return plan


def _reject_constant(path, constant):
    raise PlanError(f"{path}: {constant}: not a number JSON allows")


def _check_entry(check, section, e, where):
    if section == "attention" and e["heads"] % e["kv_heads"]:
        check.fail(where, "kv_heads", e["kv_heads"], f"must divide heads ({e['heads']})")
    if section == "collectives" and e["op"] == "send_recv" and e["ranks"] != 2:
        check.fail(where, "ranks", e["ranks"], "must be 2 for send_recv (one sender, one receiver)")


def _check_step(check, step):
    check.object(step, STEP_FIELDS, "step: ", "step")
    if step["moe"] is not None:
        check.object(step["moe"], MOE_FIELDS, "step: moe: ", "moe")
        if step["moe"]["top_k"] > step["moe"]["experts"]:
            check.fail("step: moe: ", "top_k", step["moe"]["top_k"],
                       f"must be at most experts ({step['moe']['experts']})")
    if "head_dim" not in step and step["hidden_size"] % step["heads"]:
        check.fail("step: ", "heads", step["heads"], f"must divide hidden_size ({step['hidden_size']}) when head_dim "
                   "is not given")
    if step["heads"] % step["kv_heads"]:
        check.fail("step: ", "kv_heads", step["kv_heads"], f"must divide heads ({step['heads']})")
    if (step["hidden_size"] // step["heads"]) % 2:
        check.fail("step: ", "heads", step["heads"], "must leave an even head size hidden_size/heads (RoPE "
                   "rotates pairs of dimensions)")


# --- the command line --------------------------------------------------------------------------------------

def _positive_count(text):
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be a positive integer (processes to start)")
    return value


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="python3 -m paratune.profile",
        description="Measure what a profile plan lists on this node's hardware and write the hardware profile "
                    "(docs/profile.md).")
    parser.add_argument("--plan", required=True, help="the profile plan (JSON, written by `paratune profile`)")
    parser.add_argument("--out", required=True, help="the hardware profile to write (JSON; rank 0 writes it)")
    parser.add_argument("--nproc", type=_positive_count, default=1,
                        help="start N local processes (collectives over them: NCCL on N GPUs, else Gloo on the "
                             "CPU); not under torchrun, which starts its own")
    parser.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                        help="where to measure: auto (CUDA when PyTorch sees a GPU, else the CPU)")
    return parser.parse_args(argv)


def launched_ranks():
    """(rank, world size, local rank) as torchrun sets them in the environment ((0, 1, 0) without it);
    PlanError when one is not a number or out of range."""
    values = {}
    for name, default, least in (("RANK", "0", 0), ("WORLD_SIZE", "1", 1), ("LOCAL_RANK", "0", 0)):
        text = os.environ.get(name, default)
        try:
            values[name] = int(text)
        except ValueError:
            values[name] = least - 1
        if values[name] < least:
            raise PlanError(f"environment {name}: {text!r}: must be an integer >= {least} (as torchrun sets it)")
    if values["RANK"] >= values["WORLD_SIZE"]:
        raise PlanError(f"environment RANK: {values['RANK']}: must be below WORLD_SIZE ({values['WORLD_SIZE']})")
    return values["RANK"], values["WORLD_SIZE"], values["LOCAL_RANK"]


def check_out(path):
    """Fails now, before minutes of measuring, when the profile could not be written at `path`."""
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise PlanError(f"--out {path}: is a directory: must be a file to write")
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".paratune-profile-", suffix=".tmp"):
            pass
    except OSError as e:
        raise PlanError(f"--out {path}: cannot write in {folder}: {e.strerror or e}") from None


def write_profile(path, profile):
    """Atomically: a temporary file beside `path`, flushed to disk, then renamed over it."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=".paratune-profile-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(profile, f, indent=2)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def _is_rank_zero():
    return os.environ.get("RANK", "0") == "0"


def main(argv=None):
    args = parse_args(argv)
    try:
        plan = read_plan(args.plan)
        if _is_rank_zero():  # the one that writes (other nodes may not have --out's folder)
            check_out(args.out)
        ranks = launched_ranks()
        world = ranks[1]
        if world > 1 and args.nproc > 1:
            raise PlanError(f"--nproc {args.nproc}: not under torchrun (WORLD_SIZE={world}), which starts the "
                            "processes itself")
    except PlanError as e:
        if _is_rank_zero():
            print(f"paratune.profile: {e}", file=sys.stderr)
        return 2
    try:
        from . import _profile_kernels
    except ModuleNotFoundError as e:
        if e.name and e.name.split(".")[0] == "torch":
            print("paratune.profile: PyTorch is not installed: install it (Debian: apt-get install python3-torch; "
                  "elsewhere: pip install torch)", file=sys.stderr)
            return 1
        raise
    return _profile_kernels.run(plan, args, ranks, write_profile)


if __name__ == "__main__":
    sys.exit(main())
