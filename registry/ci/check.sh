#!/usr/bin/env bash
# The registry repository's checks, run on every pull request by
# .github/workflows/registry.yml and by pinned's own tests on a copy of
# registry/ (TestRegistryCI). Run from anywhere; it works in the folder
# above this script. PINNED names the pinned binary (default: pinned on
# PATH); FIXTURES the fixtures folder (default: fixtures).
set -euo pipefail
cd "$(dirname "$0")/.."
PINNED=${PINNED:-pinned}
FIXTURES=${FIXTURES:-fixtures}

echo "== check: every manifest passes the loader's fail-closed rules"
"$PINNED" registry check manifests

echo "== lint: every op against its provider's OpenAPI description"
for desc in openapi/descriptions/*.json; do
  [ -e "$desc" ] || continue
  id=$(basename "$desc" .json)
  [ -e "manifests/$id.json" ] || { echo "lint: $desc has no manifests/$id.json"; exit 1; }
  accepted="openapi/lint-accepted/$id.txt"
  found=$("$PINNED" registry lint --openapi "$desc" "manifests/$id.json" 2>&1 >/dev/null | grep -v '^ok: ' | sort || true)
  want=""
  [ -e "$accepted" ] && want=$(sort "$accepted")
  if [ "$found" != "$want" ]; then
    echo "lint: $id disagrees with its description beyond $accepted:"
    diff <(printf '%s\n' "$want") <(printf '%s\n' "$found") || true
    exit 1
  fi
  echo "ok: $id ($(printf '%s' "$found" | grep -c . || true) accepted findings)"
done

echo "== replay: every op against its fixtures on the local provider fake"
"$PINNED" registry replay manifests --fixtures "$FIXTURES"

echo "== snapshot: snapshot.json is the snapshot of manifests/"
"$PINNED" registry snapshot manifests -o snapshot.json --check
echo "registry CI: all checks passed"
