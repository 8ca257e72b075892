#!/usr/bin/env bash
# Every command of the README's ```sh blocks runs as printed (issue 21, item 10).
#
#   readme_commands.sh REPO_ROOT [README]     # README defaults to REPO_ROOT/README.md
#
# paratune, paratune-train and paratune-sim-trial must be on PATH (ctest puts the build's there).
#
# What is run: the contents of every block fenced with ```sh, as bash reads them (a line ending in
# a backslash continues on the next, `#` starts a comment). Other fences are not run: ```text for
# usage synopses with [optional] flags, ```yaml, ```bash for printed output, and so on. Each block
# runs in a fresh temporary directory holding a link `examples` to REPO_ROOT/examples (commands
# name files as examples/...), its commands one after the other (a block is one session: `study
# show` reads the study the command before it wrote).
#
# Not run: `bash scripts/quickstart.sh` and `bash scripts/test.sh`, which install Debian packages
# and rebuild (CI runs scripts/test.sh itself, and with it this test).
#
# A command runs as printed when it exits 0 or, for a long job (training 2000 steps, 60 trials), when
# it is still running after README_COMMAND_LIMIT seconds (default 20) and has done real work by
# then -- a trial started (`trial N started`), a training step reported (`@paratune {"step"`, by
# the command or in a trial's stdout.log below the directory), harvest's job started -- with no
# error in its output (`error:`, `Error:`, `failed`, a traceback, `terminate called`, a crash) and
# no warning that it has no end (`tune`'s "no --max-trials/--budget": a README example that runs
# until Ctrl-C is not one a reader can run as printed; issue 39, item 10). It
# is then stopped: SIGTERM to its process group (each command runs in a session of its own),
# SIGKILL README_COMMAND_GRACE seconds later (default 15), which counts as a failure. A command
# that shows no work yet is given up to README_COMMAND_MAX seconds (default 90: a loaded machine
# starts slowly).
#
# Blocks run README_COMMAND_JOBS at a time (default 2); README_COMMAND_BLOCKS="3 7" runs only the
# 3rd and 7th ```sh blocks (for debugging). Exit 0 when every command ran, 1 otherwise, 2 for bad
# usage. tests/readme/readme_commands_selftest.sh checks these rules on small made-up READMEs.
set -uo pipefail

