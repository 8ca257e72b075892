#!/usr/bin/env bash
# readme_commands.sh judges commands as its header says: on made-up READMEs whose commands exit 0,
# fail, hang without work, report an error while working, ignore SIGTERM, or sit in blocks that are
# not run. Exit 0 when every verdict is the expected one.
set -uo pipefail
script="$(cd "$(dirname "$0")" && pwd)/readme_commands.sh"
dir=$(mktemp -d "${TMPDIR:-/tmp}/readme_selftest.XXXXXX")
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/examples"
echo "from the repository" >"$dir/examples/file.txt"
export README_COMMAND_LIMIT=1 README_COMMAND_MAX=3 README_COMMAND_GRACE=1
failures=0

# expect EXIT_CODE TEXT_IN_OUTPUT README_CONTENTS
expect() {
  printf '%s\n' "$3" >"$dir/README.md"
  local out rc
  out=$(bash "$script" "$dir" "$dir/README.md" 2>&1)
  rc=$?
  if [[ $rc != "$1" || $out != *"$2"* ]]; then
    echo "selftest: FAILED: expected exit $1 and '$2' for:"
    cat "$dir/README.md"
    echo "--- got exit $rc:"
    echo "$out"
    echo "---"
    failures=$((failures + 1))
  fi
}

fence='```'
step='echo "@paratune {\"step\": 1}"'

# Every way to pass: exit 0, continuation lines and comments, a two-command session, a file from
# examples/, a long job stopped while working, blocks that are not run, the install scripts skipped.
expect 0 "every command ran" "# A README
${fence}sh
# a comment line
echo one \\
    two   # a trailing comment
echo made >made.txt
test -f made.txt && grep -q repository examples/file.txt
sh -c '$step; exec sleep 60'
bash scripts/test.sh
${fence}

${fence}text
paratune plan --model M [--top 5]
${fence}

${fence}yaml
not: [a command
${fence}

${fence}bash
false
${fence}"

expect 0 "skipped (installs packages" "${fence}sh
bash scripts/quickstart.sh
${fence}"

# Every way to fail.
expect 1 "FAILED (exit 1): false" "${fence}sh
true
false
${fence}"
expect 1 "FAILED (exit 127)" "${fence}sh
no-such-program --flag
${fence}"
expect 1 "without a trial or job started or a step reported" "${fence}sh
sleep 60
${fence}"
expect 1 "an error in its output" "${fence}sh
sh -c '$step; echo \"paratune: error: bad\" >&2; exec sleep 60'
${fence}"
expect 1 "it has no end (give it --max-trials or --budget)" "${fence}sh
sh -c 'echo \"paratune tune: warning: no --max-trials/--budget: trials run until the grid\047s end or Ctrl-C\" >&2; $step; exec sleep 60'
${fence}"
expect 1 "did not stop within 1s of SIGTERM" "${fence}sh
sh -c 'trap \"\" TERM; $step; while :; do sleep 0.2; done'
${fence}"
expect 1 "FAILED" "${fence}sh
echo [--json] | grep -q json && paratune-no-such-program
${fence}"
expect 2 "unclosed code fence" "${fence}sh
echo never closed"

((failures == 0)) && echo "selftest: every verdict as expected"
exit $((failures > 0))
