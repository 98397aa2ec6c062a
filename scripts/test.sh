#!/usr/bin/env bash
# `npm test`: lint, then the call tests with two low-priority runs beside them (the type check and
# the process tests that place no call), then the process tests that do (docs/testing.md says why
# the runs and their widths).
set -uo pipefail
cd "$(dirname "$0")/.."

npx biome check . || exit 1

# The call tests wait on audio paced in real time and leave about a third of two cores idle. The
# type check (15-20 s of CPU) and the process tests that place no call (the CLI, the build, the
# store across restarts: no real-time audio, timeouts of tens of seconds) take that idle CPU at the
# lowest priority, so the calls' audio and barge-in timing hardly wait for them. Their output is
# held and printed at the end, so it is not lost among the others'.
typecheck_output=$(mktemp)
quiet_output=$(mktemp)
trap 'rm -f "$typecheck_output" "$quiet_output"' EXIT
nice -n 19 npx tsc -p tsconfig.check.json >"$typecheck_output" 2>&1 &
typecheck=$!
nice -n 19 npx vitest run --project processes-without-calls --maxWorkers=2 >"$quiet_output" 2>&1 &
quiet=$!

npx vitest run --project default --project onnxruntime --maxWorkers=8
calls=$?

# The process tests that place calls, once the call tests are done, five files at once; the
# low-priority runs still going go on beside them. (postgres and cluster are left out of the config
# when PostgreSQL is missing; naming them is harmless.)
processes=0
if [ "$calls" -eq 0 ]; then
  npx vitest run --project processes --project postgres --project cluster --maxWorkers=5
  processes=$?
fi

wait "$quiet"
quieted=$?
echo
echo "process tests without calls (run beside the call tests):"
cat "$quiet_output"
wait "$typecheck"
typed=$?
if [ "$typed" -ne 0 ]; then
  cat "$typecheck_output"
  echo "the type check failed (npm run typecheck)" >&2
  exit 1
fi
[ "$calls" -eq 0 ] || exit "$calls"
[ "$quieted" -eq 0 ] || exit "$quieted"
[ "$processes" -eq 0 ] || exit "$processes"

# Last, with nothing else running: the tests that judge audio played in real time in a browser.
npx vitest run --project processes-alone --maxWorkers=1
