#!/usr/bin/env bash
# `npm test`: lint, then the type check beside the call tests, then the process tests
# (docs/testing.md says why the two vitest runs and their widths).
set -uo pipefail
cd "$(dirname "$0")/.."

npx biome check . || exit 1

# The type check is 15-20 s of CPU, and the call tests leave a third of two cores idle (they wait
# on audio paced in real time), so it runs beside them at the lowest priority: it takes only what
# they leave, and their real-time audio and barge-in timing hardly wait for it. Its output is held
# until the calls are done, so it is not lost among theirs.
typecheck_output=$(mktemp)
trap 'rm -f "$typecheck_output"' EXIT
nice -n 19 npx tsc -p tsconfig.check.json >"$typecheck_output" 2>&1 &
typecheck=$!
npx vitest run --project default --project onnxruntime --maxWorkers=8
calls=$?
wait "$typecheck"
typed=$?
if [ "$typed" -ne 0 ]; then
  cat "$typecheck_output"
  echo "the type check failed (npm run typecheck)" >&2
  exit 1
fi
[ "$calls" -eq 0 ] || exit "$calls"

# (postgres and cluster are left out of the config when PostgreSQL is missing; naming them is harmless.)
npx vitest run --project processes --project postgres --project cluster
