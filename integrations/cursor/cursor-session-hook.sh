#!/bin/sh
# Cursor `stop` hook: hands the conversation's transcript to `loom ingest-transcript`, which
# appends the turns not yet in Loom (thread cursor-<conversation_id>; ids derived from each
# turn's position and text, so a second run adds nothing). A state file counts the turns
# already sent, so each stop sends only the new ones; text a turn cannot hold (a NUL) is
# removed rather than refusing the whole conversation.
#
# Fail-safe: whatever happens it answers {} and exits 0 within LOOM_HOOK_BUDGET seconds;
# errors go to the log file. Settings come from the environment, or from the file
# ${XDG_CONFIG_HOME:-~/.config}/loom/env (NAME=value lines) for an editor started from a desktop.
set -u

env_file="${LOOM_ENV_FILE:-${XDG_CONFIG_HOME:-$HOME/.config}/loom/env}"
if [ -r "$env_file" ]; then
    set -a
    . "$env_file" 2>/dev/null
    set +a
fi
state_home="${XDG_STATE_HOME:-$HOME/.local/state}"
log="${LOOM_HOOK_LOG:-$state_home/loom/cursor/hooks.log}"
budget="${LOOM_HOOK_BUDGET:-20}"

finish() {
    printf '{}\n'
    exit 0
}
note() {
    mkdir -p "$(dirname "$log")" 2>/dev/null
    printf '%s cursor: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"$log" 2>/dev/null
}

input=$(cat)
case "${LOOM_CAPTURE_CONVERSATIONS:-true}" in
    0 | false | FALSE | False | no | off) finish ;;
esac

fields=$(printf '%s' "$input" | python3 -c '
import json, sys
try:
    hook = json.load(sys.stdin)
except ValueError:
    hook = {}
hook = hook if isinstance(hook, dict) else {}
print(hook.get("transcript_path") or "")
print(hook.get("conversation_id") or "")
' 2>/dev/null)
transcript=$(printf '%s\n' "$fields" | sed -n 1p)
conversation=$(printf '%s\n' "$fields" | sed -n 2p)
if [ -z "$transcript" ] || [ ! -r "$transcript" ]; then
    note "no readable transcript_path in the hook input; nothing sent"
    finish
fi
if [ -z "$conversation" ]; then
    conversation=$(basename "$transcript")
    conversation=${conversation%.*}
fi

cli="${LOOM_CLI:-loom}"
if ! command -v "$cli" >/dev/null 2>&1; then
    note "the loom CLI ($cli) is not found; set LOOM_CLI to its path"
    finish
fi
url="${LOOM_BASE_URL:-${LOOM_URL:-http://127.0.0.1:7777}}"
# The turns sent so far, counted per conversation and destination (server, org, namespace).
where=$(printf '%s\n%s\n%s' "$url" "${LOOM_ORG:-}" "${LOOM_NAMESPACE:-default}" | cksum | cut -d' ' -f1)
sent="$state_home/loom/cursor/sent/$(printf '%s' "$conversation" | tr -c 'A-Za-z0-9._-' _)-$where"
set -- "$cli" ingest-transcript \
    --url "$url" \
    --namespace "${LOOM_NAMESPACE:-default}" \
    --agent "${LOOM_AGENT:-cursor}" \
    --user-id "${LOOM_USER_ID:--}" \
    --thread-id "cursor-$conversation" \
    --timeout "${LOOM_HOOK_TIMEOUT:-5}" \
    --sent-file "$sent" \
    --clean-text \
    --file "$transcript"
if [ -n "${LOOM_ORG:-}" ]; then
    set -- "$@" --org "$LOOM_ORG"
fi

mkdir -p "$(dirname "$log")" 2>/dev/null
"$@" >>"$log" 2>&1 </dev/null &
pid=$!
(sleep "$budget" && kill "$pid") >/dev/null 2>&1 </dev/null &
watchdog=$!
wait "$pid"
status=$?
kill "$watchdog" 2>/dev/null
if [ "$status" -ne 0 ]; then
    note "loom ingest-transcript ended with status $status (see the lines above)"
fi
finish
