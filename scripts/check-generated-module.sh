#!/usr/bin/env bash
# Checks `npm run generate:module` as a team would use it, in a scratch clone of this repository with two modules
# generated into it (one --owned):
#   prepare <dir>       clones into <dir>/repo and generates; the generator must touch no existing file but
#                       src/features.ts, and the result must type-check, lint and be formatted
#   misdeclared <dir>   then opens the owned module's POST to every person's writes (ownRecords dropped from its
#                       rule), and drops the module from src/features.ts while its sibling's migrations stay: each
#                       time the service must refuse to start, in one line naming what is wrong
# With no command it does both, with the whole `npm test` (and the e2e suites on PostgreSQL when TEST_DATABASE_URL
# is set) in between; .ci/run calls the steps itself and runs its suites in the prepared clone.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NAME=stock-items
# A second module, whose records belong to the people who create them (--owned).
OWNED=widgets
# The README's example name, which a newcomer generates first: every suite stays green with it too.
README_NAME=products

prepare() {
  local repo="$1/repo"
  git clone -q --no-hardlinks "$ROOT" "$repo" || return 1
  cd "$repo" || return 1
  ln -s "$ROOT/node_modules" node_modules
  node scripts/generate-module.mjs "$NAME" || { echo "generator failed"; return 1; }
  node scripts/generate-module.mjs "$OWNED" --owned || { echo "generator failed (--owned)"; return 1; }
  node scripts/generate-module.mjs "$README_NAME" || { echo "generator failed ($README_NAME)"; return 1; }
  local changed
  changed="$(git status --porcelain --untracked-files=no | awk '{print $2}')"
  if [ "$changed" != "src/features.ts" ]; then
    echo "the generator changed existing files other than src/features.ts: $changed"
    return 1
  fi
  echo "existing files the generator touched: $changed"
  local files=("src/$NAME" "test/e2e/$NAME.e2e-spec.ts" "src/$OWNED" "test/e2e/$OWNED.e2e-spec.ts" "src/$README_NAME" "test/e2e/$README_NAME.e2e-spec.ts" src/features.ts)
  npx tsc -p tsconfig.json --noEmit || { echo "generated module does not type-check"; return 1; }
  npx eslint "${files[@]}" || { echo "generated module fails lint"; return 1; }
  npx prettier --check "${files[@]}" || { echo "generated module is not formatted"; return 1; }
}

# Starts the build in dist/ and expects it to stop, with one line that contains the given text.
refuses_to_start() {
  local work="$1" expected="$2" out status
  rm -f "$work/refused.sqlite"
  out="$(env -u TEST_DATABASE_URL DATABASE_URL="sqlite:$work/refused.sqlite" PORT=0 LOG_LEVEL=silent node dist/src/main.js 2>&1)"
  status=$?
  if [ "$status" -ne 1 ] || [ "$(printf '%s\n' "$out" | wc -l)" -ne 1 ] || [[ "$out" != *"$expected"* ]]; then
    echo "expected the start to stop with one line containing: $expected (exit $status):"
    echo "$out"
    return 1
  fi
  echo "the start stops: $out"
}

misdeclared() {
  local work="$1" controller="src/$OWNED/$OWNED.controller.ts"
  cd "$work/repo" || return 1
  # A team deletes the owner rule from the generated POST: any person could then write any record.
  local first
  first="$(grep -n "ownRecords: true" "$controller" | awk -F: '$0 ~ /write/ {print $1; exit}')"
  [ -n "$first" ] || { echo "no write rule with ownRecords in $controller"; return 1; }
  sed -i "${first}s/, ownRecords: true//" "$controller"
  node scripts/build.mjs || { echo "build with the owner rule removed failed"; return 1; }
  refuses_to_start "$work" "POST /$OWNED (WidgetsController.create) lets any person write without acting on their own records only" || return 1
  # Left out of src/features.ts (the edited controller goes with it), its sibling's migrations still run.
  git checkout -q src/features.ts
  rm -rf "src/$OWNED" "test/e2e/$OWNED.e2e-spec.ts" "src/$README_NAME" "test/e2e/$README_NAME.e2e-spec.ts" dist
  node scripts/build.mjs || { echo "build without the module registered failed"; return 1; }
  refuses_to_start "$work" "failed to start: src/$NAME has migrations but no module of it is registered: add it to FEATURE_MODULES in src/features.ts"
}

case "${1:-all}" in
  prepare) prepare "${2:?scratch dir}" ;;
  misdeclared) misdeclared "${2:?scratch dir}" ;;
  all)
    WORK="$(mktemp -d)"
    trap 'rm -rf "$WORK"' EXIT
    (prepare "$WORK") || exit 1
    rc=0
    (cd "$WORK/repo" && env -u TEST_DATABASE_URL npm test) || rc=1
    if [ -n "${TEST_DATABASE_URL:-}" ]; then (cd "$WORK/repo" && npm run test:e2e) || rc=1; fi
    (misdeclared "$WORK") || rc=1
    exit $rc
    ;;
  *) echo "usage: $0 [prepare <dir> | misdeclared <dir>]"; exit 2 ;;
esac
