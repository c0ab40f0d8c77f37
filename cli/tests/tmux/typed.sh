#!/usr/bin/env bash
# `uq ask examples/typed.json` in tmux, answered as a person would: keys sent with
# `send-keys`, the pane read with `capture-pane -p`. Each step waits (up to 15 s) for what the
# screen must show. Usage: typed.sh PATH/TO/uq [SCREENSHOT_FILE]
# Prints the answer JSON; exits non-zero with the pane on stderr when a step fails.
set -euo pipefail

uq=${1:?usage: typed.sh PATH/TO/uq [SCREENSHOT_FILE]}
shot=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
example="$here/../../../examples/typed.json"
work=$(mktemp -d)
sock="uq-typed-$$"
cleanup() {
    tmux -L "$sock" kill-server 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

pane() { tmux -L "$sock" capture-pane -p -t demo; }
keys() { tmux -L "$sock" send-keys -t demo "$@"; }
fail() {
    echo "typed.sh: $1; the pane shows:" >&2
    pane >&2 || true
    exit 1
}
# Waits until the pane shows $1 (a fixed string).
wait_for() {
    for _ in $(seq 1 300); do
        if pane | grep -qF -- "$1"; then return 0; fi
        sleep 0.05
    done
    fail "timed out waiting for: $1"
}
# The pane must not show $1.
absent() { if pane | grep -qF -- "$1"; then fail "the pane shows: $1"; fi; }

tmux -L "$sock" -f /dev/null new-session -d -x 100 -y 30 -s demo \
    "TERM=xterm-256color '$uq' ask '$example' > '$work/answer.json'; echo \$? > '$work/rc'; sleep 60"

wait_for "What should the release be called?"
keys 'v1' Enter
wait_for "question release value must be at least 3 characters long"
keys C-u 'v1.4 spring' Enter
wait_for "How many workers should the migration run?"
wait_for "› 4"                      # the default, pre-filled
keys BSpace '12' Enter
wait_for "question workers value must be at most 8"
keys C-u '6' Enter
wait_for "Tell the on-call channel when it starts?"
wait_for "› y"
keys Enter
wait_for "The deploy token for the registry?"
keys 's3cr3t-t0ken'
wait_for "› ••••••••••••"
absent "s3cr3t"
keys Enter
wait_for "How should the flaky retry be fixed?"
wait_for "+    Duration::from_millis(100 * 2u64.pow(attempt))"
wait_for "-    Duration::from_millis(100)"
absent "ATTEMPTS"                   # the other option's preview: not focused
if [ -n "$shot" ]; then pane | sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' > "$shot"; fi
keys Down
wait_for "+const ATTEMPTS: u32 = 2;"
keys Up Enter
wait_for "Review your answers"
wait_for "→ ••••••••"
absent "s3cr3t"
keys Enter
for _ in $(seq 1 300); do [ -s "$work/rc" ] && break; sleep 0.05; done
[ -s "$work/rc" ] || fail "uq did not exit"
[ "$(cat "$work/rc")" = 0 ] || fail "uq exited $(cat "$work/rc")"
expected='{"answers":[{"id":"release","selected":[],"value":"v1.4 spring"},{"id":"workers","selected":[],"value":6},{"id":"notify","selected":[],"value":true},{"id":"token","selected":[],"value":"s3cr3t-t0ken"},{"id":"fix","selected":["Back off (Recommended)"]}]}'
answer=$(cat "$work/answer.json")
[ "$answer" = "$expected" ] || fail "the answer is $answer"
echo "$answer"
