#!/usr/bin/env bash
# make test-stability: are the notebook tests stable from run to run?
# Runs the nbval notebook suite three times serially, then once in parallel
# (-n auto --dist loadfile, as `make test` does), prints one summary line per
# run and exits non-zero if any run failed. Extra arguments go to pytest.
set -uo pipefail
cd "$(dirname "$0")/.."

PY="${PY:-.venv/bin/python}"
NBVAL=(--nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg)
LOGS="$(mktemp -d)"
trap 'rm -rf "$LOGS"' EXIT

runs=("serial-1" "serial-2" "serial-3" "parallel")
summary=()
failed=0
for run in "${runs[@]}"; do
    if [ "$run" = parallel ]; then mode=(-n auto --dist loadfile); else mode=(-p no:xdist); fi
    start=$SECONDS
    "$PY" -m pytest -q "${mode[@]}" "${NBVAL[@]}" notebooks/ "$@" >"$LOGS/$run.log" 2>&1
    status=$?
    last="$(grep -E '(passed|failed|error|no tests ran)' "$LOGS/$run.log" | tail -n 1)"
    line="$(printf '%-9s exit %d  %4ds  %s' "$run" "$status" "$((SECONDS - start))" "${last:-no pytest summary}")"
    summary+=("$line")
    echo "$line"
    if [ "$status" -ne 0 ]; then
        failed=$((failed + 1))
        echo "---- $run: failures ----"
        grep -E '^(FAILED|ERROR)' "$LOGS/$run.log" || tail -n 40 "$LOGS/$run.log"
    fi
done

echo "==== test-stability: ${#runs[@]} runs, $failed failed ===="
printf '%s\n' "${summary[@]}"
[ "$failed" -eq 0 ]
