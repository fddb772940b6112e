#!/bin/sh
# Append an exported transcript to Loom through `loom ingest-transcript`.
#
#   integrations/generic/ingest.sh FILE [THREAD_ID]
#
# FILE holds '# user' / '# assistant' Markdown sections, a JSON array of {role, content}, or
# JSON Lines of the same. Without THREAD_ID the thread is derived from the file's content: pass
# one for a transcript that keeps growing, so each run adds only its new turns.
#
# Fail-safe, so another agent's hook can call it: it exits 0 within LOOM_HOOK_BUDGET seconds
# whatever happens, prints what the CLI said to stderr and keeps it in the log file.
set -u

env_file="${LOOM_ENV_FILE:-${XDG_CONFIG_HOME:-$HOME/.config}/loom/env}"
if [ -r "$env_file" ]; then
    set -a
    . "$env_file" 2>/dev/null
    set +a
fi
state_home="${XDG_STATE_HOME:-$HOME/.local/state}"
log="${LOOM_HOOK_LOG:-$state_home/loom/generic/ingest.log}"
budget="${LOOM_HOOK_BUDGET:-60}"
mkdir -p "$(dirname "$log")" 2>/dev/null

say() {
    printf '%s\n' "$*" >&2
    printf '%s ingest: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"$log" 2>/dev/null
}

if [ $# -lt 1 ] || [ ! -r "$1" ]; then
    say "usage: ingest.sh FILE [THREAD_ID] (FILE must be readable)"
    exit 0
fi
cli="${LOOM_CLI:-loom}"
if ! command -v "$cli" >/dev/null 2>&1; then
    say "the loom CLI ($cli) is not found; set LOOM_CLI to its path"
    exit 0
fi
file=$1
thread=${2:-${LOOM_THREAD_ID:-}}
set -- "$cli" ingest-transcript \
    --url "${LOOM_BASE_URL:-${LOOM_URL:-http://127.0.0.1:7777}}" \
    --namespace "${LOOM_NAMESPACE:-default}" \
    --agent "${LOOM_AGENT:--}" \
    --user-id "${LOOM_USER_ID:--}" \
    --timeout "${LOOM_HOOK_TIMEOUT:-10}" \
    --file "$file"
if [ -n "$thread" ]; then
    set -- "$@" --thread-id "$thread"
fi
if [ -n "${LOOM_ORG:-}" ]; then
    set -- "$@" --org "$LOOM_ORG"
fi

out=$(mktemp "${TMPDIR:-/tmp}/loom-ingest.XXXXXX") || exit 0
"$@" >"$out" 2>&1 </dev/null &
pid=$!
(sleep "$budget" && kill "$pid") >/dev/null 2>&1 </dev/null &
watchdog=$!
wait "$pid"
status=$?
kill "$watchdog" 2>/dev/null
while IFS= read -r line || [ -n "$line" ]; do
    say "$line"
done <"$out"
rm -f "$out"
if [ "$status" -ne 0 ]; then
    say "loom ingest-transcript ended with status $status; nothing more was sent"
fi
exit 0
