# clawbridge's remote wrapper: a POSIX sh script run as `sh -c SCRIPT clawbridge-remote TOKEN DIR PROGRAM ARGS...`.
# The bridge writes the agent's environment on stdin first (NAME=VALUE lines; -NAME unsets;
# an empty line ends it), so no value is ever on a command line that ps shows.
# Then stdin is the agent's; when it ends (the bridge closed it, or the connection died) the agent
# gets the end too, GRACE seconds to exit, then TERM, then KILL; and whatever carries TOKEN in its
# environment (the agent's descendants, its tool commands) is killed when the agent is gone.
tok=$1 dir=$2
shift 2
grace=2
marker=${tok##*,}
exec 3<&0 </dev/null
while :; do
  IFS= read -r kv <&3 || { echo "clawbridge-remote: the environment block ended early" >&2; exit 125; }
  [ -n "$kv" ] || break
  name=${kv%%=*}
  case $kv in
    -*) name=${kv#-} ;;
    *=*) ;;
    *) echo "clawbridge-remote: a bad environment line" >&2; exit 125 ;;
  esac
  case $name in
    '' | [!A-Za-z_]* | *[!A-Za-z0-9_]*) echo "clawbridge-remote: a bad variable name" >&2; exit 125 ;;
  esac
  case $kv in
    -*) unset "$name" ;;
    *) export "$kv" ;;
  esac
done
if [ -n "$dir" ]; then
  cd "$dir" || { echo "clawbridge-remote: no directory $dir on this host" >&2; exit 125; }
fi
export CLAWBRIDGE_CONTAINMENT="$tok"
fifos=$(mktemp -d "${TMPDIR:-/tmp}/clawbridge-remote.XXXXXX") || exit 125
mkfifo "$fifos/in" || { rmdir "$fifos"; exit 125; }
sweep() {
  # Everything carrying the marker but this shell. A process being started as a round looks (forked
  # after its list of /proc was taken, or between fork and exec) shows up in a later round, so the
  # sweep ends only after two rounds in a row a moment apart found nothing (at most 20 rounds).
  unset CLAWBRIDGE_CONTAINMENT
  # The feeder below is a fork of this shell, so it lacks the marker: stopped by its pid (not yet
  # reaped, so not reused), before it could start another marked `sleep` after the rounds.
  [ -n "${feeder:-}" ] && kill -KILL "$feeder" 2>/dev/null
  quiet=0
  round=0
  while [ "$quiet" -lt 2 ] && [ "$round" -lt 20 ]; do
    round=$((round + 1))
    found=$(grep -lF -- "$marker" /proc/[0-9]*/environ 2>/dev/null)
    if [ -z "$found" ]; then
      quiet=$((quiet + 1))
      sleep 0.05 2>/dev/null || sleep 1
      continue
    fi
    quiet=0
    for file in $found; do
      pid=${file#/proc/}
      pid=${pid%/environ}
      [ "$pid" = "$$" ] || kill -KILL "$pid" 2>/dev/null
    done
  done
  rm -rf "$fifos"
}
"$@" <"$fifos/in" &
agent=$!
# Signalled itself (sshd's HUP, a TERM): the agent goes first, then what carries the mark. After a
# `wait` the agent's pid is reaped and may be reused, so only this path kills it by pid.
trap 'kill -KILL "$agent" 2>/dev/null; sweep; exit 143' HUP INT TERM
{
  # Opening the fifo returns once the agent holds its end too; then the name is no longer needed,
  # so nothing is left in TMPDIR even when this shell is killed without a chance to sweep.
  exec 4>"$fifos/in"
  rm -rf "$fifos"
  cat <&3 >&4
  exec 4>&-
  sleep "$grace"
  kill -TERM "$agent" 2>/dev/null
  sleep "$grace"
  kill -KILL "$agent" 2>/dev/null
} >/dev/null 2>&1 &
feeder=$!
exec 3<&-
wait "$agent"
status=$?
sweep
exit "$status"
