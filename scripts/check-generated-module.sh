#!/usr/bin/env bash
# Generates two modules (one --owned) into a scratch clone of this repository and checks them as a team would: the generator
# touches no existing file but src/features.ts, the result type-checks and lints, and the generated e2e suite passes
# (with the suites that read every route: inventory, access rules, OpenAPI document, fuzzing) on SQLite and, when TEST_DATABASE_URL is set, on PostgreSQL.
# Usage: scripts/check-generated-module.sh <reports-dir>   (writes generated-sqlite.json / generated-postgres.json)
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
REPORTS="${1:?reports dir}"
NAME=stock-items
# A second module, whose records belong to the people who create them (--owned).
OWNED=widgets
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

git clone -q --no-hardlinks "$ROOT" "$WORK/repo" || exit 1
cd "$WORK/repo" || exit 1
ln -s "$ROOT/node_modules" node_modules

node scripts/generate-module.mjs "$NAME" || { echo "generator failed"; exit 1; }
node scripts/generate-module.mjs "$OWNED" --owned || { echo "generator failed (--owned)"; exit 1; }
changed="$(git status --porcelain --untracked-files=no | awk '{print $2}')"
if [ "$changed" != "src/features.ts" ]; then
  echo "the generator changed existing files other than src/features.ts: $changed"
  exit 1
fi
echo "existing files the generator touched: $changed"
npx tsc -p tsconfig.json --noEmit || { echo "generated module does not type-check"; exit 1; }
npx eslint "src/$NAME" "test/e2e/$NAME.e2e-spec.ts" "src/$OWNED" "test/e2e/$OWNED.e2e-spec.ts" src/features.ts \
  || { echo "generated module fails lint"; exit 1; }
npx prettier --check "src/$NAME" "test/e2e/$NAME.e2e-spec.ts" "src/$OWNED" "test/e2e/$OWNED.e2e-spec.ts" src/features.ts \
  || { echo "generated module is not formatted"; exit 1; }

# Its own suite, and every suite that reads the whole route table or OpenAPI document (a module adds to both).
SUITES=("test/e2e/$NAME.e2e-spec.ts" "test/e2e/$OWNED.e2e-spec.ts" test/e2e/route-inventory.e2e-spec.ts test/e2e/operations.e2e-spec.ts
  test/e2e/openapi-document.e2e-spec.ts test/e2e/route-access.e2e-spec.ts test/e2e/fuzz.e2e-spec.ts test/e2e/validation.e2e-spec.ts)
rc=0
env -u TEST_DATABASE_URL npx vitest run "${SUITES[@]}" --reporter=default --reporter=json --outputFile.json="$REPORTS/generated-sqlite.json" || rc=1
if [ -n "${TEST_DATABASE_URL:-}" ]; then
  npx vitest run "${SUITES[@]}" --reporter=default --reporter=json --outputFile.json="$REPORTS/generated-postgres.json" || rc=1
fi

# Left out of src/features.ts, the module's migrations would still run: the service must refuse to start, in one line.
git checkout -q src/features.ts
rm -rf "src/$OWNED" "test/e2e/$OWNED.e2e-spec.ts"
npx tsc -p tsconfig.build.json || { echo "build without the module registered failed"; exit 1; }
out="$(env -u TEST_DATABASE_URL DATABASE_URL="sqlite:$WORK/unregistered.sqlite" PORT=0 LOG_LEVEL=silent node dist/src/main.js 2>&1)"
status=$?
expected="failed to start: src/$NAME has migrations but no module of it is registered: add it to FEATURE_MODULES in src/features.ts"
if [ "$status" -ne 1 ] || [ "$out" != "$expected" ]; then
  echo "an unregistered module did not stop the start with one line (exit $status):"
  echo "$out"
  rc=1
else
  echo "an unregistered module stops the start: $out"
fi
exit $rc
