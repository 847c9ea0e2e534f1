# Sourced by the starters in scripts/testenv (a .bash file, so scripts/test.sh's loop over
# scripts/testenv/*.sh does not source it on its own).

# testenv_listen START: calls START PORT, a function that starts a server in the
# background listening on 127.0.0.1:PORT, until the server accepts connections there,
# and sets TESTENV_PORT; each started process joins TESTENV_PIDS. Ports come from
# 20000-31999, below Linux's default ephemeral range (32768-60999), where the outgoing
# connections of a load test or a build can hold a port that no one listens on; a
# server that exits (its port taken after all) is retried on another port, five
# times in all. Returns 1 if none started.
testenv_listen() {
  local start=$1 attempt i p pid
  for attempt in 1 2 3 4 5; do
    p=""
    for i in $(seq 1 20); do
      local c=$((20000 + RANDOM % 12000))
      if ! (exec 3<>"/dev/tcp/127.0.0.1/$c") 2>/dev/null; then p=$c; break; fi
    done
    [ -n "$p" ] || return 1
    "$start" "$p"
    pid=$!
    TESTENV_PIDS+=("$pid")
    for i in $(seq 1 100); do
      if ! kill -0 "$pid" 2>/dev/null; then break; fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
        TESTENV_PORT=$p
        return 0
      fi
      sleep 0.1
    done
    kill "$pid" 2>/dev/null || true
  done
  return 1
}
