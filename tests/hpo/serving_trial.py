#!/usr/bin/env python3
"""A trial program that serves (docs/trial-protocol.md, "Serving"), for tests/hpo/serve_test.cc.

  serving_trial.py --steps N [--keep K] [--crash-above X] [--hang-above X] [--oom-above X] [--sleep S]

Its curve depends on its whole history, so a trial resumed from the wrong state draws another:
  state(-1) = 0,  state(k) = 0.8 * state(k-1) + branin(x1, x2) / (k + 1),  value(k) = state(k).
Run alone (no PARATUNE_SERVE) it trains one trial from its environment, resuming from and saving to
PARATUNE_CHECKPOINT_DIR/state.json. With PARATUNE_SERVE=1 it says {"serve": 1} and trains the
assignments read from stdin, keeping up to K paused trials in memory (the oldest beyond K written to
its checkpoint directory, "spilled ID" on stdout). A trial whose x1 is above --crash-above aborts the
process at its step 1 (SIGABRT); above --hang-above it sleeps there for ever, reading nothing; above
--oom-above it prints PyTorch's out-of-memory message there and ends the assignment as failed.
"""
import json
import math
import os
import select
import sys
import time


def report(**fields):
    print("@paratune " + json.dumps(fields), flush=True)


def branin(x1, x2):
    b, c, t = 5.1 / (4 * math.pi ** 2), 5 / math.pi, 1 / (8 * math.pi)
    return (x2 - b * x1 ** 2 + c * x1 - 6) ** 2 + 10 * (1 - t) * math.cos(x1) + 10


class Lines:
    """Lines from stdin without Python's buffering, so select() tells the truth."""

    def __init__(self):
        self.pending = b""
        self.eof = False

    def next(self, timeout):
        while b"\n" not in self.pending and not self.eof:
            ready, _, _ = select.select([0], [], [], timeout)
            if not ready:
                return None
            chunk = os.read(0, 4096)
            if not chunk:
                self.eof = True
            self.pending += chunk
        if b"\n" not in self.pending:
            return None
        line, self.pending = self.pending.split(b"\n", 1)
        return line.decode()


def option(name, default):
    return type(default)(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


TOTAL = option("--steps", 9)
KEEP = option("--keep", 1000)
CRASH_ABOVE = option("--crash-above", 1e9)
HANG_ABOVE = option("--hang-above", 1e9)
OOM_ABOVE = option("--oom-above", 1e9)


class OutOfMemory(Exception):
    pass
SLEEP = option("--sleep", 0.005)


def checkpoint_file(directory):
    return os.path.join(directory, "state.json")


def save(directory, step, state):
    os.makedirs(directory, exist_ok=True)
    with open(checkpoint_file(directory) + ".tmp", "w") as f:
        json.dump({"step": step, "state": state}, f)
    os.replace(checkpoint_file(directory) + ".tmp", checkpoint_file(directory))


def load(directory):
    """(next step, state) from the checkpoint directory, else from the start."""
    if directory and os.path.exists(checkpoint_file(directory)):
        with open(checkpoint_file(directory)) as f:
            saved = json.load(f)
        print(f"resumed from {directory} after step {saved['step']}", flush=True)
        return saved["step"] + 1, saved["state"]
    return 0, 0.0


def train(env, first, state, at_last, cancelled):
    """Steps [first, PARATUNE_MAX_STEPS); at_last(step, state) runs before the last step's line (a
    runner may stop a process right after it). Returns the last step trained."""
    params = json.loads(env["PARATUNE_PARAMS"])
    x1, x2 = params["x1"], params["x2"]
    end = min(TOTAL, int(env.get("PARATUNE_MAX_STEPS", TOTAL)))
    last = first - 1
    for k in range(first, end):
        start = time.perf_counter()
        if k == 1 and x1 > CRASH_ABOVE:
            os.abort()
        if k == 1 and x1 > HANG_ABOVE:
            time.sleep(1e6)
        if k == 1 and x1 > OOM_ABOVE:
            print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", file=sys.stderr, flush=True)
            raise OutOfMemory("out of memory at step 1")
        state = 0.8 * state + branin(x1, x2) / (k + 1)
        time.sleep(SLEEP)
        report(metric="value", value=state, step=k)
        if k == end - 1:
            at_last(k, state)
        report(step=k, step_time_s=max(time.perf_counter() - start, 1e-6))
        last = k
        if cancelled():
            break
    return last


def alone():
    env = os.environ
    directory = env.get("PARATUNE_CHECKPOINT_DIR", "")

    def at_last(step, state):
        if directory:
            save(directory, step, state)
            report(checkpoint_step=step)

    first, state = load(directory)
    train(env, first, state, at_last, lambda: False)


def serve():
    report(serve=1)
    lines = Lines()
    kept = {}  # trial id -> [next step, state, checkpoint directory], oldest first
    while True:
        line = lines.next(None)
        if line is None:
            return  # end-of-file: paratune is done with this process
        message = json.loads(line)
        if "stop" in message:
            return
        if "trial" not in message:
            continue  # a cancel of a trial that has ended
        trial, env = message["trial"], message["env"]
        directory = env.get("PARATUNE_CHECKPOINT_DIR", "")
        held = kept.pop(trial, None)
        if held and message["steps_done"] > 0 and held[0] == message["steps_done"]:
            first, state = held[0], held[1]
            print(f"resumed {trial} from memory after step {first - 1}", flush=True)
        else:
            first, state = load(directory) if message["steps_done"] > 0 else (0, 0.0)
        cancelled = False

        def cancel_asked():
            nonlocal cancelled
            while (other := lines.next(0)) is not None:
                cancelled = cancelled or json.loads(other).get("cancel") == trial
            return cancelled

        def at_last(step, state):
            if not directory:
                return
            if step + 1 < TOTAL:  # paused at a rung: kept
                kept[trial] = [step + 1, state, directory]
                report(checkpoint_step=step, in_memory=True)
                while len(kept) > KEEP:
                    oldest = next(iter(kept))
                    next_step, saved_state, saved_dir = kept.pop(oldest)
                    save(saved_dir, next_step - 1, saved_state)
                    print(f"spilled {oldest} to {saved_dir}", flush=True)
            else:
                save(directory, step, state)
                report(checkpoint_step=step)

        try:
            train(env, first, state, at_last, cancel_asked)
        except OutOfMemory as e:
            report(done=trial, failed=str(e))
            continue
        if cancelled:
            kept.pop(trial, None)
        report(done=trial)


if __name__ == "__main__":
    serve() if os.environ.get("PARATUNE_SERVE") == "1" else alone()
