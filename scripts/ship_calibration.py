#!/usr/bin/env python3
"""Ship a refitted calibration: write the C++ defaults from the JSON files `paratune calibrate` wrote.

    paratune calibrate --runs data/published-runs/published_runs.csv --loso \
        --intervals data/prediction-intervals.json -o data/calibration.json
    python3 scripts/ship_calibration.py

rewrites make_default() in src/cost/calibration.cc from data/calibration.json and the table in
src/calib/prediction_intervals_shipped.cc from data/prediction-intervals.json. Tests check that the
compiled defaults equal the files (CalibrationFile.*, PredictionIntervals.*).
"""
import json
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent


def number(value):
    """The shortest text that reads back as the same double (Python's repr), always with a point."""
    text = repr(float(value))
    return text if ("." in text or "e" in text or "inf" in text or "nan" in text) else text + ".0"


def calibration_body(calibration):
    lines = []
    for key in sorted(calibration):
        value = calibration[key]
        if isinstance(value, dict):
            # One line per value: the GPUs of one fitted class (calib/coefficients.cc) share theirs.
            classes = {}
            for gpu in sorted(value):
                classes.setdefault(number(value[gpu]), []).append(gpu)
            for text, gpus in sorted(classes.items(), key=lambda item: item[1]):
                if len(gpus) == 1:
                    lines.append(f'  c.{key}["{gpus[0]}"] = {text};')
                else:
                    names = ", ".join(f'"{gpu}"' for gpu in gpus)
                    lines.append(f"  for (const char* gpu : {{{names}}}) c.{key}[gpu] = {text};")
        else:
            lines.append(f"  c.{key} = {number(value)};")
    return "\n".join(lines)


def intervals_body(intervals):
    lines = []
    for name in sorted(intervals):
        row = intervals[name]
        lines.append(f'      {{"{name}", {{{row["rows"]}, {number(row["low_pct"])}, {number(row["high_pct"])}}}}},')
    return "\n".join(lines)


def replace_between(path, start_pattern, end_pattern, body):
    text = path.read_text()
    match = re.search(f"({start_pattern}\n)(.*?)(\n{end_pattern})", text, re.S)
    if not match:
        sys.exit(f"{path}: the generated block ({start_pattern!r} ... {end_pattern!r}) was not found")
    path.write_text(text[: match.start(2)] + body + text[match.end(2) :])


def main():
    calibration = json.loads((ROOT / "data/calibration.json").read_text())
    intervals = json.loads((ROOT / "data/prediction-intervals.json").read_text())
    replace_between(ROOT / "src/cost/calibration.cc", r"  Calibration c;", r"  return c;", calibration_body(calibration))
    replace_between(ROOT / "src/calib/prediction_intervals_shipped.cc", r"  static const IntervalTable table\{",
                    r"  \};", intervals_body(intervals))


if __name__ == "__main__":
    main()
