#!/usr/bin/env bash
# Checks `npm run generate:module` as a team would use it, in a scratch clone of this repository with two modules
# generated into it (one --owned):
#   prepare <dir>       clones into <dir>/repo and generates; the generator must touch no existing file but
#                       src/features.ts, and the result must type-check, lint and be formatted
#   unregistered <dir>  then drops the owned module from src/features.ts but keeps its sibling's migrations: the
#                       service must refuse to start, in one line
# With no command it does both, with the whole `npm test` (and the e2e suites on PostgreSQL when TEST_DATABASE_URL
# is set) in between; .ci/run calls the steps itself and runs its suites in the prepared clone.
set -uo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
NAME=stock-items
# A second module, whose records belong to the people who create them (--owned).
OWNED=widgets

prepare() {
  local repo="$1/repo"
  git clone -q --no-hardlinks "$ROOT" "$repo" || return 1
  cd "$repo" || return 1
  ln -s "$ROOT/node_modules" node_modules
  node scripts/generate-module.mjs "$NAME" || { echo "generator failed"; return 1; }
  node scripts/generate-module.mjs "$OWNED" --owned || { echo "generator failed (--owned)"; return 1; }
  local changed
  changed="$(git status --porcelain --untracked-files=no | awk '{print $2}')"
  if [ "$changed" != "src/features.ts" ]; then
    echo "the generator changed existing files other than src/features.ts: $changed"
    return 1
  fi
  echo "existing files the generator touched: $changed"
  local files=("src/$NAME" "test/e2e/$NAME.e2e-spec.ts" "src/$OWNED" "test/e2e/$OWNED.e2e-spec.ts" src/features.ts)
  npx tsc -p tsconfig.json --noEmit || { echo "generated module does not type-check"; return 1; }
  npx eslint "${files[@]}" || { echo "generated module fails lint"; return 1; }
  npx prettier --check "${files[@]}" || { echo "generated module is not formatted"; return 1; }
}

unregistered() {
  local work="$1"
  cd "$work/repo" || return 1
  # Left out of src/features.ts, a module's migrations would still run: the service must refuse to start.
  git checkout -q src/features.ts
  rm -rf "src/$OWNED" "test/e2e/$OWNED.e2e-spec.ts"
  npx tsc -p tsconfig.build.json || { echo "build without the module registered failed"; return 1; }
  local out status expected
  out="$(env -u TEST_DATABASE_URL DATABASE_URL="sqlite:$work/unregistered.sqlite" PORT=0 LOG_LEVEL=silent node dist/src/main.js 2>&1)"
  status=$?
  expected="failed to start: src/$NAME has migrations but no module of it is registered: add it to FEATURE_MODULES in src/features.ts"
  if [ "$status" -ne 1 ] || [ "$out" != "$expected" ]; then
    echo "an unregistered module did not stop the start with one line (exit $status):"
    echo "$out"
    return 1
  fi
  echo "an unregistered module stops the start: $out"
}

case "${1:-all}" in
  prepare) prepare "${2:?scratch dir}" ;;
  unregistered) unregistered "${2:?scratch dir}" ;;
  all)
    WORK="$(mktemp -d)"
    trap 'rm -rf "$WORK"' EXIT
    (prepare "$WORK") || exit 1
    rc=0
    (cd "$WORK/repo" && env -u TEST_DATABASE_URL npm test) || rc=1
    if [ -n "${TEST_DATABASE_URL:-}" ]; then (cd "$WORK/repo" && npm run test:e2e) || rc=1; fi
    (unregistered "$WORK") || rc=1
    exit $rc
    ;;
  *) echo "usage: $0 [prepare <dir> | unregistered <dir>]"; exit 2 ;;
esac