repo=${1:?usage: readme_commands.sh REPO_ROOT [README]}
readme=${2:-$repo/README.md}
limit=${README_COMMAND_LIMIT:-20}
max=${README_COMMAND_MAX:-90}
grace=${README_COMMAND_GRACE:-15}
parallel=${README_COMMAND_JOBS:-2}
[[ -f $readme && -d $repo/examples ]] || { echo "readme_commands: no $readme or $repo/examples" >&2; exit 2; }
repo=$(cd "$repo" && pwd)
name=${readme##*/}

skip_re='^bash scripts/(quickstart|test)\.sh$'
error_re='error:|Error:|failed|Traceback|terminate called|Segmentation fault|core dumped|Aborted'
endless_re='no --max-trials/--budget'
work_re='^trial [0-9]+ started|@paratune \{"step"|^paratune harvest: the job'

work=$(mktemp -d "${TMPDIR:-/tmp}/readme_commands.XXXXXX")
trap 'rm -rf "$work"' EXIT

# Split the README into blocks: $work/block-N/cmd-M holds block N's M-th logical command
# (continuation lines joined; blank and comment-only lines dropped), $work/block-N/line the line
# number of its fence.
awk -v dir="$work" '
  function flush() { if (cmd != "") { m++; f = dir "/block-" n "/cmd-" m; printf "%s", cmd > f; close(f); cmd = "" } }
  /^```/ {
    if (!fence) {
      fence = 1; sh = ($0 == "```sh")
      if (sh) { n++; m = 0; system("mkdir -p \"" dir "/block-" n "\""); f = dir "/block-" n "/line"; print NR > f; close(f) }
      next
    }
    if ($0 == "```") { if (sh) flush(); fence = 0; sh = 0; next }
  }
  fence && sh {
    line = $0
    if (cmd == "" && line ~ /^[ \t]*(#|$)/) next
    if (line ~ /\\$/) { cmd = cmd line "\n"; next }
    cmd = cmd line; flush()
  }
  END { if (fence) { print "readme_commands: unclosed code fence" > "/dev/stderr"; exit 2 } }
' "$readme" || exit 2

# Whether a trial under directory $1 reported a training step in its logs (tune's trials and the
# --fuse auto probe write them to STUDY.trials/.../stdout.log).
trial_stepped() { grep -rqsF --include=stdout.log '@paratune {"step"' "$1"; }

# Runs command $2 in directory $1, its output to file $3, in a session of its own. Sets `result` to
# its exit status, or to "working" (stopped after $limit s, its output shows work), "idle" (stopped
# after $max s without) or "unstoppable" (SIGKILLed $grace s after SIGTERM); `elapsed` to its seconds.
run_command() {
  local pid start state stop_at
  (cd "$1" && exec setsid -w bash -c "$2") >"$3" 2>&1 </dev/null &
  pid=$!
  start=$SECONDS
  alive() { state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null); [[ -n $state && $state != Z ]]; }
  while alive; do
    elapsed=$((SECONDS - start))
    if ((elapsed >= limit)) && { grep -Eq "$work_re" "$3" || trial_stepped "$1"; }; then result=working; break; fi
    if ((elapsed >= max)); then result=idle; break; fi
    sleep 0.5
  done
  if alive; then
    kill -TERM -- "-$pid" 2>/dev/null
    stop_at=$((SECONDS + grace))
    while alive && ((SECONDS < stop_at)); do sleep 0.2; done
    if alive; then
      kill -KILL -- "-$pid" 2>/dev/null
      result=unstoppable
    fi
    wait "$pid" 2>/dev/null
  else
    wait "$pid"
    result=$?
  fi
}

# Runs block $1; writes its report to $work/block-$1/report, with "FAILED" in it if a command failed.
run_block() {
  local n=$1 line dir i cmd oneline out
  line=$(cat "$work/block-$n/line")
  dir=$(mktemp -d "$work/run-$n.XXXXXX")
  ln -s "$repo/examples" "$dir/examples"
  exec >"$work/block-$n/report" 2>&1
  for ((i = 1; ; i++)); do
    [[ -f $work/block-$n/cmd-$i ]] || break
    cmd=$(cat "$work/block-$n/cmd-$i")
    oneline=$(tr -s ' \n\\' ' ' <<<"$cmd")
    if [[ $cmd =~ $skip_re ]]; then
      echo "$name:$line: skipped (installs packages; CI runs it): $cmd"
      continue
    fi
    out="$work/block-$n/out-$i"
    run_command "$dir" "$cmd" "$out"
    case $result in
      0) echo "$name:$line: ok: $oneline" ;;
      working)
        if grep -Eq "$error_re" "$out"; then
          echo "$name:$line: FAILED: an error in its output: $oneline"
        elif grep -Eq "$endless_re" "$out"; then
          echo "$name:$line: FAILED: it has no end (give it --max-trials or --budget): $oneline"
        else
          echo "$name:$line: ok (working after ${elapsed}s, stopped): $oneline"
          continue
        fi ;;
      idle) echo "$name:$line: FAILED: running for ${max}s without a trial or job started or a step reported: $oneline" ;;
      unstoppable) echo "$name:$line: FAILED: did not stop within ${grace}s of SIGTERM: $oneline" ;;
      *) echo "$name:$line: FAILED (exit $result): $oneline" ;;
    esac
    [[ $result == 0 ]] && continue
    echo "--- its output (last 40 lines):"
    tail -n 40 "$out"
    echo "---"
  done
}

blocks=$(find "$work" -maxdepth 1 -name 'block-*' | wc -l)
((blocks > 0)) || { echo "readme_commands: no \`\`\`sh block in $readme" >&2; exit 1; }
for ((n = 1; n <= blocks; n++)); do
  [[ -n ${README_COMMAND_BLOCKS:-} && " $README_COMMAND_BLOCKS " != *" $n "* ]] && continue  # to debug a few
  while (($(jobs -rp | wc -l) >= parallel)); do wait -n; done
  run_block "$n" &
done
wait
failed=0
for ((n = 1; n <= blocks; n++)); do
  [[ -f $work/block-$n/report ]] || continue
  cat "$work/block-$n/report"
  grep -q FAILED "$work/block-$n/report" && failed=1
done
echo "readme_commands: $blocks sh blocks of $readme: $( ((failed)) && echo "some command FAILED" || echo "every command ran")"
exit $failed
