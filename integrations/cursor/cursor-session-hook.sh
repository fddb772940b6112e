#!/bin/sh
# Cursor hooks for Loom, one script for every event (hooks.json names it for each):
#   sessionStart  adds what Loom knows for the workspace (`loom recall`: memories, the knowledge
#                 served to the agent, the brief of the project and branch) as additional_context
#   stop          hands the conversation's transcript to `loom ingest-transcript`, which appends
#                 the turns not yet in Loom (thread cursor-<conversation_id>; ids derived from
#                 each turn's position and text, so a second run adds nothing)
#   preCompact    the same, and saves the session brief auto/<project>/<branch> (trigger precompact)
#   sessionEnd    the same, the brief (trigger session_end), and the turns to deferred extraction
# A state file counts the turns already sent, so each run sends only the new ones; text a turn
# cannot hold (a NUL) is removed rather than refusing the whole conversation. Cursor's
# beforeSubmitPrompt can only allow or block a prompt, so nothing is added before a prompt.
#
# Fail-safe: whatever happens it answers a JSON object and exits 0 within LOOM_HOOK_BUDGET
# seconds (LOOM_RECALL_BUDGET for sessionStart); errors go to the log file. Settings come from
# the environment, or from the file ${XDG_CONFIG_HOME:-~/.config}/loom/env (NAME=value lines)
# for an editor started from a desktop.
set -u

env_file="${LOOM_ENV_FILE:-${XDG_CONFIG_HOME:-$HOME/.config}/loom/env}"
if [ -r "$env_file" ]; then
    set -a
    . "$env_file" 2>/dev/null
    set +a
fi
state_home="${XDG_STATE_HOME:-$HOME/.local/state}"
log="${LOOM_HOOK_LOG:-$state_home/loom/cursor/hooks.log}"
answer='{}'

finish() {
    printf '%s\n' "$answer"
    exit 0
}
note() {
    mkdir -p "$(dirname "$log")" 2>/dev/null
    printf '%s cursor: %s\n' "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$*" >>"$log" 2>/dev/null
}
# Run "$@" with its output in file $out, stopped after $1 seconds.
bounded() {
    seconds=$1
    shift
    mkdir -p "$(dirname "$log")" 2>/dev/null
    "$@" >"$out" 2>>"$log" </dev/null &
    pid=$!
    (sleep "$seconds" && kill "$pid") >/dev/null 2>&1 </dev/null &
    watchdog=$!
    wait "$pid"
    status=$?
    kill "$watchdog" 2>/dev/null
    return $status
}

# One JSON object on stdin; the fields this script needs, one a line.
fields=$(python3 -c '
import json, os, select, sys
buffer, decoder = b"", json.JSONDecoder()
while True:
    ready, _, _ = select.select([sys.stdin], [], [], 5)
    chunk = os.read(sys.stdin.fileno(), 65536) if ready else b""
    buffer += chunk
    try:
        hook = decoder.raw_decode(buffer.decode("utf-8", "replace").lstrip())[0]
        break
    except ValueError:
        if not chunk:
            hook = {}
            break
hook = hook if isinstance(hook, dict) else {}
roots = hook.get("workspace_roots") if isinstance(hook.get("workspace_roots"), list) else []
for value in (hook.get("hook_event_name"), hook.get("transcript_path"),
              hook.get("conversation_id") or hook.get("session_id"), roots[0] if roots else ""):
    print(str(value or "").replace("\n", " "))
' 2>/dev/null)
event=$(printf '%s\n' "$fields" | sed -n 1p)
transcript=$(printf '%s\n' "$fields" | sed -n 2p)
conversation=$(printf '%s\n' "$fields" | sed -n 3p)
root=$(printf '%s\n' "$fields" | sed -n 4p)

cli="${LOOM_CLI:-loom}"
if ! command -v "$cli" >/dev/null 2>&1; then
    note "the loom CLI ($cli) is not found; set LOOM_CLI to its path"
    finish
fi
url="${LOOM_BASE_URL:-${LOOM_URL:-http://127.0.0.1:7777}}"
project=""
branch=""
if [ -n "$root" ]; then
    project=$(basename "$root")
    branch=$(git -C "$root" symbolic-ref --short -q HEAD 2>/dev/null)
fi
out=$(mktemp 2>/dev/null || echo "${TMPDIR:-/tmp}/loom-hook.$$")
trap 'rm -f "$out"' EXIT
set -- --url "$url" --namespace "${LOOM_NAMESPACE:-default}" \
    --agent "${LOOM_AGENT:-cursor}" --user-id "${LOOM_USER_ID:--}"
if [ -n "${LOOM_ORG:-}" ]; then
    set -- "$@" --org "$LOOM_ORG"
fi

if [ "$event" = "sessionStart" ]; then
    tokens="${LOOM_RECALL_TOKENS:-1500}"
    if [ "$tokens" -ge 100 ] 2>/dev/null; then
        if bounded "${LOOM_RECALL_BUDGET:-4}" "$cli" recall "$@" --project "$project" \
            --branch "$branch" --tokens "$tokens" --timeout "${LOOM_HOOK_TIMEOUT:-5}"; then
            answer=$(python3 -c '
import json, sys
text = open(sys.argv[1], encoding="utf-8").read().strip()
print(json.dumps({"additional_context": text}) if text else "{}")
' "$out" 2>/dev/null || echo '{}')
        else
            note "loom recall did not answer in time (see the lines above)"
        fi
    fi
    finish
fi

case "${LOOM_CAPTURE_CONVERSATIONS:-true}" in
    0 | false | FALSE | False | no | off) finish ;;
esac
if [ -z "$transcript" ] || [ ! -r "$transcript" ]; then
    note "no readable transcript_path in the hook input; nothing sent"
    finish
fi
if [ -z "$conversation" ]; then
    conversation=$(basename "$transcript")
    conversation=${conversation%.*}
fi
# The turns sent so far, counted per conversation and destination (server, org, namespace).
where=$(printf '%s\n%s\n%s' "$url" "${LOOM_ORG:-}" "${LOOM_NAMESPACE:-default}" | cksum | cut -d' ' -f1)
sent="$state_home/loom/cursor/sent/$(printf '%s' "$conversation" | tr -c 'A-Za-z0-9._-' _)-$where"
set -- "$cli" ingest-transcript "$@" \
    --thread-id "cursor-$conversation" \
    --timeout "${LOOM_HOOK_TIMEOUT:-5}" \
    --sent-file "$sent" \
    --clean-text \
    --file "$transcript"
case "$event" in
    preCompact) set -- "$@" --brief precompact --project "$project" --branch "$branch" ;;
    sessionEnd) set -- "$@" --brief session_end --project "$project" --branch "$branch" --extract ;;
esac

bounded "${LOOM_HOOK_BUDGET:-20}" "$@"
status=$?
cat "$out" >>"$log" 2>/dev/null
if [ "$status" -ne 0 ]; then
    note "loom ingest-transcript ended with status $status (see the lines above)"
fi
finish
